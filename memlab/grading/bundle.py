"""``memlab autograder``: a Gradescope autograder bundle (a zip) for one assignment.

Gradescope unpacks the zip into ``/autograder/source``, runs ``setup.sh`` once (as root) to build
the image, then, for every submission, ``/autograder/run_autograder``, which must write
``/autograder/results/results.json``.  The bundle holds:

* ``setup.sh``: makes sure of Python >= 3.10 (installs ``python3.11`` with apt on older images),
  of venv support (by really making one) and of Graphviz, makes a virtual environment in
  ``/opt/memlab-venv`` (readable by other users, so the kernel can run as the unprivileged grading
  user), installs ``requirements.txt`` (only what grading needs) and memlab's source, then makes the
  solution readable by root only;
* ``run_autograder``: ``python -m memlab.grading.bundle /autograder``, i.e. :func:`run`: grades the
  submitted notebook with the protections of :func:`memlab.grading.grade` (isolation as root, the
  solution chosen here, limits) and writes results.json, also when the submission is bad;
* ``requirements.txt`` (what grading needs, pinned to the lock's versions through
  ``constraints.txt``, a copy of ``requirements.lock``), ``memlab-src/`` (the package and a minimal ``pyproject.toml``),
  ``solution/<assignment>.ipynb`` and ``autograder.json`` (assignment, time limits, and the
  visibility of hidden-test results).

``MEMLAB_AUTOGRADER_ROOT`` (default ``/autograder``) and ``MEMLAB_PYTHON`` let a test run the bundle
in a fake layout under a temporary directory.
"""
from __future__ import annotations

import json
import os
import sys
import time
import zipfile
from pathlib import Path

from ..errors import GradingError
from .grade import grade
from .inputs import read_solution
from .results import Result

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, to build the autograder image (its Ubuntu images: pick 22.04).
# MEMLAB_VENV (default /opt/memlab-venv), MEMLAB_PYTHON3 (default: the system Python, by absolute
# path, e.g. /usr/bin/python3.11) and MEMLAB_APT (default apt-get) let a test run it in a throwaway
# directory.  The build fails, naming the interpreter to use, if the grading user cannot run it.
set -euo pipefail
SRC="$(cd "$(dirname "$0")" && pwd)"
VENV="${MEMLAB_VENV:-/opt/memlab-venv}"
APT="${MEMLAB_APT:-apt-get}"
UPDATED=""
apt_install() {
    [ -n "$UPDATED" ] || { "$APT" update -qq; UPDATED=1; }
    DEBIAN_FRONTEND=noninteractive "$APT" install -y -qq "$@" >/dev/null
}
# The graded code runs as an unprivileged user (tried here as nobody, who exists everywhere):
# an interpreter it cannot run (pyenv's under /root, say) would grade every submission 0.
as_grader() {
    if command -v runuser >/dev/null 2>&1; then (cd / && runuser -u nobody -- env HOME=/tmp "$@")
    else (cd / && su -s /bin/sh nobody -c "$(printf '%q ' env HOME=/tmp "$@")"); fi
}
system_python() {
    for p in /usr/bin/python3.13 /usr/bin/python3.12 /usr/bin/python3.11 /usr/bin/python3.10 \
             /usr/bin/python3; do
        if [ -x "$p" ] && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null \
                && as_grader "$p" -c pass >/dev/null 2>&1; then echo "$p"; return; fi
    done
}
refuse() {   # $1: the interpreter the grading user cannot run, $2: what failed
    local use
    use="$(system_python)"
    echo "memlab: the grading user (tried as nobody) cannot run $1: $2" >&2
    echo "memlab: the graded code runs as that user, so every submission would score 0." >&2
    if [ -n "$use" ]; then
        echo "memlab: use the system Python: MEMLAB_PYTHON3=$use bash setup.sh" >&2
    else
        echo "memlab: install a system Python >= 3.10 (apt-get install python3.11 python3.11-venv)" \
             "and run: MEMLAB_PYTHON3=/usr/bin/python3.11 bash setup.sh" >&2
    fi
    exit 1
}
PY="${MEMLAB_PYTHON3:-$(system_python)}"
PY="${PY:-/usr/bin/python3}"

# 1. Python >= 3.10 (Ubuntu 20.04 images have 3.8): else python3.11 from apt (deadsnakes if needed).
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; then
    echo "memlab: $("$PY" -V 2>&1 || echo "no $PY") is older than 3.10; installing python3.11" >&2
    if ! apt_install python3.11 python3.11-venv; then
        apt_install software-properties-common
        add-apt-repository -y ppa:deadsnakes/ppa >/dev/null
        "$APT" update -qq
        apt_install python3.11 python3.11-venv
    fi
    PY=/usr/bin/python3.11     # apt's, by its absolute path (not a python3.11 earlier on PATH)
fi
VER="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
WHY="$(as_grader "$PY" -c pass 2>&1)" || refuse "$PY" "${WHY:-it exits with an error}"

# 2. venv support, found by really making one (`python3 -m venv --help` can succeed without it).
PROBE="$(mktemp -d)"
if ! "$PY" -m venv "$PROBE/venv" >/dev/null 2>&1; then
    echo "memlab: $PY cannot make a virtual environment; installing python$VER-venv" >&2
    apt_install "python$VER-venv" || apt_install python3-venv
fi
rm -rf "$PROBE"

# 3. Graphviz's dot (exercises that draw graphs).
command -v dot >/dev/null 2>&1 || apt_install graphviz

# 4. Only what grading needs (requirements.txt: no JupyterLab, no CUDA toolkit), then memlab.
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -r "$SRC/requirements.txt"
"$VENV/bin/python" -m pip install -q --no-deps "$SRC/memlab-src"
chmod -R a+rX "$VENV"
"$VENV/bin/python" -c 'import memlab.grading, numpy, nbformat, jupyter_client, ipykernel'
if ! WHY="$(as_grader "$VENV/bin/python" -c 'import ipykernel, memlab.testing' 2>&1)"; then
    echo "memlab: the grading user (tried as nobody) cannot run $VENV/bin/python:" \
         "$(echo "${WHY:-it exits with an error}" | tail -n 1)" >&2
    echo "memlab: $PY itself runs as that user: make the venv where it can read it," \
         "MEMLAB_VENV=/opt/memlab-venv (the default)" >&2
    exit 1
fi

# 5. The solution is for root only: the graded code runs as another user and must not read it.
chown -R root:root "$SRC/solution"
chmod 700 "$SRC/solution"
chmod 600 "$SRC/solution/"*.ipynb
echo "memlab: autograder ready (Python $VER in $VENV, from $PY; the grading user can run it)"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission, as root; it writes $ROOT/results/results.json.
ROOT="${MEMLAB_AUTOGRADER_ROOT:-/autograder}"
PY="${MEMLAB_PYTHON:-/opt/memlab-venv/bin/python}"
exec "$PY" -m memlab.grading.bundle "$ROOT"
"""

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "memlab"
version = "{version}"
requires-python = ">=3.10"
dependencies = {deps}

[tool.setuptools.packages.find]
include = ["memlab*"]
"""


#: memlab's requirements that grading does not need (a lab, a CUDA toolkit for real GPUs)
NOT_FOR_GRADING = ("jupyterlab", "numba-cuda", "numba_cuda")


def _requirements() -> list[str]:
    """memlab's own (non-extra) requirements that grading needs, as installed (a minimal list if memlab
    is not installed): not JupyterLab, not numba-cuda (exercise 14 runs in Numba's own simulator)."""
    import re
    try:
        from importlib.metadata import requires
        reqs = [r for r in (requires("memlab") or []) if "extra ==" not in r]
    except Exception:  # noqa: BLE001  (not installed as a distribution)
        reqs = []
    name = re.compile(r"[A-Za-z0-9._-]+")
    reqs = [r for r in reqs if name.match(r.strip()).group().lower() not in NOT_FOR_GRADING]
    return reqs or ["numpy>=1.24", "scipy>=1.9", "matplotlib>=3.7", "graphviz>=0.20", "ipywidgets>=8.0",
                    "ipykernel>=6.0", "nbformat>=5.7", "jupyter_client>=8", "numba>=0.59", "tqdm>=4.64"]


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("memlab")
    except Exception:  # noqa: BLE001
        return "0.0.0"


def write_bundle(solution, output, *, timeout: float = 30.0, total_timeout: float = 600.0,
                 hidden_visibility: str = "visible", allow_unisolated: bool = False) -> Path:
    """Write the Gradescope autograder zip for *solution* to *output*; returns its path.

    *hidden_visibility* is Gradescope's ``visibility`` of what hidden tests decide (``after_published``
    keeps it from students until the grades are published).  With *allow_unisolated* the bundle
    grades even where it cannot isolate the graded code (else such a run gives score 0 and says
    why).  The solution is validated first
    (:class:`GradingError` if it is not a memlab solution notebook).
    """
    from .results import VISIBILITIES
    if hidden_visibility not in VISIBILITIES:
        raise GradingError(f"hidden_visibility must be one of {', '.join(VISIBILITIES)}, not {hidden_visibility!r}")
    sol_path = Path(solution)
    sol = read_solution(sol_path)
    if timeout <= 0 or total_timeout <= 0:
        raise GradingError(f"time limits must be positive, not {timeout!r} and {total_timeout!r}")
    out = Path(output)
    if out.is_dir():
        raise GradingError(f"{out} is a directory; name the zip to write, e.g. {out}/{sol.assignment}.zip")
    out.parent.mkdir(parents=True, exist_ok=True)
    package = Path(__file__).resolve().parents[1]
    reqs = _requirements()
    settings = {"assignment": sol.assignment, "timeout": timeout, "total_timeout": total_timeout,
                "hidden_visibility": hidden_visibility, "allow_unisolated": bool(allow_unisolated)}

    def add(zf: zipfile.ZipFile, name: str, data: bytes | str, mode: int = 0o644) -> None:
        info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, data)

    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    with zipfile.ZipFile(tmp, "w") as zf:
        add(zf, "setup.sh", SETUP_SH, 0o755)
        add(zf, "run_autograder", RUN_AUTOGRADER, 0o755)
        lock = package.parent / "requirements.lock"
        pins = lock.read_text(encoding="utf-8") if lock.is_file() else ""
        if pins:           # the exact versions memlab is tested with, for every package installed
            add(zf, "constraints.txt", pins)
        add(zf, "requirements.txt", ("-c constraints.txt\n" if pins else "") + "\n".join(reqs) + "\n")
        add(zf, "autograder.json", json.dumps(settings, indent=1) + "\n")
        add(zf, f"solution/{sol.assignment}.ipynb", sol_path.read_bytes(), 0o600)
        add(zf, "memlab-src/pyproject.toml", PYPROJECT.format(version=_version(), deps=json.dumps(reqs)))
        for f in sorted(package.rglob("*.py")):
            if "__pycache__" not in f.parts:
                add(zf, f"memlab-src/memlab/{f.relative_to(package).as_posix()}", f.read_bytes())
    os.replace(tmp, out)
    return out


def find_submission(folder: Path, assignment: str) -> Path:
    """The notebook to grade in Gradescope's submission folder (one ``.ipynb``, or ``<assignment>.ipynb``)."""
    found = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if not found:
        raise GradingError(f"no notebook (.ipynb) was submitted; submit {assignment}.ipynb")
    if len(found) == 1:
        return found[0]
    named = [p for p in found if p.name == f"{assignment}.ipynb"]
    if len(named) == 1:
        return named[0]
    raise GradingError(f"{len(found)} notebooks were submitted ({', '.join(p.name for p in found[:5])}); "
                       f"submit one, named {assignment}.ipynb")


def refused(solution, notebook, why: str, assignment: str = "", execution_time: float = 0.0) -> Result:
    """The result of a grade the bundle refused: every check the solution declares at 0, with
    *why* as its reason, so the test list is the one every graded submission gets."""
    from .results import TestResult, declared_checks
    sol = read_solution(Path(solution))
    result = Result.failed(notebook, why, sol.max_score, assignment or sol.assignment,
                           solution=Path(solution), execution_time=execution_time)
    result.tests = [TestResult(t.id, t.question, t.title, t.points, output=why, hidden=bool(t.hidden),
                               declared=declared_checks(t.source, t.hidden)) for t in sol.tests]
    return result


#: where the upload steps and the image's interpreter are explained (in the course repository)
DOCS = "docs/instructors.md, section \"Gradescope\", of the course repository"


def run(root="/autograder") -> Result | None:
    """Grade the submission under *root* (Gradescope's layout); always writes results/results.json,
    also when the bundle itself is broken (score 0, the reason as output).  ``MEMLAB_ALLOW_UNISOLATED=1``
    (or the bundle's ``allow_unisolated``) grades where the graded code cannot be isolated.
    Returns None when the submission could not be graded; raises :class:`SystemExit` (1) when the
    grade was refused or the bundle is broken, after writing results.json with every declared check
    at 0 and the reason: such a run must fail, not pass as a 0."""
    t0 = time.monotonic()
    root = Path(root)
    results = root / "results" / "results.json"
    visibility, max_score, assignment, graded, solution = "visible", 0.0, "", False, None
    try:
        results.parent.mkdir(parents=True, exist_ok=True)
        settings = json.loads((root / "source" / "autograder.json").read_text())
        assignment = settings["assignment"]
        visibility = settings.get("hidden_visibility", "visible")
        solution = root / "source" / "solution" / f"{assignment}.ipynb"
        max_score = read_solution(solution).max_score
        allow = bool(settings.get("allow_unisolated")) or os.environ.get("MEMLAB_ALLOW_UNISOLATED") == "1"
        if not allow:
            from .isolate import can_isolate, isolation_problem, kernel_python
            problem = isolation_problem()
            if problem:
                fix = (f"the image was built with an interpreter the grading user cannot run "
                       f"({kernel_python()}): rebuild the autograder with this memlab's setup.sh, "
                       f"which checks it and names the interpreter to use") if can_isolate() \
                    else "Gradescope runs run_autograder as root; run it as root"
                raise _Refused(f"refusing to grade: the graded code cannot be isolated here "
                               f"({problem.split('; ')[0]}); {fix} ({DOCS})")
        notebook = find_submission(root / "submission", assignment)
        graded = True                   # from here grade() writes results.json, whatever happens
        result = grade(notebook, solution=solution, json_path=results, timeout=float(settings["timeout"]),
                       total_timeout=float(settings["total_timeout"]), hidden_visibility=visibility,
                       allow_unisolated=allow)
    except Exception as e:  # noqa: BLE001  (whatever failed, Gradescope gets a results.json)
        ours = isinstance(e, _Refused) or not isinstance(e, GradingError) \
            or str(e).startswith(("refusing", "the grader failed"))
        why = str(e) if isinstance(e, GradingError) else f"the autograder failed: {type(e).__name__}: {e}"
        try:
            if ours and solution is not None and solution.is_file():
                refused(solution, root / "submission", why, assignment,
                        time.monotonic() - t0).write_json(results, visibility)
            elif not graded or ours:
                Result.failed(root / "submission", why, max_score, assignment,
                              execution_time=time.monotonic() - t0).write_json(results, visibility)
        except (OSError, ValueError, GradingError):
            pass
        print(f"memlab autograder: {why}", file=sys.stderr)
        if ours:
            raise SystemExit(1) from None
        return None
    print(result.table())
    return result


class _Refused(GradingError):
    """The bundle cannot grade here (the image, not the submission): the run must fail."""


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else "/autograder")

"""``memlab autograder``: the Gradescope bundle, unpacked into a fake /autograder and run end to end."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from memlab.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _layout(tmp_path: Path, zip_path: Path) -> Path:
    """Gradescope's layout under a path prefix: source/ unpacked, run_autograder copied beside it."""
    ag = tmp_path / "autograder"
    for d in ("source", "submission", "results"):
        (ag / d).mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(ag / "source")
        for info in zf.infolist():       # zipfile drops the modes; put them back as unzip would
            os.chmod(ag / "source" / info.filename, (info.external_attr >> 16) & 0o777 or 0o644)
    shutil.copy(ag / "source" / "run_autograder", ag / "run_autograder")
    os.chmod(ag / "source" / "solution", 0o700)      # what setup.sh does
    return ag


def _run(ag: Path) -> dict:
    env = dict(os.environ, MEMLAB_AUTOGRADER_ROOT=str(ag), MEMLAB_PYTHON=sys.executable,
               MEMLAB_ALLOW_UNISOLATED="1")
    r = subprocess.run(["bash", str(ag / "run_autograder")], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads((ag / "results" / "results.json").read_text())


def test_bundle_contents_and_end_to_end(tmp_path, capsys):
    out = tmp_path / "build" / "01-autograder.zip"
    assert main(["autograder", str(ROOT / "solutions" / "01_executor.ipynb"), "-o", str(out),
                 "--timeout", "20", "--total-timeout", "120"]) == 0
    names = set(zipfile.ZipFile(out).namelist())
    assert {"setup.sh", "run_autograder", "requirements.txt", "autograder.json",
            "solution/01_executor.ipynb", "memlab-src/pyproject.toml", "memlab-src/memlab/grading/grade.py"} <= names
    ag = _layout(tmp_path, out)
    assert subprocess.run(["bash", "-n", str(ag / "source" / "setup.sh")]).returncode == 0
    assert stat.S_IMODE(os.stat(ag / "source" / "solution" / "01_executor.ipynb").st_mode) == 0o600
    reqs = (ag / "source" / "requirements.txt").read_text()
    assert "numpy" in reqs and "ipykernel" in reqs and "pytest" not in reqs
    # no submission: a score-0 results.json that says why
    data = _run(ag)
    assert data["score"] == 0 and data["max_score"] == 13 and "no notebook" in data["output"]
    # the blank exercise: 0 / 13
    shutil.copy(ROOT / "exercises" / "01_executor.ipynb", ag / "submission" / "01_executor.ipynb")
    data = _run(ag)
    # one entry per check of the judge's tests (01 has 11), each failed
    assert (data["score"], data["max_score"]) == (0, 13) and len(data["tests"]) == 11
    # the solution's answers: full marks
    shutil.copy(ROOT / "solutions" / "01_executor.ipynb", ag / "submission" / "01_executor.ipynb")
    data = _run(ag)
    assert (data["score"], data["max_score"]) == (13, 13), data["output"]
    # a broken file: score 0 and the error
    (ag / "submission" / "01_executor.ipynb").write_text("{not json")
    data = _run(ag)
    assert data["score"] == 0 and "not a valid notebook" in data["output"]


def test_bundle_refuses_bad_input(tmp_path, capsys):
    assert main(["autograder", str(ROOT / "exercises" / "01_executor.ipynb"), "-o", str(tmp_path / "a.zip")]) == 2
    assert "not a solution" in capsys.readouterr().err
    assert main(["autograder", str(tmp_path / "nope.ipynb"), "-o", str(tmp_path / "a.zip")]) == 2
    assert not (tmp_path / "a.zip").exists()


def _index_reachable() -> bool:
    import urllib.request
    try:
        urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=10).close()
        return True
    except OSError:
        return False


@pytest.mark.extended          # it installs a venv from the package index: make test-extended
def test_setup_sh_builds_the_image_in_a_throwaway_root(tmp_path, request):
    """setup.sh as Gradescope runs it, in a throwaway directory: an image whose python3 is 3.8 gets
    python3.11 from apt (a fake apt-get that records what it is asked, here), then a fresh venv with
    only what grading needs, installed from the package index; then the bundle grades a submission
    with that venv, with hidden-test results hidden until published."""
    if os.geteuid() != 0 or shutil.which("python3.11") is None:
        pytest.skip("needs root (setup.sh gives the solution to root) and a python3.11 on PATH")
    if not _index_reachable():
        pytest.skip("the package index is not reachable")
    out = tmp_path / "ag.zip"
    assert main(["autograder", str(ROOT / "solutions" / "07_chain_dp.ipynb"), "-o", str(out),
                 "--hidden-visibility", "after_published"]) == 0
    ag = _layout(tmp_path, out)
    reqs = (ag / "source" / "requirements.txt").read_text().lower()
    assert "numpy" in reqs and "jupyterlab" not in reqs and "numba-cuda" not in reqs
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "apt.log"
    (fake / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    # python3 that is "3.8": it fails the version check, and nothing else is asked of it
    (fake / "python3").write_text('#!/bin/sh\nexit 1\n')
    for f in fake.iterdir():
        f.chmod(0o755)
    venv = Path(tempfile.mkdtemp(prefix="memlab-venv-")) / "venv"   # where the grading user reads it
    venv.parent.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(venv.parent, ignore_errors=True))
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", MEMLAB_VENV=str(venv),
               MEMLAB_APT=str(fake / "apt-get"), MEMLAB_PYTHON3=str(fake / "python3"))
    env.pop("PYTHONPATH", None)
    r = subprocess.run(["bash", str(ag / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "older than 3.10; installing python3.11" in r.stderr and "install -y -qq python3.11" in log.read_text()
    assert "autograder ready (Python 3.11" in r.stdout
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list"], capture_output=True,
                            text=True).stdout.lower()
    assert "nbformat" in listed and "jupyterlab " not in listed and "numba-cuda" not in listed
    assert stat.S_IMODE(os.stat(ag / "source" / "solution").st_mode) == 0o700
    shutil.copy(ROOT / "solutions" / "07_chain_dp.ipynb", ag / "submission" / "07_chain_dp.ipynb")
    env = dict(os.environ, MEMLAB_AUTOGRADER_ROOT=str(ag), MEMLAB_PYTHON=str(venv / "bin" / "python"),
               MEMLAB_ALLOW_UNISOLATED="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run(["bash", str(ag / "run_autograder")], env=env, capture_output=True, text=True, timeout=300)
    data = json.loads((ag / "results" / "results.json").read_text())
    assert (data["score"], data["max_score"]) == (10, 10), data["output"] + r.stderr
    vis = {t["name"]: t["visibility"] for t in data["tests"]}
    # every check of a judged tests cell is judge code (hidden), the visible example's included
    assert vis["q1_min_forwards: Fewest forward steps · l = 5, from 3 to 6 slots"] == "after_published"
    assert vis["q1_min_forwards: Fewest forward steps · long chains (up to 60 steps)"] == "after_published"
    assert "hidden tests are shown once the grades are published" in data["output"]

"""``memlab release DIR``: the course as students get it, without the solutions.

Instructors publish this copy, never the repository: the repository's ``solutions/`` holds every
answer and every hidden test.  The copy has the lessons, freshly generated exercises (blank, from
the solutions, never the working copy of ``exercises/``), the library, the tests and what they need
(``pyproject.toml``, ``requirements.lock``, ``scripts/``, ``docs/``), a README written for
students (``docs/students.md``), a Makefile without the instructors' targets, and a
``.gitattributes`` under which a lesson only run and saved counts as unchanged
(``scripts/nbclean.py``), so ``make update`` pulls course updates.  In it ``make lab`` and
``memlab check-work`` work, ``memlab grade`` needs ``--solution``, and ``make test`` passes: the
course tests that need ``solutions/`` skip, saying so (``tests/conftest.py``).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from ..errors import GradingError
from .assign import assign

#: what a student copy holds (files and directories of the course root)
INCLUDE = ("pyproject.toml", "requirements.lock", ".gitignore", "memlab", "lessons", "tests",
           "scripts", "docs")
#: the students' README, written as the copy's README.md
STUDENT_README = "docs/students.md"
#: Makefile targets that need what the copy leaves out (solutions/, bench/) or are the instructors'
INSTRUCTOR_TARGETS = ("exercises", "bench", "release", "lock")
GITATTRIBUTES = ("# A notebook only run and saved is unchanged to git (scripts/nbclean.py; make lab\n"
                 "# and make update install the filter), so course updates pull over it.\n"
                 "lessons/*.ipynb filter=memlab-notebook\n"
                 "exercises/*.ipynb filter=memlab-notebook\n")
#: never copied, wherever they are: the instructors' material and build leftovers
EXCLUDE = ("solutions", "__pycache__", ".ipynb_checkpoints", "*.egg-info", ".pytest_cache", ".hypothesis",
           "*.results.json")


def _tracked(root: Path) -> set[str] | None:
    """The files git tracks under *root* (None when *root* is not a git checkout): untracked files
    (a scratch notebook, a key) stay out of the release."""
    try:
        r = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    return {p for p in r.stdout.decode("utf-8", "replace").split("\0") if p}


def student_makefile(text: str) -> str:
    """The course Makefile less :data:`INSTRUCTOR_TARGETS`: each target's rule, recipe and the
    comment above it, and its name in ``.PHONY``."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        target = re.match(r"([\w.-]+):", lines[i])
        if target and target.group(1) in INSTRUCTOR_TARGETS:
            while out and out[-1].startswith("#"):
                out.pop()
            while i < len(lines) and lines[i].strip():
                i += 1
            continue
        out.append(lines[i])
        i += 1
    text = "\n".join(out) + "\n"
    phony = re.search(r"^\.PHONY:(.*?)(?<!\\)\n", text, re.S | re.M)
    if phony:
        names = [n for n in phony.group(1).replace("\\\n", " ").split()
                 if n not in INSTRUCTOR_TARGETS]
        text = text.replace(phony.group(0), ".PHONY: " + " ".join(names) + "\n")
    return re.sub(r"\n{3,}", "\n\n", text)


def release(dest, root=".") -> list[Path]:
    """Write the student copy of the course at *root* into *dest* (which must not exist, or be an
    empty directory); returns the files written.  Raises :class:`GradingError` if *dest* is inside
    the course, is not empty, or the course has no ``solutions/`` to make the exercises from."""
    root, dest = Path(root).resolve(), Path(dest).resolve()
    if dest == root or root in dest.parents:
        raise GradingError(f"{dest}: the release must be written outside the course ({root})")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise GradingError(f"{dest}: exists and is not an empty directory; name a new one")
    if not (root / "solutions").is_dir():
        raise GradingError(f"{root}: no solutions/ to make the exercises from; run memlab release from "
                           "the course repository")
    tracked = _tracked(root)
    ignore = shutil.ignore_patterns(*EXCLUDE)
    written: list[Path] = []

    def keep(rel: Path) -> bool:
        return tracked is None or rel.as_posix() in tracked

    dest.mkdir(parents=True, exist_ok=True)
    for name in INCLUDE:
        src = root / name
        if src.is_file() and keep(Path(name)):
            shutil.copy2(src, dest / name)
            written.append(dest / name)
        elif src.is_dir():
            for f in sorted(src.rglob("*")):
                rel = f.relative_to(root)
                if f.is_dir() or not keep(rel) or ignore(str(f.parent), [f.name]) or \
                        any(ignore(str(root), [part]) for part in rel.parts):
                    continue
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dest / rel)
                written.append(dest / rel)
    (dest / "README.md").write_bytes((root / STUDENT_README).read_bytes())
    (dest / "Makefile").write_text(student_makefile((root / "Makefile").read_text()))
    (dest / ".gitattributes").write_text(GITATTRIBUTES)
    written += [dest / "README.md", dest / "Makefile", dest / ".gitattributes"]
    (dest / STUDENT_README).unlink(missing_ok=True)
    # The exercises: generated now from the solutions, blank whatever the working copy holds.
    report = assign(root / "solutions", dest / "exercises", force=True)
    written += report.written + report.unchanged
    leaked = [p for p in dest.rglob("*") if p.name == "solutions" or p.suffix == ".solution"]
    if leaked:
        raise GradingError(f"the release at {dest} holds solutions: {', '.join(map(str, leaked))}")
    return written

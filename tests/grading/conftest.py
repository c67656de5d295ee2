"""Grading tests run hostile answers, some of them not isolated (with the rights of this process):
none of them may leave a file where this machine's own kernels look for code to run at start-up
(an IPython startup file would forge every later kernel, e.g. the lessons' nbval kernels)."""
from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest


def _startup_dirs() -> set[Path]:
    homes = {os.path.expanduser("~"), pwd.getpwuid(os.getuid()).pw_dir}
    dirs = {Path(h) / ".ipython" for h in homes}
    if os.environ.get("IPYTHONDIR"):
        dirs.add(Path(os.environ["IPYTHONDIR"]))
    return {d / "profile_default" / "startup" for d in dirs}


def _files() -> set[Path]:
    return {f for d in _startup_dirs() if d.is_dir() for f in d.iterdir()}


@pytest.fixture(autouse=True)
def no_startup_file_left_behind():
    before = _files()
    yield
    planted = _files() - before
    for f in planted:
        f.unlink(missing_ok=True)
    assert not planted, f"a graded notebook left start-up files for this machine's kernels: {sorted(planted)}"

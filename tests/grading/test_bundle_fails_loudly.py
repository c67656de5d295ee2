"""The Gradescope bundle cannot grade everyone 0 without failing: setup.sh fails the image build
when the grading user cannot run its interpreter, naming the one to use; a grade refused at run
time writes every declared check at 0 with the reason, and run_autograder exits non-zero."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from memlab.cli import main

ROOT = Path(__file__).resolve().parents[2]

needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0
                                or shutil.which("runuser") is None,
                                reason="needs root (the check runs the interpreter as nobody)")


def _unpacked(tmp_path: Path, solution: str | Path) -> Path:
    out = tmp_path / "ag.zip"
    assert main(["autograder", str(ROOT / "solutions" / solution), "-o", str(out)]) == 0
    ag = tmp_path / "autograder"
    for d in ("source", "submission", "results"):
        (ag / d).mkdir(parents=True)
    with zipfile.ZipFile(out) as zf:
        zf.extractall(ag / "source")
        for info in zf.infolist():
            os.chmod(ag / "source" / info.filename, (info.external_attr >> 16) & 0o777 or 0o644)
    shutil.copy(ag / "source" / "run_autograder", ag / "run_autograder")
    return ag


def _private_python(tmp_path: Path) -> Path:
    """An interpreter root can run and nobody cannot (in a directory only root may enter), as
    pyenv's under /root is."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    wrapper = private / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def _nobody_can_run(python: str) -> bool:
    return subprocess.run(["runuser", "-u", "nobody", "--", python, "-c", "pass"], cwd="/",
                          capture_output=True).returncode == 0


@needs_root
def test_setup_sh_fails_the_build_on_an_interpreter_the_grading_user_cannot_run(tmp_path):
    ag = _unpacked(tmp_path, "07_chain_dp.ipynb")
    wrapper = _private_python(tmp_path)
    assert not _nobody_can_run(str(wrapper))
    venv = tmp_path / "venv"
    env = dict(os.environ, MEMLAB_PYTHON3=str(wrapper), MEMLAB_VENV=str(venv),
               MEMLAB_APT="/bin/false")
    r = subprocess.run(["bash", str(ag / "source" / "setup.sh")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "autograder ready" not in r.stdout
    assert f"the grading user (tried as nobody) cannot run {wrapper}" in r.stderr, r.stderr
    assert "every submission would score 0" in r.stderr
    system = [p for p in ("/usr/bin/python3.13", "/usr/bin/python3.12", "/usr/bin/python3.11",
                          "/usr/bin/python3.10", "/usr/bin/python3")
              if os.access(p, os.X_OK) and _nobody_can_run(p) and subprocess.run(
                  [p, "-c", "import sys; sys.exit(sys.version_info < (3, 10))"]).returncode == 0]
    if system:   # the interpreter to use, by its absolute path
        assert f"use the system Python: MEMLAB_PYTHON3={system[0]} bash setup.sh" in r.stderr
    assert not venv.exists()      # it stopped before installing anything


def test_setup_sh_defaults_to_the_system_python_by_absolute_path(tmp_path):
    ag = _unpacked(tmp_path, "07_chain_dp.ipynb")
    text = (ag / "source" / "setup.sh").read_text()
    assert 'PY="${MEMLAB_PYTHON3:-$(system_python)}"' in text and "/usr/bin/python3.11" in text
    assert subprocess.run(["bash", "-n", str(ag / "source" / "setup.sh")]).returncode == 0


CHECKS = '''
assert longest(["a", "bcd"]) == "bcd"
### BEGIN HIDDEN TESTS
from memlab.testing import check


def test_longest(answers):
    with check(points=1, name="two words"):
        assert answers.longest(["a", "bcd"]) == "bcd"
    with check(points=2, name="one word"):
        assert answers.longest(["abc"]) == "abc"
### END HIDDEN TESTS
'''
COUNT = ("assert count([1]) == 1\n### BEGIN HIDDEN TESTS\ndef test_count(answers):\n"
         "    assert answers.count([1]) == 1\n### END HIDDEN TESTS\n")


def _solution(path: Path) -> Path:
    from memlab.grading.authoring import answer, notebook, write
    from memlab.grading.authoring import tests as tests_cell
    return write(notebook("words", [
        answer("q1", "def count(xs):\n    return len(xs)"),
        tests_cell("q1_tests", "q1", 2, COUNT),
        answer("q2", "def longest(xs):\n    return max(xs, key=len)"),
        tests_cell("q2_tests", "q2", 4, CHECKS, title="Longest")]), path)


@needs_root
def test_a_refused_grade_lists_every_declared_check_at_0_and_fails(tmp_path):
    sol = _solution(tmp_path / "words.ipynb")
    ag = _unpacked(tmp_path, sol)
    os.chmod(ag / "source" / "solution", 0o700)
    shutil.copy(sol, ag / "submission" / "words.ipynb")
    wrapper = _private_python(tmp_path)
    env = dict(os.environ, MEMLAB_AUTOGRADER_ROOT=str(ag), MEMLAB_PYTHON=sys.executable,
               MEMLAB_GRADING_PYTHON=str(wrapper), PYTHONPATH=str(ROOT))
    env.pop("MEMLAB_ALLOW_UNISOLATED", None)
    r = subprocess.run(["bash", str(ag / "run_autograder")], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode != 0, r.stdout + r.stderr
    data = json.loads((ag / "results" / "results.json").read_text())
    assert data["score"] == 0 and data["max_score"] == 6
    # the entries a graded submission gets: a tests cell, each check, the points no check holds
    assert [(t["name"], t["score"], t["max_score"]) for t in data["tests"]] == [
        ("q1_tests", 0, 2), ("q2: Longest · two words", 0, 1), ("q2: Longest · one word", 0, 2),
        ("q2: Longest · the rest of the tests", 0, 1)]
    assert all("refusing to grade" in t["output"] for t in data["tests"]), data["tests"][0]
    assert str(wrapper) in data["output"] and "setup.sh" in data["output"]
    assert 'docs/instructors.md, section "Gradescope"' in data["output"]
    assert "requirements.lock" not in data["output"]


def test_the_sections_the_bundle_names_exist():
    from memlab.grading import bundle
    assert bundle.DOCS.startswith('docs/instructors.md, section "Gradescope"')
    assert "\n## Gradescope\n" in (ROOT / "docs" / "instructors.md").read_text()
    # and setup.sh's and the refusal's own words name nothing that is not in the bundle or the docs
    for text in (bundle.SETUP_SH, bundle.RUN_AUTOGRADER):
        assert "requirements.lock" not in text and "README" not in text


@needs_root
def test_a_refused_grade_lists_what_a_graded_one_lists(tmp_path):
    sol = _solution(tmp_path / "words.ipynb")
    ag = _unpacked(tmp_path, sol)
    os.chmod(ag / "source" / "solution", 0o700)
    shutil.copy(sol, ag / "submission" / "words.ipynb")
    env = dict(os.environ, MEMLAB_AUTOGRADER_ROOT=str(ag), MEMLAB_PYTHON=sys.executable,
               PYTHONPATH=str(ROOT))
    names = []
    for extra in ({"MEMLAB_ALLOW_UNISOLATED": "1"},
                  {"MEMLAB_GRADING_PYTHON": str(_private_python(tmp_path))}):
        r = subprocess.run(["bash", str(ag / "run_autograder")], env={**env, **extra},
                           capture_output=True, text=True, timeout=300)
        data = json.loads((ag / "results" / "results.json").read_text())
        names.append([(t["name"], t["max_score"]) for t in data["tests"]])
        assert (r.returncode == 0) == ("MEMLAB_ALLOW_UNISOLATED" in extra), r.stderr
        assert data["score"] == (6 if r.returncode == 0 else 0), data["output"]
    assert names[0] == names[1]

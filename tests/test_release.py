"""The student copy (`memlab release`): a README for students, a Makefile with only the targets
that work there, and course updates that pull over lessons a student ran and saved."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memlab.grading.release import INSTRUCTOR_TARGETS, release

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not (ROOT / "solutions").is_dir() or shutil.which("git") is None,
                                reason="needs the course repository (solutions/) and git")
LESSON = "lessons/02_memory_pools.ipynb"


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                          cwd=cwd, capture_output=True, text=True, check=check, timeout=300)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """The release, as the instructors publish it: a git repository."""
    dest = tmp_path_factory.mktemp("release") / "course"
    release(dest, ROOT)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "the course")
    return dest


def test_the_readme_is_the_students(course):
    text = (course / "README.md").read_text()
    assert text == (ROOT / "docs" / "students.md").read_text()
    for words in ("make lab", "make test", "lessons/00_index.ipynb", "memlab check-work",
                  "make update", "make site"):
        assert words in text, words
    for internals in ("solutions", "Gradescope", "isolat", "cgroup", "results.json",
                      "--solution", "grade-all", "autograder"):
        assert internals not in text, internals
    assert not (course / "docs" / "students.md").exists()


def test_the_makefile_has_only_targets_that_work_there(course):
    text = (course / "Makefile").read_text()
    targets = re.findall(r"^([a-z][\w-]*):", text, re.M)
    assert {"lab", "test", "update", "clean"} <= set(targets)
    assert not set(INSTRUCTOR_TARGETS) & set(targets)
    assert not re.search(r"\b(bench|solutions)/", text)
    for target in targets:      # each one's recipe resolves (what it runs is in the copy)
        r = subprocess.run(["make", "-n", target], cwd=course, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, f"make -n {target}: {r.stderr}"


def _run_and_save_as_jupyterlab(path: Path) -> None:
    """What Run All + save in JupyterLab changes in a lesson whose code nobody edited: execution
    counts and timestamps, fresh widget model ids, an output that prints a time."""
    nb = json.loads(path.read_text())
    ids = {}
    for k, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = k + 40
        cell["metadata"]["execution"] = {"iopub.execute_input": f"2026-12-01T10:{k:02d}:00Z",
                                         "shell.execute_reply": f"2026-12-01T10:{k:02d}:01Z"}
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            if view:
                ids[view["model_id"]] = f"{k:032x}"
                view["model_id"] = ids[view["model_id"]]
            if out.get("output_type") == "execute_result":
                out["execution_count"] = k + 40
        cell["outputs"].append({"output_type": "stream", "name": "stdout",
                                "text": [f"took {k * 0.37:.2f} s\n"]})
    state = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json")
    if state:
        state["state"] = {ids.get(m, m): v for m, v in state["state"].items()}
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def _course_update(course: Path) -> str:
    """The instructors change the lesson's first Markdown cell and publish it."""
    path = course / LESSON
    nb = json.loads(path.read_text())
    first = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    first["source"] = first["source"] + ["\n", "\n", "A sentence the course added later."]
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    git(course, "commit", "-q", "-am", "lesson 02: a sentence more")
    return path.read_text()


def test_a_lesson_run_and_saved_takes_a_course_update(course, tmp_path):
    student, control = tmp_path / "student", tmp_path / "control"
    for clone in (student, control):
        git(tmp_path, "clone", "-q", str(course), clone.name)
        _run_and_save_as_jupyterlab(clone / LESSON)
    # what make lab and make update do first; the control clone never ran them
    for step in ("--install", "--refresh"):
        subprocess.run([sys.executable, "scripts/nbclean.py", step], cwd=student, check=True)
    assert git(student, "status", "--porcelain").stdout == ""     # only run: unchanged
    assert git(control, "status", "--porcelain").stdout.strip() == f"M {LESSON}"
    # a lesson whose code the student changed is changed
    mine = student / "lessons/03_static_planning.ipynb"
    nb = json.loads(mine.read_text())
    next(c for c in nb["cells"] if c["cell_type"] == "code")["source"].append("\nprint('mine')")
    mine.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert git(student, "status", "--porcelain").stdout.strip() == \
        "M lessons/03_static_planning.ipynb"
    _run_and_save_as_jupyterlab(student / LESSON)                # run and saved once more
    updated = _course_update(course)
    pulled = subprocess.run(["make", "update"], cwd=student, capture_output=True, text=True,
                            timeout=300)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert (student / LESSON).read_text() == updated
    assert "print('mine')" in mine.read_text()                  # the student's edit is kept
    blocked = git(control, "pull", "-q", "--no-rebase", check=False)
    assert blocked.returncode != 0 and "would be overwritten by merge" in blocked.stderr

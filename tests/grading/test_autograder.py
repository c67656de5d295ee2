"""``memlab autograder``: the Gradescope bundle, unpacked into a fake /autograder and run end to end."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

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
    env = dict(os.environ, MEMLAB_AUTOGRADER_ROOT=str(ag), MEMLAB_PYTHON=sys.executable)
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
    assert (data["score"], data["max_score"]) == (0, 13) and len(data["tests"]) == 4
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

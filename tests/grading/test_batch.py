"""memlab grade-all: a folder of submissions into a gradebook, in parallel workers."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_grade_all_writes_a_gradebook_and_each_results_json(tmp_path):
    subs = tmp_path / "submissions"
    for who, src in (("alice", "solutions"), ("bob", "exercises")):
        (subs / who).mkdir(parents=True)
        shutil.copyfile(ROOT / src / "07_chain_dp.ipynb", subs / who / "07_chain_dp.ipynb")
    (subs / "carol.ipynb").write_text("{not a notebook")
    (subs / ".ipynb_checkpoints").mkdir()
    (subs / ".ipynb_checkpoints" / "x.ipynb").write_text("{}")
    book = tmp_path / "out" / "grades.csv"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "memlab", "grade-all", str(subs), "--solution",
                        str(ROOT / "solutions" / "07_chain_dp.ipynb"), "--gradebook", str(book), "--jobs", "2",
                        "--allow-unisolated"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "graded 3 submission(s) (1 could not be graded)" in r.stdout and "3/3" in r.stderr  # the progress bar
    rows = list(csv.DictReader(book.open()))
    assert [row["submission"] for row in rows] == ["alice/07_chain_dp.ipynb", "bob/07_chain_dp.ipynb", "carol.ipynb"]
    assert [(row["q1_min_forwards"], row["q2_schedule"], row["total"], row["max_score"]) for row in rows] == \
        [("5", "5", "10", "10"), ("0", "0", "0", "10"), ("0", "0", "0", "10")]
    assert "not a valid notebook" in rows[2]["notes"]
    for who in ("alice", "bob"):
        data = json.loads((subs / who / "07_chain_dp.results.json").read_text())
        assert data["score"] == (10 if who == "alice" else 0) and data["max_score"] == 10
    assert json.loads((subs / "carol.results.json").read_text())["score"] == 0

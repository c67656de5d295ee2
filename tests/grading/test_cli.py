"""The `memlab` command: bad numbers refused by argparse, output paths checked before any work, a
grade that is never lost, and a line per question while grading."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab import cli
from memlab.grading.results import Result

NB = Path(__file__).resolve().parent / "notebooks"
TINY = NB / "tiny.ipynb"
RIGHT = NB / "student_edited.ipynb"      # right answers, edited cells


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, words", [
    (["grade", "x.ipynb", "--memory-limit", "-1"], "must be 0 (no limit) or at least 320 MB (the least in which the grader's guard and numpy start), got -1"),
    (["grade", "x.ipynb", "--memory-limit", "100"], "at least 320 MB (the least in which the grader's guard and numpy start), got 100"),
    (["grade", "x.ipynb", "--timeout", "-3"], "must be positive, got -3"),
    (["grade", "x.ipynb", "--total-timeout", "0"], "must be positive, got 0"),
    (["grade", "x.ipynb", "--timeout", "soon"], "expected a number of seconds, got 'soon'"),
    (["autograder", "s.ipynb", "-o", "a.zip", "--timeout", "-1"], "must be positive"),
    (["check", "--timeout", "-5"], "must be positive, got -5"),
])
def test_bad_numbers_are_refused(capsys, argv, words):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    assert words in capsys.readouterr().err


def test_output_paths_are_checked_before_any_work(capsys, tmp_path):
    afile = tmp_path / "a-file"
    afile.write_text("x")
    cases = [
        (["grade", RIGHT, "--solution", TINY, "--json", afile / "results.json"], "is a file, not a directory"),
        (["grade", RIGHT, "--solution", TINY, "--json", tmp_path], "is a directory; name the file"),
        (["autograder", TINY, "-o", tmp_path], "is a directory; name the file"),
        (["autograder", TINY, "-o", afile / "b.zip"], "is a file, not a directory"),
        (["assign", NB / "tiny.ipynb", "--out", afile], "is a file, not a directory"),
    ]
    for argv, words in cases:
        code, out, err = run(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert words in err and "Traceback" not in err, err
        assert out == ""                                    # nothing was graded or written
    assert afile.read_text() == "x" and not any(p.suffix == ".zip" for p in tmp_path.rglob("*"))


def test_missing_folders_are_created(capsys, tmp_path):
    code, out, _ = run(capsys, "autograder", TINY, "-o", tmp_path / "build" / "tiny.zip")
    assert code == 0 and (tmp_path / "build" / "tiny.zip").is_file()
    code, out, _ = run(capsys, "assign", TINY, "--out", tmp_path / "new" / "exercises")
    assert code == 0 and (tmp_path / "new" / "exercises" / "tiny.ipynb").is_file()


def test_grade_prints_a_line_per_question_and_writes_json(capsys, tmp_path):
    target = tmp_path / "out" / "results.json"
    code, out, _ = run(capsys, "grade", RIGHT, "--solution", TINY, "--json", target)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("q1_double: 2/2 passed") and lines[1].startswith("q2_hyp: 4/4 passed")
    assert json.loads(target.read_text())["score"] == 6
    code, out, _ = run(capsys, "grade", RIGHT, "--solution", TINY, "-q")
    assert code == 0 and not any(line.startswith("q1_double:") for line in out.splitlines())


def test_a_grade_is_never_lost_when_results_json_cannot_be_written(capsys, tmp_path, monkeypatch):
    def full_disk(self, path, *args):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(Result, "write_json", full_disk)
    code, out, err = run(capsys, "grade", RIGHT, "--solution", TINY, "--json", tmp_path / "r.json")
    assert code == 1
    assert "could not write" in err and "No space left on device" in err
    assert "total" in out                                    # the score table
    payload = out[out.index("{"):]
    assert json.loads(payload)["score"] == 6                 # and the results.json it should hold


def test_check_prints_a_line_per_question_unless_quiet(capsys, tmp_path):
    sols, exs = tmp_path / "solutions", tmp_path / "exercises"
    sols.mkdir()
    (sols / "tiny.ipynb").write_bytes(TINY.read_bytes())
    assert run(capsys, "assign", sols, "--out", exs)[0] == 0
    code, out, _ = run(capsys, "check", "--solutions", sols, "--exercises", exs)
    assert code == 0 and out.splitlines()[-1] == "memlab check: ok"
    assert f"{sols / 'tiny.ipynb'}: q1_double: 2/2 passed" in out
    assert f"{exs / 'tiny.ipynb'}: q2_hyp: 0/4 (Hypotenuse: a hidden test failed; Hypotenuse, hidden: a hidden test failed)" in out
    code, out, _ = run(capsys, "check", "--solutions", sols, "--exercises", exs, "-q")
    assert code == 0 and out.strip() == "memlab check: ok"

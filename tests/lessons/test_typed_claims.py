"""No lesson compares its printed numbers in typed Markdown.

A Markdown cell right under a code cell with numbers in its output, holding a comparative word,
is either turned into ``ml.viz.claim`` calls in the code cell (asserted at each execution) or
marked reviewed with the reason it is not a claim about those numbers (``scripts/review_claims.py``
lists and marks them; the mark holds a hash of the text, so an edit needs a new review).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("review_claims", ROOT / "scripts" / "review_claims.py")
review = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(review)
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem[:2])
def test_no_unreviewed_comparison_under_printed_numbers(path):
    left = review.unreviewed(path)
    assert not left, "\n".join(f"cell {i}: {s[0][:160]!r}" for i, s in left)


def test_the_rule_flags_a_typed_comparison_and_accepts_a_reviewed_one(tmp_path):
    import json
    code = {"cell_type": "code", "metadata": {}, "source": "print(peak)", "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "6\n"}]}
    typed = {"cell_type": "markdown", "metadata": {}, "source": "The peak is below the naive one."}
    plain = {"cell_type": "markdown", "metadata": {}, "source": "Now draw the graph."}
    nb = {"cells": [code, typed, code, plain], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    p = tmp_path / "x.ipynb"
    p.write_text(json.dumps(nb))
    assert [i for i, _ in review.unreviewed(p)] == [1]
    review.mark(p, 1, "a definition, not a measurement")
    assert review.unreviewed(p) == []
    nb = json.loads(p.read_text())
    nb["cells"][1]["source"] = "The peak is above the naive one."
    p.write_text(json.dumps(nb))
    assert [i for i, _ in review.unreviewed(p)] == [1]

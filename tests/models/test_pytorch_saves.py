"""Lesson 15's table: memlab's saved values (read off the gradient graph) against PyTorch's
derivatives.yaml (copied as text), op by op."""
import numpy as np

import memlab as ml
from memlab.models import pytorch_saves as ps


def test_every_op_saves_what_pytorch_saves():
    rows = ps.agreement()
    assert {r[0] for r in rows} == set(ps.PYTORCH)
    assert [r[0] for r in rows if r[1] != r[2]] == []


def test_the_formula_names_what_is_saved():
    for op, (kind, formula) in ps.PYTORCH.items():
        if kind == "output":
            assert "result" in formula, op
        if kind in ("input", "inputs"):
            assert "self" in formula, op


def test_saved_kind_sees_an_op_that_reads_its_output_and_input():
    x = ml.placeholder("x", (3,), np.float64)
    y = ml.exp(x)
    assert ps.saved_kind(y) == "output"
    assert ps.saved_kind(ml.mul(x, ml.placeholder("s", (3,), np.float64))) == "inputs"

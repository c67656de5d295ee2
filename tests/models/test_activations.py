"""Activation memory of a transformer layer from liveness against Korthikanti et al. 2022, and
full against selective recomputation (checkpoint.recompute_graph)."""
from __future__ import annotations

import numpy as np
import pytest

import memlab as ml
from memlab.models import activations as act
from memlab.models.gpt import transformer


@pytest.mark.parametrize("layers, s, h, a, b", [(2, 16, 32, 4, 2), (3, 6, 12, 3, 1),
                                                 (1, 5, 8, 1, 3)])
def test_liveness_gives_each_term_of_the_formula(layers, s, h, a, b):
    """16-bit values and 1-byte masks, dropout on: every layer holds exactly the paper's terms."""
    m = transformer(layers, s, h, a, b, 7, dropout=0.1, dtype=np.float16)
    for layer in range(layers):
        got = act.saved_terms(m, layer)
        assert got.pop("other") == 0
        assert got == act.formula_terms(s, b, h, a)
        assert sum(got.values()) == s * b * h * (34 + 5 * a * s / h)


def test_float32_doubles_all_but_the_masks_and_no_dropout_drops_them():
    s, h, a, b = 8, 16, 2, 2
    sbh, as2b = s * b * h, a * s * s * b
    got = act.saved_terms(transformer(1, s, h, a, b, 5, dropout=0.1, dtype=np.float32))
    masks = sbh + sbh + as2b
    assert sum(got.values()) == 2 * (34 * sbh + 5 * as2b - masks) + masks
    # without dropout: no masks, and P V reads the softmax output itself
    got = act.saved_terms(transformer(1, s, h, a, b, 5, dropout=0.0, dtype=np.float16))
    assert sum(got.values()) == 32 * sbh + 2 * as2b and got["softmax dropout mask"] == 0


def test_selective_drops_the_5as_over_h_term_and_full_keeps_the_input():
    L, s, h, a, b = 2, 12, 16, 4, 2
    m = transformer(L, s, h, a, b, 9, dropout=0.1, dtype=np.float16)
    t = act.recompute_policies(m)
    assert t["none"]["per_layer"] == act.formula_total(s, b, h, a)
    assert t["selective"]["per_layer"] == 34 * s * b * h
    assert t["full"]["per_layer"] == 2 * s * b * h                  # the layer's input only
    assert t["none"]["recomputed_flops"] == 0
    # selective recomputes Q K^T (2 b s^2 h) and five ops of a s^2 b elements, per layer
    assert t["selective"]["recomputed_flops"] == L * (2 * b * s * s * h + 5 * a * s * s * b)
    assert t["full"]["recomputed_flops"] > 5 * t["selective"]["recomputed_flops"]
    assert t["full"]["bytes"] < t["selective"]["bytes"] < t["none"]["bytes"]


@pytest.mark.parametrize("policy", ["selective", "full"])
def test_recomputed_training_step_is_identical(policy):
    """Dropped masks are drawn again from the same seed: loss and gradients equal bit for bit."""
    m = transformer(2, 4, 8, 2, 2, 6, dropout=0.3, dtype=np.float64)
    feed = {**m.init_params(0, std=0.3), **m.data(1)}
    outputs = m.training_outputs()
    rewritten = ml.checkpoint.recompute_graph(outputs, act.policy_keep(m, policy))
    assert ml.checkpoint.recomputed_nodes(rewritten)
    for want, got in zip(ml.Executor(outputs).run(feed), ml.Executor(rewritten).run(feed)):
        np.testing.assert_array_equal(got, want)


def test_bad_input():
    m = transformer(1, 4, 8, 2, 1, 5, dropout=0.1)
    with pytest.raises(ml.MemlabError, match="layer 1 is out of range"):
        act.saved_terms(m, 1)
    with pytest.raises(ml.MemlabError, match="policy"):
        act.policy_keep(m, "some")
    with pytest.raises(ml.MemlabError, match="seq"):
        act.formula_terms(0, 1, 8, 2)
    with pytest.raises(ml.MemlabError, match="Transformer"):
        act.recompute_policies(None)

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


#: the small GPT of lesson 15's recomputation section and bench/memory_model.py
SMALL_GPT = dict(layers=2, seq=128, hidden=256, heads=8, batch=2, vocab=1000, dropout=0.1)


def test_peaks_are_in_the_default_order_and_full_recomputation_lowers_them():
    """In the order the library runs (memory_order's default) full recomputation holds less at
    the peak than storing everything; the depth-first backward pass hid this (all equal)."""
    m = transformer(**SMALL_GPT)
    t = act.recompute_policies(m)
    assert t["full"]["peak"] < t["none"]["peak"]
    assert t["selective"]["peak"] < t["none"]["peak"]
    base = m.training_outputs()
    assert t["none"]["peak"] == ml.memory.order_peak(base, ml.memory.memory_order(base))
    full = ml.checkpoint.recompute_graph(base, act.policy_keep(m, "full"))
    assert t["full"]["peak"] == ml.memory.order_peak(full)


def _matmuls_of(outputs):
    return sorted(n.attrs["of"].name for n in ml.checkpoint.recomputed_nodes(outputs)
                  if n.attrs["of"].op.name == "matmul")


def test_replayed_masks_recompute_the_dropout_input():
    """mask="seed" draws a dropped mask again from its seed alone; mask="replay" reruns the
    dropout, so the matrix product before it is recomputed too: fc2's, which nothing else needs
    again (the projection before the attention dropout is recomputed either way: the residual
    sum it feeds is layernorm 2's input)."""
    L, s, b, h = 2, 6, 2, 8
    m = transformer(L, s, h, 2, b, 7, dropout=0.1)
    base = m.training_outputs()
    keep = act.policy_keep(m, "full")
    seed, replay = (ml.checkpoint.recompute_graph(base, keep, mask=k) for k in ("seed", "replay"))
    assert "l0.proj.mm" in _matmuls_of(seed)
    extra = set(_matmuls_of(replay)) - set(_matmuls_of(seed))
    assert extra == {f"l{l}.fc2.mm" for l in range(L)}
    # each replayed mask's copy reads the dropout's input (recomputed), besides its seed
    masks = [n for n in ml.checkpoint.recomputed_nodes(replay)
             if n.attrs["of"].op.name == "dropout_mask"]
    assert masks and all(n.inputs[1].op.name == "recompute" for n in masks)
    t = {k: act.recompute_policies(m, ("full",), mask=k)["full"] for k in ("seed", "replay")}
    # fc2: a (s b, 4h) x (4h, h) product, 2 n k m FLOPs, and its bias sum, s b h, per layer
    assert t["replay"]["recomputed_flops"] - t["seed"]["recomputed_flops"] == \
        L * (2 * s * b * 4 * h * h + s * b * h)
    sel = {k: act.recompute_policies(m, ("selective",), mask=k)["selective"]["recomputed_flops"]
           for k in ("seed", "replay")}
    assert sel["seed"] == sel["replay"]     # the attention dropout's input is recomputed anyway


@pytest.mark.parametrize("mask", ["seed", "replay"])
def test_both_mask_modes_give_identical_values(mask):
    m = transformer(2, 4, 8, 2, 2, 6, dropout=0.3, dtype=np.float64)
    feed = {**m.init_params(0, std=0.3), **m.data(1)}
    outputs = m.training_outputs()
    rewritten = ml.checkpoint.recompute_graph(outputs, act.policy_keep(m, "full"), mask=mask)
    plan = ml.plan_offsets(rewritten)
    ml.memory.check_plan(plan)
    for want, got in zip(ml.Executor(outputs).run(feed), ml.Executor(plan=plan).run(feed)):
        np.testing.assert_array_equal(got, want)


def test_outside_layers_are_what_the_whole_model_holds_beyond_its_blocks():
    from memlab.models import activations as act, gpt
    g = gpt.gpt2("small", seq=64)
    alive, _ = act.boundary_values(g.training_outputs())
    outside = act.outside_layers(g, alive)
    names = [n.name for n in outside]
    assert names[0] == "logits" and "embed_drop.mask" in names and "loss" not in names
    in_layers = sum(sum(act.saved_terms(g, l).values()) for l in range(g.layers))
    assert in_layers + sum(n.nbytes for n in outside) == sum(
        n.nbytes for n in alive if n is not g.loss)


def test_outside_layers_does_not_follow_set_order():
    """Equal sizes (the last block's output and the last layernorm's, 3 MiB each at s = 2048)
    come in the order they were made, whatever order the set of live values iterates in."""
    from memlab.models import activations as act, gpt
    g = gpt.gpt2("small", seq=64)
    alive, _ = act.boundary_values(g.training_outputs())
    want = [n.name for n in act.outside_layers(g, alive)]
    assert want.index("l11.out") < want.index("lnf")
    for seed in range(5):
        shuffled = list(alive)
        np.random.default_rng(seed).shuffle(shuffled)

        class Reordered(set):
            def __iter__(self, items=tuple(shuffled)):
                return iter(items)

        assert [n.name for n in act.outside_layers(g, Reordered(shuffled))] == want

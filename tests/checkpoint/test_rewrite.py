"""Recomputation on op graphs: gradients equal bit for bit, planned bytes fall as the lecture says."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import memlab as ml
from memlab import checkpoint as ck
from memlab.checkpoint.rewrite import RECOMPUTE, forward_nodes, recomputed_nodes
from memlab.models import mlp, training_outputs


def _training(depth, batch=16, width=16, act="sigmoid", wrt="data"):
    m = mlp(depth=depth, batch=batch, n_in=width, hidden=width, n_out=5, act=act)
    xs = [m["x"]] if wrt == "data" else m["params"]
    return [m["loss"], *ml.gradients(m["loss"], xs)], m["make_feed"](depth)


def _branched(blocks, seed=0):
    """A small residual net: h = h + relu(h @ W1) @ W2 per block, then a softmax loss."""
    rng = np.random.default_rng(seed)
    x = ml.placeholder("x", (8, 6))
    labels = ml.placeholder("labels", (8,), np.int32)
    h, params, feed = x, [], {}
    for b in range(blocks):
        w1, w2 = ml.placeholder(f"W{b}a", (6, 6)), ml.placeholder(f"W{b}b", (6, 6))
        params += [w1, w2]
        h = h + ml.matmul(ml.relu(ml.matmul(h, w1)), w2)
        feed[w1] = (rng.standard_normal((6, 6)) / 3).astype(np.float32)
        feed[w2] = (rng.standard_normal((6, 6)) / 3).astype(np.float32)
    loss = ml.softmax_cross_entropy(h, labels)
    feed[x] = rng.standard_normal((8, 6)).astype(np.float32)
    feed[labels] = rng.integers(0, 6, 8).astype(np.int32)
    return [loss, *ml.gradients(loss, [x, *params])], feed


def _same(a, b):
    return all(np.array_equal(u, v) for u, v in zip(a, b))


@pytest.mark.parametrize("build", [lambda: _training(6), lambda: _training(9, act="relu", wrt="params"),
                                   lambda: _branched(4)])
def test_every_strategy_gives_the_same_gradients_bit_for_bit(build):
    outs, feed = build()
    want = ml.Executor(outs).run(feed)
    cands = [n for n in forward_nodes(outs) if n is not outs[0]]
    for keep in (set(), ck.sqrt_checkpoints(outs), ck.memonger(outs), ck.every_k(outs, 2),
                 set(cands[::3])):
        new = ck.recompute_graph(outs, keep)
        assert _same(want, ml.Executor(new).run(feed))
        for plan in (ml.plan_memory(new), ml.plan_offsets(new)):
            ml.check_plan(plan)
            assert _same(want, ml.Executor(new, plan=plan).run(feed))


@settings(max_examples=15)
@given(seed=st.integers(0, 10**6), blocks=st.integers(1, 4))
def test_random_kept_sets_on_branched_nets(seed, blocks):
    outs, feed = _branched(blocks, seed)
    cands = [n for n in forward_nodes(outs) if n is not outs[0]]
    rng = np.random.default_rng(seed)
    keep = {n for n in cands if rng.random() < 0.4}
    new = ck.recompute_graph(outs, keep)
    assert _same(ml.Executor(outs).run(feed), ml.Executor(new).run(feed))


def test_recomputation_waits_for_the_backward_pass():
    """Each group of copies runs after the gradient entering it: in the planner's order every copy
    comes after the last forward node (the lecture's dashed control edges, p.32)."""
    outs, _ = _training(12)
    new = ck.recompute_graph(outs, ck.sqrt_checkpoints(outs))
    order = ml.topo_order(new)
    pos = {n: i for i, n in enumerate(order)}
    last_forward = max(pos[n] for n in forward_nodes(new))
    copies = recomputed_nodes(new)
    assert copies and min(pos[c] for c in copies) > last_forward


@pytest.mark.parametrize("depth", [64, 256])
def test_planned_bytes_fall_like_sqrt_n(depth):
    outs, _ = _training(depth, batch=32, width=32)
    base = ml.plan_offsets(outs).total_bytes
    value = 32 * 32 * 4
    for keep in (ck.sqrt_checkpoints(outs), ck.memonger(outs)):
        planned = ml.plan_offsets(ck.recompute_graph(outs, keep)).total_bytes
        assert planned < base / 3
        # O(sqrt N) values: within a constant of 2 sqrt(N) values (N forward nodes)
        n = len(forward_nodes(outs))
        assert planned <= 4 * 2 * math.sqrt(n) * value
    # about one extra forward pass
    new = ck.recompute_graph(outs, ck.sqrt_checkpoints(outs))
    assert len(recomputed_nodes(new)) <= len(forward_nodes(outs))


def test_bad_input_is_a_clear_error():
    outs, _ = _training(3)
    stranger = ml.placeholder("stranger", (2,)) * 2
    with pytest.raises(ml.PlanError, match="stranger|mul"):
        ck.recompute_graph(outs, {stranger})
    with pytest.raises(ml.PlanError, match="not a Node"):
        ck.recompute_graph(outs, {"x"})
    with pytest.raises(ml.BudgetError, match="the minimum it found is"):
        ck.memonger(outs, budget=10)
    with pytest.raises(ml.GraphError, match="recompute.* has no gradient"):
        new = ck.recompute_graph(outs, set())
        copy = recomputed_nodes(new)[0]
        ml.gradients(ml.sum(copy), [outs[0]])
    assert all(c.op is RECOMPUTE for c in recomputed_nodes(ck.recompute_graph(outs, set())))


@pytest.mark.parametrize("build", [lambda: _training(20), lambda: _branched(5)])
def test_recursion_gives_the_same_gradients(build):
    outs, feed = build()
    want = ml.Executor(outs).run(feed)
    for levels in (1, 2, 3):
        new = ck.recompute_graph(outs, ck.recursive_checkpoints(outs, levels))
        plan = ml.plan_offsets(new)
        ml.check_plan(plan)
        assert _same(want, ml.Executor(new, plan=plan).run(feed))


def test_recursion_trades_more_compute_for_less_memory():
    """p.34: each further level holds less and recomputes more."""
    outs, _ = _training(128, batch=32, width=32)
    rows = []
    for levels in (1, 2, 3):
        new = ck.recompute_graph(outs, ck.recursive_checkpoints(outs, levels))
        rows.append((ml.plan_offsets(new).total_bytes, len(recomputed_nodes(new))))
    assert rows[0][0] > rows[1][0] > rows[2][0]
    assert rows[0][1] < rows[1][1] < rows[2][1]
    with pytest.raises(ml.PlanError, match="levels"):
        ck.recursive_checkpoints(outs, 0)


def _structure(outputs):
    """The graph as positions: each node's op and the positions of its inputs, in depth-first
    order (names and ids left out: they depend on what was built before)."""
    nodes = ml.topo_order(outputs)
    pos = {n: i for i, n in enumerate(nodes)}
    return [(n.op.name, tuple(pos[x] for x in n.inputs)) for n in nodes]


def test_the_rewrite_does_not_depend_on_what_was_built_before():
    """A set of nodes iterates in the order of their addresses: the rewrite (its control inputs,
    hence the planned bytes) once changed with the graphs built before it. Here the same step is
    built after different amounts of other work, and rewritten with the same kept set."""
    from memlab.models import seq2seq

    seen = []
    junk = []
    for extra in (0, 1, 3, 7, 12):
        junk += [mlp(depth=4, batch=8, n_in=8, hidden=8, n_out=4) for _ in range(extra)]
        s2s = seq2seq(4, 4, hidden=8, batch=4)
        outs = [s2s.loss, *s2s.grads()]
        cands = ck.forward_nodes_of(outs)
        keep = set(cands[::4])
        new = ck.recompute_graph(outs, keep)
        seen.append((_structure(new), ml.plan_offsets(new).total_bytes))
    assert all(s == seen[0] for s in seen[1:])


def test_a_second_gradient_of_the_same_forward_graph_stays_out_of_the_rewrite():
    """Differentiating the forward graph again makes new adjoints of its nodes; rewriting the
    first training step waits only for the adjoints of that step, so no node of the second
    gradient graph enters it, and the rewrite equals the one made before the second gradient."""
    m = mlp(depth=6, batch=8, n_in=8, hidden=8, n_out=4)
    loss, params = m["loss"], m["params"]
    first = [loss, *ml.gradients(loss, params)]
    keep = set(ck.forward_nodes_of(first)[::3])
    before = _structure(ck.recompute_graph(first, keep))
    second = ml.gradients(loss, params)               # the same forward graph, differentiated again
    new = ck.recompute_graph(first, keep)
    foreign = set(ml.topo_order(second)) - set(ml.topo_order(first))
    assert not foreign & set(ml.topo_order(new))
    assert _structure(new) == before


def test_memonger_remembers_its_trials_for_the_same_graph_only(monkeypatch):
    """A budget search asks memonger again and again on one graph: the trials are planned once;
    the answers equal a fresh search's, and a graph changed in place is searched again."""
    from memlab.checkpoint import graph_strategies as gs

    m = mlp(depth=12, batch=8, n_in=4, hidden=8, n_out=3)
    outs = training_outputs(m)
    monkeypatch.setattr(gs, "_TRIALS", [])
    planned = []
    real = gs.plan_offsets
    monkeypatch.setattr(gs, "plan_offsets",
                        lambda g, *a, **k: planned.append(1) or real(g, *a, **k))
    best = ck.memonger(outs)
    n = len(planned)
    bytes_of = {b: keep for b, _, keep in gs._TRIALS[-1][2]}
    for budget in sorted(bytes_of):
        assert ck.memonger(outs, budget=budget) is not bytes_of[budget]   # a copy each time
    assert ck.memonger(outs) == best and len(planned) == n
    gs._TRIALS.clear()
    assert ck.memonger(outs) == best and len(planned) == 2 * n        # a fresh search agrees
    ml.graph.set_workspace(outs, {"matmul": 10**6})
    ck.memonger(outs)
    assert len(planned) > 2 * n

"""Scopes, the embedding and copy ops, fused gradient accumulation and priority orders."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import memlab as ml
from memlab.testing import central_difference, check_gradient_fn


def test_scope_records_module_step_and_matching_roles():
    x = ml.placeholder("x", (2, 3))
    outs = []
    for t in range(3):
        with ml.scope("dec", t):
            outs.append(ml.tanh(ml.sigmoid(x) * 2.0))
    roles = [[n.scope.role for n in ml.topo_order(o) if n.scope] for o in outs]
    assert roles[0] == roles[1] == roles[2]
    assert {o.scope.replica for o in outs} == {("dec", 0), ("dec", 1), ("dec", 2)}
    assert x.scope is None


def test_gradient_nodes_inherit_the_scope_of_what_they_differentiate():
    x = ml.placeholder("x", (4,))
    with ml.scope("enc", 0):
        y = ml.sigmoid(x)
    with ml.scope("gen", 1):
        loss = ml.sum(y * y)
    (gx,) = ml.gradients(loss, [x])
    back = [n for n in ml.topo_order(gx) if n.scope and n.scope.backward]
    assert {n.scope.module for n in back} == {"enc", "gen"}
    assert all(n.scope.step in (0, 1) for n in back)


@pytest.mark.parametrize("bad", [("", 0), ("m", -1), ("m", 1.5)])
def test_scope_rejects_bad_names(bad):
    with pytest.raises(ml.GraphError, match="scope"):
        with ml.scope(*bad):
            pass


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(2, 6), n=st.integers(1, 7), d=st.integers(1, 4), seed=st.integers(0, 99))
def test_embedding_matches_numpy_and_its_gradient_scatters(rows, n, d, seed):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((rows, d))
    ids = rng.integers(0, rows, n).astype(np.int32)
    t, i = ml.placeholder("T", (rows, d), np.float64), ml.placeholder("ids", (n,), np.int32)
    g = ml.placeholder("g", (n, d), np.float64)
    e = ml.graph.embedding(t, i)
    (gt,) = ml.gradients(e, [t], grad_y=g)
    up = rng.standard_normal((n, d))
    got_e, got_g = ml.Executor([e, gt]).run({t: table, i: ids, g: up})
    np.testing.assert_allclose(got_e, table[ids])

    def f(arrays):
        return float(np.sum(up * arrays[0][ids]))
    np.testing.assert_allclose(got_g, central_difference(f, [table], 0), atol=1e-6)


def test_embedding_gradient_of_the_gradient():
    ids = ml.constant(np.array([0, 2, 2], np.int32))
    check_gradient_fn(lambda node, grad: node.op.gradient(node, grad)[:1],
                      lambda g: ml.graph.embedding_grad(g, ids, 3), [(3, 2)])


def test_embedding_bad_input():
    t = ml.placeholder("T", (3, 2))
    with pytest.raises(ml.ShapeError, match="integer ids"):
        ml.graph.embedding(t, ml.placeholder("f", (4,)))
    i = ml.placeholder("ids", (2,), np.int32)
    with pytest.raises(ml.FeedError, match="id 5 is outside"):
        ml.Executor(ml.graph.embedding(t, i)).run({t: np.ones((3, 2), np.float32),
                                            i: np.array([0, 5], np.int32)})


def test_copy_is_a_new_value_with_identity_gradient():
    x = ml.placeholder("x", (3,))
    y = ml.graph.copy(x)
    (gx,) = ml.gradients(ml.sum(y * y), [x])
    v = np.array([1.0, -2.0, 3.0], np.float32)
    out, g = ml.Executor([y, gx]).run({x: v})
    assert y is not x and y.op.name == "copy"
    np.testing.assert_allclose(out, v)
    np.testing.assert_allclose(g, 2 * v)


def _shared_weight_graph(steps):
    """A weight, an embedding table and a bias used at every step (one contribution per step)."""
    w = ml.placeholder("W", (3, 3), np.float64)
    table = ml.placeholder("E", (5, 3), np.float64)
    b = ml.placeholder("b", (3,), np.float64)
    ids = [ml.placeholder(f"i{t}", (2,), np.int32) for t in range(steps)]
    h, total = ml.placeholder("h0", (2, 3), np.float64), None
    for t in range(steps):
        h = ml.tanh(ml.matmul(h, w) + ml.graph.embedding(table, ids[t]) + b)
        total = ml.sum(h) if total is None else total + ml.sum(h * h)
    return total, [w, table, b, h], ids


@pytest.mark.parametrize("steps", [1, 2, 5])
def test_fused_accumulation_equals_plain_sums(steps):
    rng = np.random.default_rng(steps)
    loss, (w, table, b, h0), ids = _shared_weight_graph(steps)
    h0 = next(n for n in ml.topo_order(loss) if n.name == "h0")
    params = [w, table, b]
    plain = ml.gradients(loss, params)
    fused = ml.gradients(loss, params, addto=True)
    feed = {w: rng.standard_normal((3, 3)) * 0.5, table: rng.standard_normal((5, 3)),
            b: rng.standard_normal(3), h0: rng.standard_normal((2, 3))}
    feed.update({i: rng.integers(0, 5, 2).astype(np.int32) for i in ids})
    want = ml.Executor(plain).run(feed)
    got = ml.Executor(fused).run(feed)
    for a, c in zip(got, want):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
    n_acc = sum(n.op.name == "accumulate" for n in ml.topo_order(fused))
    assert n_acc == 3 * (steps - 1)     # one per extra contribution of each parameter


def test_fused_accumulation_runs_in_place_in_a_plan():
    loss, (w, table, b, _), ids = _shared_weight_graph(6)
    grads = ml.gradients(loss, [w, table, b], addto=True)
    plan = ml.plan_memory(grads)
    acc = [n for n in plan.order if n.op.name == "accumulate"]
    assert acc and all(plan.storage[n] == plan.storage[n.inputs[0]] for n in acc)


def test_priority_order_is_topological_and_follows_the_key():
    a = ml.placeholder("a", (2,))
    xs = [ml.exp(a, name=f"x{k}") for k in range(4)]
    ys = [ml.neg(x, name=f"y{k}") for k, x in enumerate(xs)]
    out = ys[0] + ys[1] + ys[2] + ys[3]
    key = {n: -int(n.name[1]) for n in xs + ys}
    order = ml.priority_order(out, lambda n: (n.name[:1] == "y", key.get(n, 0)))
    ml.graph.check_order(out, order)
    names = [n.name for n in order if n.name[:1] in "xy"]
    assert names == ["x3", "x2", "x1", "x0", "y3", "y2", "y1", "y0"]

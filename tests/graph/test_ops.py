"""Every op: forward against plain numpy, gradient against central finite differences (float64)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import memlab as ml
from memlab.testing import central_difference
from strategies import op_gradient_matches_differences, op_matches_numpy

F64 = np.float64


def _run(outputs, feed):
    return ml.Executor(outputs).run(feed)


def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_pool(x, w):
    r = w // 2
    p = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(r, r)])
    return np.stack([p[..., i:i + x.shape[-1]] for i in range(w)]).mean(0)


def _np_conv(x, w):
    r = len(w) // 2
    p = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(r, r)])
    return sum(w[j] * p[..., j:j + x.shape[-1]] for j in range(len(w)))


def _positive(a):
    return np.abs(a) + 0.5


# name -> (input shapes, builder on nodes, numpy reference, input transforms)
CASES = {
    "add": ([(3, 4), (3, 4)], lambda a, b: a + b, lambda a, b: a + b, None),
    "add_bias": ([(3, 4), (4,)], lambda a, b: a + b, lambda a, b: a + b, None),
    "add_scalar": ([(3, 4)], lambda a: a + 3, lambda a: a + 3, None),
    "sub": ([(2, 5), (2, 5)], lambda a, b: a - b, lambda a, b: a - b, None),
    "rsub_scalar": ([(2, 5)], lambda a: 1.5 - a, lambda a: 1.5 - a, None),
    "mul_bias": ([(3, 4), (1, 4)], lambda a, b: a * b, lambda a, b: a * b, None),
    "div": ([(3, 2), (3, 2)], lambda a, b: a / b, lambda a, b: a / b, [None, _positive]),
    "div_scalar_bcast": ([(3, 2), ()], lambda a, b: a / b, lambda a, b: a / b, [None, _positive]),
    "neg": ([(4,)], lambda a: -a, lambda a: -a, None),
    "exp": ([(2, 3)], ml.exp, np.exp, None),
    "log": ([(2, 3)], ml.log, np.log, [_positive]),
    "sigmoid": ([(2, 3)], ml.sigmoid, lambda a: 1 / (1 + np.exp(-a)), None),
    "tanh": ([(5,)], ml.tanh, np.tanh, None),
    "relu": ([(3, 3)], ml.relu, lambda a: np.maximum(a, 0), [lambda a: a + np.sign(a) * 0.1]),
    "matmul": ([(3, 4), (4, 2)], ml.matmul, lambda a, b: a @ b, None),
    "matmul_ta": ([(4, 3), (4, 2)], lambda a, b: ml.matmul(a, b, trans_a=True), lambda a, b: a.T @ b, None),
    "matmul_tb": ([(3, 4), (2, 4)], lambda a, b: ml.matmul(a, b, trans_b=True), lambda a, b: a @ b.T, None),
    "matmul_tatb": ([(4, 3), (2, 4)], lambda a, b: ml.matmul(a, b, True, True), lambda a, b: a.T @ b.T, None),
    "sum_all": ([(3, 4)], ml.sum, np.sum, None),
    "sum_axis": ([(3, 4)], lambda a: ml.sum(a, axis=0), lambda a: a.sum(0), None),
    "sum_keep": ([(3, 4, 2)], lambda a: ml.sum(a, axis=(0, 2), keepdims=True),
                 lambda a: a.sum((0, 2), keepdims=True), None),
    "mean_axis": ([(3, 4)], lambda a: ml.mean(a, axis=-1), lambda a: a.mean(-1), None),
    "mean_all": ([(3, 4)], ml.mean, np.mean, None),
    "reshape": ([(3, 4)], lambda a: ml.reshape(a, (2, -1)), lambda a: a.reshape(2, 6), None),
    "softmax": ([(3, 5)], ml.softmax, _np_softmax, None),
    "pool": ([(2, 7)], ml.pool, lambda a: _np_pool(a, 3), None),
    "pool5": ([(6,)], lambda a: ml.pool(a, 5), lambda a: _np_pool(a, 5), None),
    "conv": ([(2, 6), (3,)], ml.conv, _np_conv, None),
    "conv_default": ([(5,)], ml.conv, lambda a: _np_conv(a, np.array([0.25, 0.5, 0.25])), None),
    "concat": ([(2, 3), (2, 2)], lambda a, b: ml.concat(a, b, axis=1),
               lambda a, b: np.concatenate([a, b], 1), None),
    "slice": ([(3, 5)], lambda a: ml.slice_axis(a, 1, 1, 4), lambda a: a[:, 1:4], None),
    "pad": ([(2, 3)], lambda a: ml.pad_axis(a, 0, 1, 2), lambda a: np.pad(a, [(1, 2), (0, 0)]), None),
    "broadcast_to": ([(1, 3)], lambda a: ml.graph.broadcast_to(a, (4, 3)), lambda a: np.broadcast_to(a, (4, 3)), None),
    "sum_to": ([(4, 3)], lambda a: ml.graph.sum_to(a, (3,)), lambda a: a.sum(0), None),
    "flip": ([(4,)], ml.graph.flip, lambda a: a[::-1], None),
}


def _inputs(case, seed):
    shapes, _, _, transforms = CASES[case]
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    if transforms:
        arrays = [t(a) if t else a for t, a in zip(transforms, arrays)]
    return [np.asarray(a, F64) for a in arrays]


def _build(case, arrays):
    xs = [ml.placeholder(f"x{i}", a.shape, F64) for i, a in enumerate(arrays)]
    return xs, CASES[case][1](*xs)


@pytest.mark.parametrize("case", sorted(CASES))
@given(seed=st.integers(0, 2**31 - 1))
def test_forward_matches_numpy(case, seed):
    op_matches_numpy(CASES[case][1], CASES[case][2], _inputs(case, seed))


@pytest.mark.parametrize("case", sorted(CASES))
@given(seed=st.integers(0, 2**31 - 1))
def test_gradient_matches_central_differences(case, seed):
    op_gradient_matches_differences(CASES[case][1], _inputs(case, seed), seed, case)


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 5), c=st.integers(2, 4))
def test_softmax_cross_entropy(seed, n, c):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n, c))
    labels = rng.integers(0, c, n)
    x = ml.placeholder("logits", (n, c), F64)
    y = ml.placeholder("labels", (n,), np.int64)
    loss = ml.softmax_cross_entropy(x, y)
    feed = {x: logits, y: labels}
    (value,) = _run(loss, feed)
    expected = -np.mean(np.log(_np_softmax(logits)[np.arange(n), labels]))
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    (g,) = _run(ml.gradients(loss, [x]), feed)
    fd = central_difference(lambda a: float(_run(loss, {x: a[0], y: labels})[0]), [logits], 0)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


SECOND_ORDER = ["exp", "log", "sigmoid", "tanh", "mul_bias", "div", "matmul", "softmax", "pool",
                "conv", "relu", "mean_axis", "concat"]


@pytest.mark.parametrize("case", SECOND_ORDER)
def test_gradients_of_gradients(case):
    """Differentiate the gradient graph again: d/dx (v . dL/dx) against differences of dL/dx."""
    arrays = _inputs(case, 7)
    xs, y = _build(case, arrays)
    rng = np.random.default_rng(3)
    loss = ml.sum(ml.tanh(y) * ml.constant(rng.standard_normal(y.shape)))  # tanh: curvature everywhere
    g0 = ml.gradients(loss, xs)[0]
    v = ml.constant(rng.standard_normal(g0.shape))
    hv = ml.gradients(ml.sum(g0 * v), xs)  # Hessian-vector products
    feed = dict(zip(xs, arrays))
    got = _run(hv, feed)
    f = lambda arrs: float(np.sum(_run(g0, dict(zip(xs, arrs)))[0] * v.value))  # noqa: E731
    for i, h in enumerate(got):
        np.testing.assert_allclose(h, central_difference(f, arrays, i), rtol=1e-4, atol=1e-5,
                                   err_msg=f"{case}: input {i}")


def test_gradient_extends_the_graph():
    a, b = ml.placeholder("a"), ml.placeholder("b")
    y = ml.exp(a * b + 3)
    forward = set(ml.topo_order(y))
    ga, gb = ml.gradients(y, [a, b])
    backward = set(ml.topo_order([ga, gb]))
    assert forward < backward | forward and len(backward - forward) >= 3
    assert y in backward  # exp's gradient reuses its output: the planner must keep it alive


def test_unreachable_input_gets_zeros():
    a, b = ml.placeholder("a", (2,)), ml.placeholder("b", (2,))
    (gb,) = ml.gradients(ml.sum(a * a), [b])
    np.testing.assert_array_equal(_run(gb, {a: np.ones(2, np.float32), b: np.ones(2, np.float32)})[0], 0)


def test_inplace_permissions():
    x = ml.placeholder("x", (3, 4))
    w = ml.placeholder("w", (4, 2))
    b = ml.placeholder("b", (4,))
    assert (x + b).op.inplace(x + b) == (0,)  # the bias is smaller: only x's memory fits
    assert ml.exp(x).op.inplace(ml.exp(x)) == (0,)
    for node in [ml.matmul(x, w), ml.sum(x, axis=0), ml.pool(x), ml.conv(x)]:
        assert node.op.inplace(node) == ()

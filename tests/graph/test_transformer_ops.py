"""The transformer's ops (layernorm, gelu, bmatmul, transpose, causal_mask, dropout): forward
against numpy written here, gradients against central differences in float64."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import memlab as ml
from memlab.testing import central_difference
from strategies import op_gradient_matches_differences, op_matches_numpy

F64 = np.float64


def _np_layernorm(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _np_gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_future(sq, sk):
    return np.array([[j > i + sk - sq for j in range(sk)] for i in range(sq)])


# name -> (input shapes, builder on nodes, numpy reference)
CASES = {
    "layernorm": ([(3, 5), (5,), (5,)], ml.layernorm, _np_layernorm),
    "layernorm_3d": ([(2, 3, 4), (4,), (4,)], lambda x, g, b: ml.layernorm(x, g, b, eps=0.1),
                     lambda x, g, b: _np_layernorm(x, g, b, 0.1)),
    "gelu": ([(3, 4)], ml.gelu, _np_gelu),
    "bmatmul": ([(2, 3, 4), (2, 4, 5)], ml.bmatmul, lambda a, b: np.einsum("bik,bkj->bij", a, b)),
    "bmatmul_tb": ([(2, 2, 3, 4), (2, 2, 5, 4)], lambda a, b: ml.bmatmul(a, b, trans_b=True),
                   lambda a, b: np.einsum("xyik,xyjk->xyij", a, b)),
    "bmatmul_ta": ([(2, 4, 3), (2, 4, 5)], lambda a, b: ml.bmatmul(a, b, trans_a=True),
                   lambda a, b: np.einsum("bki,bkj->bij", a, b)),
    "bmatmul_tatb": ([(3, 4, 3), (3, 2, 4)], lambda a, b: ml.bmatmul(a, b, True, True),
                     lambda a, b: np.einsum("bki,bjk->bij", a, b)),
    "transpose": ([(2, 3, 4, 5)], lambda x: ml.transpose(x, (0, 2, 1, 3)),
                  lambda x: np.einsum("abcd->acbd", x)),
    "transpose_cycle": ([(2, 3, 4)], lambda x: ml.transpose(x, (2, 0, 1)),
                        lambda x: np.einsum("abc->cab", x)),
    "causal_mask": ([(2, 4, 4)], lambda x: ml.causal_mask(x, fill=-7.0),
                    lambda x: np.where(_np_future(4, 4), -7.0, x)),
    "causal_mask_rect": ([(3, 5)], lambda x: ml.causal_mask(x, fill=2.5),
                         lambda x: np.where(_np_future(3, 5), 2.5, x)),
    "causal_softmax": ([(2, 5, 5)], lambda x: ml.softmax(ml.causal_mask(x)),
                       lambda x: _np_softmax(np.where(_np_future(5, 5), -np.inf, x))),
}


def _inputs(case, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in CASES[case][0]]


def _build(case, arrays):
    xs = [ml.placeholder(f"x{i}", a.shape, F64) for i, a in enumerate(arrays)]
    return xs, CASES[case][1](*xs)


def _run(outputs, feed):
    return ml.Executor(outputs).run(feed)


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=10)
@given(seed=st.integers(0, 2**31 - 1))
def test_forward_matches_numpy(case, seed):
    op_matches_numpy(CASES[case][1], CASES[case][2], _inputs(case, seed))


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=5)
@given(seed=st.integers(0, 2**31 - 1))
def test_gradient_matches_central_differences(case, seed):
    op_gradient_matches_differences(CASES[case][1], _inputs(case, seed), seed, case)


def test_dropout_mask_is_a_stored_value_and_the_gradient_reads_it():
    rng = np.random.default_rng(0)
    x = ml.placeholder("x", (40, 50), F64)
    seed = ml.placeholder("seed", (), np.int64)
    y = ml.dropout(x, 0.25, seed=seed, key=3)
    mask = y.inputs[1]
    assert mask.dtype == np.uint8 and mask.nbytes == 40 * 50   # one byte per element
    a = rng.standard_normal(x.shape)
    w = rng.standard_normal(x.shape)
    loss = ml.sum(y * ml.constant(w))
    (gx,) = ml.gradients(loss, [x])
    assert mask in ml.topo_order(gx)                           # backward reads the mask
    m, out, g = _run([mask, y, gx], {x: a, seed: 11})
    assert set(np.unique(m)) <= {0, 1} and abs(m.mean() - 0.75) < 0.05
    np.testing.assert_allclose(out, a * m / 0.75)
    f = lambda arrs: float(_run(loss, {x: arrs[0], seed: 11})[0])  # noqa: E731
    np.testing.assert_allclose(g, central_difference(f, [a], 0), rtol=1e-5, atol=1e-6)
    m2, = _run([mask], {x: a, seed: 12})
    assert (m2 != m).any()                                      # a new seed, a new mask
    assert (_run([mask], {x: a, seed: 11})[0] == m).all()       # same seed, same mask


def test_dropout_zero_rate_is_the_input():
    x = ml.placeholder("x", (3,))
    assert ml.dropout(x, 0.0) is x


@pytest.mark.parametrize("call, match", [
    (lambda x: ml.dropout(x, 1.0), "p"),
    (lambda x: ml.dropout(x, -0.1), "p"),
    (lambda x: ml.layernorm(x, ml.placeholder("g", (3,)), ml.placeholder("b", (4,))), "gamma"),
    (lambda x: ml.layernorm(x, ml.placeholder("g", (4,)), ml.placeholder("b", (4,)), eps=0),
     "eps"),
    (lambda x: ml.bmatmul(x, x), "bmatmul"),
    (lambda x: ml.transpose(x, (0, 0)), "permutation"),
    (lambda x: ml.causal_mask(ml.placeholder("v", (4,))), "2 axes"),
])
def test_bad_input_raises_memlab_error(call, match):
    x = ml.placeholder("x", (2, 4))
    with pytest.raises(ml.MemlabError, match=match):
        call(x)

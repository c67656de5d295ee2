"""Tiled attention with an online softmax equals plain attention built from memlab ops (values
and gradients, odd sizes, blocks that do not divide s), and holds no s x s value."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import memlab as ml
from memlab.graph.ops.flash import tile_traffic
from memlab.testing import central_difference


def _plain(q, k, v, causal):
    s = ml.bmatmul(q, k, trans_b=True) * (1.0 / math.sqrt(q.shape[-1]))
    return ml.bmatmul(ml.softmax(ml.causal_mask(s) if causal else s), v)


def _np_attention(q, k, v, causal):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = s.shape[-2:]
        s = np.where(np.triu(np.ones((sq, sk), bool), 1 + sk - sq), -np.inf, s)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) @ v


@settings(max_examples=15)
@given(b=st.integers(1, 2), h=st.integers(1, 3), sq=st.integers(1, 13), extra=st.integers(0, 4),
       d=st.sampled_from([1, 3, 5]), dv=st.sampled_from([2, 5]), block=st.integers(1, 7),
       causal=st.booleans(), seed=st.integers(0, 2**31))
def test_equals_plain_attention_values_and_gradients(b, h, sq, extra, d, dv, block, causal, seed):
    sk = sq + extra
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape) for shape in ((b, h, sq, d), (b, h, sk, d), (b, h, sk, dv))]
    xs = [ml.placeholder(n, a.shape, np.float64) for n, a in zip("qkv", arrays)]
    tiled = ml.tiled_attention(*xs, causal=causal, block=block)
    plain = _plain(*xs, causal)
    w = ml.constant(rng.standard_normal(tiled.shape))
    feed = dict(zip(xs, arrays))
    got = ml.Executor([tiled, *ml.gradients(ml.sum(tiled * w), xs)]).run(feed)
    want = ml.Executor([plain, *ml.gradients(ml.sum(plain * w), xs)]).run(feed)
    np.testing.assert_allclose(got[0], _np_attention(*arrays, causal), rtol=1e-10, atol=1e-12)
    for g, p in zip(got, want):
        np.testing.assert_allclose(g, p, rtol=1e-9, atol=1e-11)


def test_gradients_match_central_differences():
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(shape) for shape in ((1, 2, 5, 3), (1, 2, 5, 3), (1, 2, 5, 2))]
    xs = [ml.placeholder(n, a.shape, np.float64) for n, a in zip("qkv", arrays)]
    loss = ml.sum(ml.tiled_attention(*xs, causal=True, block=2) * ml.constant(
        rng.standard_normal((1, 2, 5, 2))))
    grads = ml.Executor(ml.gradients(loss, xs)).run(dict(zip(xs, arrays)))
    f = lambda arrs: float(ml.Executor(loss).run(dict(zip(xs, arrs)))[0])  # noqa: E731
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, central_difference(f, arrays, i), rtol=1e-6, atol=1e-8)


def test_holds_no_score_matrix():
    """At the forward/backward boundary plain attention holds P (s x s per head); tiled, O(s d)."""
    from memlab.models.activations import boundary_values
    b, h, s, d = 1, 2, 64, 4
    xs = [ml.placeholder(n, (b, h, s, d), np.float32) for n in "qkv"]
    held = {}
    for name, y in (("plain", _plain(*xs, True)), ("tiled", ml.tiled_attention(*xs, True, 8))):
        loss = ml.sum(y)
        alive, _ = boundary_values([loss, *ml.gradients(loss, xs)])
        alive.discard(loss)                                         # an output, kept anyway
        held[name] = sum(n.nbytes for n in alive)
        assert max(n.size for n in alive) == (b * h * s * s if name == "plain" else b * h * s * d)
    assert held["tiled"] == b * h * s * d * 4                      # the output O alone
    assert held["plain"] >= b * h * s * s * 4


@pytest.mark.parametrize("s, d, block", [(64, 8, 16), (100, 16, 32), (7, 3, 2)])
def test_slow_memory_traffic(s, d, block):
    tiled, plain = tile_traffic(s, d, block), tile_traffic(s, d, None)
    blocks = -(-s // block)
    assert tiled == {"read": s * d + blocks * 2 * s * d, "write": s * d}
    assert plain["write"] == 2 * s * s + s * d
    if s >= 64:
        assert sum(tiled.values()) < sum(plain.values())


@pytest.mark.parametrize("s, d, block, causal", [(7, 3, 2, False), (13, 4, 5, True),
                                                 (16, 2, 4, True), (5, 1, 8, False)])
def test_traffic_counted_while_running_equals_tile_traffic(s, d, block, causal):
    """The loads the numpy forward makes, counted as it runs, against the closed count."""
    from memlab.graph.ops.flash import forward
    rng = np.random.default_rng(s)
    q, k, v = (rng.standard_normal((1, s, d)) for _ in range(3))
    io = {}
    forward(q, k, v, 1.0, causal, block, io=io)
    assert io == tile_traffic(s, d, block, causal)
    if causal and s > block:
        assert io["read"] < tile_traffic(s, d, block)["read"]      # future tiles never loaded


@pytest.mark.parametrize("call, match", [
    (lambda q: ml.tiled_attention(q, q, q, block=0), "block"),
    (lambda q: ml.tiled_attention(q, q, ml.placeholder("v", (2, 5, 3))), "tiled_attention needs"),
    (lambda q: ml.tiled_attention(q, q, q, scale=-1.0), "scale"),
    (lambda q: ml.tiled_attention(q, ml.placeholder("k", (2, 3, 3)), ml.placeholder("v", (2, 3, 1)),
                                  causal=True), "causal"),
    (lambda q: tile_traffic(0, 3, 2), "s"),
])
def test_bad_input(call, match):
    with pytest.raises(ml.MemlabError, match=match):
        call(ml.placeholder("q", (2, 4, 3)))

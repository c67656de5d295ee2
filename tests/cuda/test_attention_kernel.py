"""The attention kernel (shared-memory tiles, online softmax) against the numpy tiled forward and
plain numpy softmax attention, at tiny odd sizes, in the simulator."""
import math

import numpy as np
import pytest

import memlab as ml
import memlab.cuda as mc
from memlab.cuda.attention import attention_forward
from memlab.graph.ops.flash import forward


def _np_attention(q, k, v, causal):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = s.shape[-2:]
        s = np.where(np.triu(np.ones((sq, sk), bool), 1 + sk - sq), -np.inf, s)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(-1, keepdims=True) @ v, (m + np.log(e.sum(-1, keepdims=True)))[..., 0]


@pytest.mark.parametrize("bh, sq, sk, d, dv, tile, causal", [
    (1, 5, 5, 3, 2, 4, True), (2, 7, 9, 5, 3, 4, False), (3, 6, 9, 1, 4, 3, True),
    (1, 1, 3, 2, 2, 2, False)])
def test_kernel_equals_plain_and_tiled_attention(bh, sq, sk, d, dv, tile, causal):
    rng = np.random.default_rng(bh * 100 + sq)
    q, k, v = (rng.standard_normal(s).astype(np.float32)
               for s in ((bh, sq, d), (bh, sk, d), (bh, sk, dv)))
    out, lse = mc.device_empty((bh, sq, dv)), mc.device_empty((bh, sq))
    attention_forward(mc.to_device(q), mc.to_device(k), mc.to_device(v), out, lse, causal,
                      tile=tile)
    want, want_lse = _np_attention(q.astype(np.float64), k.astype(np.float64),
                                   v.astype(np.float64), causal)
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lse.copy_to_host(), want_lse, rtol=1e-5, atol=1e-5)
    tiled, tiled_lse = forward(q, k, v, 1 / math.sqrt(d), causal, tile)
    np.testing.assert_allclose(out.copy_to_host(), tiled, rtol=1e-5, atol=1e-5)


def test_bad_input():
    q = mc.to_device(np.zeros((1, 4, 3), np.float32))
    out, lse = mc.device_empty((1, 4, 3)), mc.device_empty((1, 4))
    with pytest.raises(ml.MemlabError, match="head sizes"):
        big = mc.to_device(np.zeros((1, 4, 65), np.float32))
        attention_forward(big, big, big, mc.device_empty((1, 4, 65)), lse)
    with pytest.raises(ml.MemlabError, match="float32"):
        attention_forward(np.zeros((1, 4, 3)), q, q, out, lse)
    with pytest.raises(ml.MemlabError, match="lse"):
        attention_forward(q, q, q, out, mc.device_empty((1, 3)))
    with pytest.raises(ml.MemlabError, match="causal"):
        k = mc.to_device(np.zeros((1, 2, 3), np.float32))
        attention_forward(q, k, k, out, lse, causal=True)

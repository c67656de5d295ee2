"""Attention's forward pass in one kernel, with a shared-memory tile of keys and values and an
online softmax (Dao et al. 2022, "FlashAttention"; the numpy version is
:func:`memlab.graph.ops.flash.forward`).

One block of ``tile`` threads serves ``tile`` queries of one (batch, head), a thread per query.
The block walks the keys ``tile`` rows at a time: each thread copies one key row and one value
row into shared memory, the block waits (``syncthreads``), then every thread folds the ``tile``
scores of its query into a running maximum ``m``, a running sum ``l`` and an unnormalised output
row held in its registers (rescaled by ``exp(m_old - m_new)`` when the maximum grows), and the
block waits again before the next tile comes in. No ``s x s`` score matrix exists anywhere: global
memory holds Q, K, V, the output and one log-sum-exp per query. Each key and value row is read from
global memory once per block of queries instead of once per query.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from numba import cuda, float32

from ..errors import DeviceError, ShapeError, check_bool, check_int
from .device import check_f32, check_shape, simulator

MAX_HEAD = 64   #: the largest head size (d and d_v) the kernel's registers hold


def default_attention_tile() -> int:
    """Queries (and keys) per block: 32 on a GPU, 4 in the simulator (a thread per Python thread)."""
    return 4 if simulator() else 32


@lru_cache(maxsize=None)
def attention_kernel(tile: int) -> Any:
    """The kernel for blocks of ``tile`` threads (compiled once per tile size)."""

    @cuda.jit
    def kernel(q, k, v, out, lse, scale, causal):
        sk_tile = cuda.shared.array((tile, MAX_HEAD), float32)
        sv_tile = cuda.shared.array((tile, MAX_HEAD), float32)
        qrow = cuda.local.array(MAX_HEAD, float32)
        acc = cuda.local.array(MAX_HEAD, float32)
        bh, t = cuda.blockIdx.x, cuda.threadIdx.x
        i = cuda.blockIdx.y * tile + t                     # this thread's query
        sq, sk, d, dv = q.shape[1], k.shape[1], q.shape[2], v.shape[2]
        offset = sk - sq
        if i < sq:
            for c in range(d):
                qrow[c] = q[bh, i, c]
        for c in range(dv):
            acc[c] = float32(0)
        m = -math.inf
        l = float32(0)
        for j0 in range(0, sk, tile):
            j = j0 + t                                     # the key row this thread copies
            if j < sk:
                for c in range(d):
                    sk_tile[t, c] = k[bh, j, c]
                for c in range(dv):
                    sv_tile[t, c] = v[bh, j, c]
            cuda.syncthreads()
            if i < sq:
                for jj in range(min(tile, sk - j0)):
                    if causal and j0 + jj > i + offset:
                        break
                    s = float32(0)
                    for c in range(d):
                        s += qrow[c] * sk_tile[jj, c]
                    s *= scale
                    m_new = max(m, s)
                    fix = math.exp(m - m_new)              # 0 while m is -inf
                    p = math.exp(s - m_new)
                    l = l * fix + p
                    for c in range(dv):
                        acc[c] = acc[c] * fix + p * sv_tile[jj, c]
                    m = m_new
            cuda.syncthreads()
        if i < sq:
            for c in range(dv):
                out[bh, i, c] = acc[c] / l
            lse[bh, i] = m + math.log(l)
    return kernel


def attention_forward(q: Any, k: Any, v: Any, out: Any, lse: Any, causal: bool = False,
                      scale: float | None = None, tile: int | None = None) -> None:
    """``out = softmax(q k^T * scale [causal]) v`` and ``lse`` (log-sum-exp per query) on the
    device, for float32 ``q`` (bh, s_q, d), ``k`` (bh, s_k, d), ``v`` (bh, s_k, d_v)."""
    for name, x in (("q", q), ("k", k), ("v", v), ("out", out), ("lse", lse)):
        if not (hasattr(x, "shape") and hasattr(x, "dtype")):
            raise DeviceError(f"attention_forward: {name} must be a float32 array (device or "
                              f"host), got {type(x).__name__}")
        check_f32(name, x)
    causal = check_bool(causal, "attention_forward: causal", ShapeError)
    if len(q.shape) != 3 or len(k.shape) != 3 or len(v.shape) != 3 or q.shape[0] != k.shape[0] \
            or k.shape[:2] != v.shape[:2] or q.shape[2] != k.shape[2]:
        raise ShapeError(f"attention_forward needs q (bh, s_q, d), k (bh, s_k, d), v (bh, s_k, "
                         f"d_v), got {list(q.shape)}, {list(k.shape)}, {list(v.shape)}")
    bh, sq, d = q.shape
    sk, dv = v.shape[1], v.shape[2]
    if d > MAX_HEAD or dv > MAX_HEAD:
        raise ShapeError(f"attention_forward: head sizes up to {MAX_HEAD}, got d={d}, d_v={dv}")
    if causal and sq > sk:
        raise ShapeError(f"attention_forward: causal needs s_q <= s_k, got {sq} and {sk}")
    if sk == 0:
        raise ShapeError("attention_forward: no keys to attend to (s_k = 0)")
    check_shape("attention_forward's out", out, (bh, sq, dv))
    check_shape("attention_forward's lse", lse, (bh, sq))
    tile = default_attention_tile() if tile is None else check_int(
        tile, "attention_forward: tile", 1, ShapeError)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if bh and sq:
        attention_kernel(tile)[(bh, -(-sq // tile)), tile](q, k, v, out, lse, float32(scale),
                                                             bool(causal))

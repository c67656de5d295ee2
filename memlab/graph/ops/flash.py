"""Attention that never stores the score matrix: tiles and an online softmax (Dao et al. 2022,
"FlashAttention"; Milakov and Gimelshein 2018, "Online normalizer calculation for softmax").

Plain attention builds ``S = Q K^T`` and ``P = softmax(S)``, ``s x s`` per head, and keeps ``P``
for the backward pass. :func:`tiled_attention` walks key blocks of ``block`` rows for each query
block, keeping per query only a running maximum ``m``, a running sum ``l`` and an unnormalised
output; a new block rescales them by ``exp(m_old - m_new)``. The backward op recomputes each
score tile from ``Q``, ``K`` and the row's log-sum-exp (``m + log l``, one number per query), so
the graph holds ``O(s d)`` per head, never ``O(s^2)``. :func:`tile_traffic` counts the elements
both algorithms read from and write to slow memory (section 3.2 of the paper).
"""
from __future__ import annotations

import math
from typing import Iterator, Sequence

import numpy as np

from ...errors import GraphError, ShapeError, check_bool, check_int
from ..node import Node, as_node
from .attention import causal
from .base import Op


def _blocks(n: int, block: int) -> Iterator[slice]:
    for start in range(0, n, block):
        yield slice(start, min(n, start + block))


def _scores(q: np.ndarray, k: np.ndarray, rows: slice, cols: slice, scale: float,
            is_causal: bool, sq: int, sk: int) -> np.ndarray:
    """One tile of scaled scores, the future set to -inf when causal."""
    s = (q[..., rows, :] @ np.swapaxes(k[..., cols, :], -1, -2)) * scale
    if is_causal:
        s = np.where(causal(sq, sk)[rows, cols], -np.inf, s)
    return s


def _skip(rows: slice, cols: slice, is_causal: bool, sq: int, sk: int) -> bool:
    """A key block wholly in the future of every query of the block is never loaded."""
    return is_causal and cols.start > rows.stop - 1 + sk - sq


def forward(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, is_causal: bool,
            block: int, io: dict[str, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Output and log-sum-exp per query, by tiles with an online softmax. ``io``, when given,
    counts the elements of one head read from and written to slow memory as tiles are loaded."""
    sq, sk = q.shape[-2], k.shape[-2]
    d, dv = q.shape[-1], v.shape[-1]
    if io is not None:
        io.setdefault("read", 0)
        io.setdefault("write", 0)
    out = np.zeros(q.shape[:-1] + v.shape[-1:], np.result_type(q, v))
    lse = np.full(q.shape[:-1], -np.inf, out.dtype)
    for rows in _blocks(sq, block):
        m = np.full(q.shape[:-2] + (rows.stop - rows.start,), -np.inf, out.dtype)
        l = np.zeros_like(m)
        acc = np.zeros(m.shape + v.shape[-1:], out.dtype)
        for cols in _blocks(sk, block):
            if _skip(rows, cols, is_causal, sq, sk):
                continue
            s = _scores(q, k, rows, cols, scale, is_causal, sq, sk)
            if io is not None:
                io["read"] += (cols.stop - cols.start) * (d + dv)         # a K and a V tile
            m_new = np.maximum(m, s.max(axis=-1))
            base = np.where(np.isfinite(m_new), m_new, 0.0)          # rows masked so far
            p = np.exp(s - base[..., None])
            fix = np.exp(np.where(np.isfinite(m), m, base) - base)
            l = l * fix + p.sum(axis=-1)
            acc = acc * fix[..., None] + p @ v[..., cols, :]
            m = m_new
        out[..., rows, :] = acc / l[..., None]
        lse[..., rows] = m + np.log(l)
        if io is not None:
            io["read"] += (rows.stop - rows.start) * d                  # the Q tile, once
            io["write"] += (rows.stop - rows.start) * dv                # the O tile, once
    return out, lse


def backward(q: np.ndarray, k: np.ndarray, v: np.ndarray, o: np.ndarray, g: np.ndarray,
             lse: np.ndarray, scale: float, is_causal: bool, block: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``dq, dk, dv`` by tiles: each tile's probabilities recomputed from the log-sum-exp."""
    sq, sk = q.shape[-2], k.shape[-2]
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    rowdot = (g * o).sum(axis=-1)                                    # D_i = dO_i . O_i
    for rows in _blocks(sq, block):
        for cols in _blocks(sk, block):
            if _skip(rows, cols, is_causal, sq, sk):
                continue
            p = np.exp(_scores(q, k, rows, cols, scale, is_causal, sq, sk)
                       - lse[..., rows, None])
            gr = g[..., rows, :]
            dv[..., cols, :] += np.swapaxes(p, -1, -2) @ gr
            ds = p * (gr @ np.swapaxes(v[..., cols, :], -1, -2) - rowdot[..., rows, None])
            dq[..., rows, :] += ds @ k[..., cols, :] * scale
            dk[..., cols, :] += np.swapaxes(ds, -1, -2) @ q[..., rows, :] * scale
    return dq, dk, dv


class TiledAttention(Op):
    """``softmax(Q K^T * scale [+ causal mask]) V`` by tiles; the backward reads Q, K, V, O only.

    PyTorch's flash attention (``_scaled_dot_product_flash_attention``) saves query, key, value,
    output and the log-sum-exp of each query row (one float per query); memlab keeps no
    log-sum-exp: each gradient op reruns the tiled forward pass to get it (O(s) memory per head,
    one more pass of work)."""

    name = "tiled_attention"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        q, k, v = node.inputs[:3]
        if len(q.shape) < 2 or q.shape[:-2] != k.shape[:-2] or k.shape[:-1] != v.shape[:-1] \
                or q.shape[-1] != k.shape[-1] or len(k.shape) != len(q.shape):
            raise ShapeError(f"tiled_attention needs q (..., s_q, d), k (..., s_k, d) and v "
                             f"(..., s_k, d_v), got {q.name}{list(q.shape)}, "
                             f"{k.name}{list(k.shape)} and {v.name}{list(v.shape)}")
        if any(x.dtype.kind != "f" for x in (q, k, v)):
            raise ShapeError("tiled_attention needs floating-point q, k and v")
        if node.attrs["causal"] and q.shape[-2] > k.shape[-2]:
            raise ShapeError(f"tiled_attention: causal needs s_q <= s_k, got {q.shape[-2]} "
                             f"queries and {k.shape[-2]} keys")
        return q.shape[:-1] + v.shape[-1:], np.result_type(q.dtype, v.dtype)

    def _attrs(self, node: Node) -> tuple[float, bool, int]:
        return node.attrs["scale"], node.attrs["causal"], node.attrs["block"]

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        np.copyto(out, forward(*inputs[:3], *self._attrs(node))[0])

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        q, k, v = node.inputs
        return [TILED_ATTENTION_GRAD(q, k, v, node, grad, wrt=i, **node.attrs) for i in range(3)]


class TiledAttentionGrad(Op):
    """The gradient of :func:`tiled_attention` for input ``wrt`` (0: q, 1: k, 2: v), by tiles."""

    name = "tiled_attention_grad"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        x = node.inputs[node.attrs["wrt"]]
        return x.shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        q, k, v, o, g = inputs
        a = node.attrs
        _, lse = forward(q, k, v, a["scale"], a["causal"], a["block"])  # O(s) per head
        grads = backward(q, k, v, o, g, lse, a["scale"], a["causal"], a["block"])
        np.copyto(out, grads[a["wrt"]])


TILED_ATTENTION, TILED_ATTENTION_GRAD = TiledAttention(), TiledAttentionGrad()


def tiled_attention(q: Node, k: Node, v: Node, causal: bool = False, block: int = 16,
                    scale: float | None = None, name: str | None = None) -> Node:
    """Attention of queries ``q`` over keys ``k`` and values ``v`` (leading axes: batch, heads)
    in tiles of ``block`` rows, with an online softmax; ``scale`` defaults to ``1/sqrt(d)``."""
    q, k, v = (as_node(x, what=f"tiled_attention: {n}") for n, x in zip("qkv", (q, k, v)))
    block = check_int(block, "tiled_attention: block", 1, GraphError)
    if scale is None:
        scale = 1.0 / math.sqrt(max(q.shape[-1], 1)) if q.shape else 1.0
    elif not isinstance(scale, (int, float)) or isinstance(scale, bool) or not scale > 0:
        raise GraphError(f"tiled_attention: scale must be a positive number, got {scale!r}")
    return TILED_ATTENTION(q, k, v, name=name, causal=check_bool(causal, "tiled_attention: causal",
                                                                 GraphError),
                           block=block, scale=float(scale))


def tile_traffic(s: int, d: int, block: int | None, causal: bool = False) -> dict[str, int]:
    """Elements one head's forward reads from and writes to slow memory (head size ``d`` for
    queries, keys and values): plain attention (``block=None``: read Q and K, write ``S``, read
    it, write ``P``, read it with ``V``, write ``O``) or tiled (each query block loaded once, the
    key and value blocks it can see once per query block, ``O`` written once). Counted over the
    blocks :func:`forward` visits (``forward(..., io=...)`` counts the same while it runs)."""
    s = check_int(s, "tile_traffic: s", 1, GraphError)
    d = check_int(d, "tile_traffic: d", 1, GraphError)
    causal = check_bool(causal, "tile_traffic: causal", GraphError)
    if block is None:
        return {"read": 2 * s * d + s * s + s * s + s * d, "write": s * s + s * s + s * d}
    block = check_int(block, "tile_traffic: block", 1, GraphError)
    read = 0
    for rows in _blocks(s, block):
        read += (rows.stop - rows.start) * d
        for cols in _blocks(s, block):
            if not _skip(rows, cols, causal, s, s):
                read += 2 * (cols.stop - cols.start) * d
    return {"read": read, "write": s * d}

"""The ops multi-head attention needs: a batched matmul, a transpose and a causal mask.

Attention (Vaswani et al. 2017) splits the hidden vector into heads, so its products are batched
over ``(batch, heads)``: :func:`bmatmul` multiplies the last two axes, :func:`transpose` moves the
head axis next to the batch axis and back; :func:`causal_mask` hides the future from each query
of a decoder. None reads a forward value in its backward pass except :func:`bmatmul`, which reads
both factors (the ``QK^T`` and ``V`` terms of Korthikanti et al. 2022).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...errors import GraphError, ShapeError, check_bool, check_number
from ..node import Node, as_node
from .base import Op, same_memory_inputs
from .tensor import product_gradients


class BatchedMatMul(Op):
    """``op(a) @ op(b)`` over the last two axes, the leading axes equal (no broadcasting)."""

    name = "bmatmul"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        a, b = node.inputs
        ta, tb = node.attrs["trans_a"], node.attrs["trans_b"]
        if len(a.shape) < 3 or a.shape[:-2] != b.shape[:-2] or len(b.shape) != len(a.shape):
            raise ShapeError(f"bmatmul needs inputs of >= 3 axes with equal leading axes, got "
                             f"{a.name}{list(a.shape)} and {b.name}{list(b.shape)}")
        n, k1 = a.shape[-1:-3:-1] if ta else a.shape[-2:]
        k2, m = b.shape[-1:-3:-1] if tb else b.shape[-2:]
        if k1 != k2:
            raise ShapeError(f"bmatmul inner dimensions differ: {a.name}{list(a.shape)} "
                             f"(trans_a={ta}) and {b.name}{list(b.shape)} (trans_b={tb})")
        return a.shape[:-2] + (n, m), np.result_type(a.dtype, b.dtype)

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        a, b = inputs
        np.matmul(a.swapaxes(-1, -2) if node.attrs["trans_a"] else a,
                  b.swapaxes(-1, -2) if node.attrs["trans_b"] else b, out=out)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return product_gradients(bmatmul, node, grad)


BMATMUL = BatchedMatMul()


def bmatmul(a: Node, b: Node, trans_a: bool = False, trans_b: bool = False,
            name: str | None = None) -> Node:
    """Batched matrix product over the last two axes (``Q K^T`` and ``P V`` of attention)."""
    return BMATMUL(a, b, name=name, trans_a=check_bool(trans_a, "bmatmul: trans_a", GraphError),
                   trans_b=check_bool(trans_b, "bmatmul: trans_b", GraphError))


class Transpose(Op):
    """Axes permuted (``np.transpose``); gradient: the inverse permutation."""

    name = "transpose"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,), axes = node.inputs, node.attrs["axes"]
        if sorted(axes) != list(range(len(x.shape))):
            raise ShapeError(f"transpose axes {list(axes)} are not a permutation of the "
                             f"axes of {x.name}{list(x.shape)}")
        return tuple(x.shape[a] for a in axes), x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        np.copyto(out, np.transpose(inputs[0], node.attrs["axes"]))

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [transpose(grad, tuple(int(i) for i in np.argsort(node.attrs["axes"])))]


TRANSPOSE = Transpose()


def transpose(x: Node, axes: Sequence[int], name: str | None = None) -> Node:
    """``x`` with its axes permuted to ``axes``; ``x`` itself when the permutation is the identity."""
    x = as_node(x, what="transpose: x")
    if not isinstance(axes, (tuple, list)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axes):
        raise ShapeError(f"transpose: axes must be a list of integers, got {axes!r}")
    axes = tuple(int(a) for a in axes)
    return x if axes == tuple(range(len(x.shape))) else TRANSPOSE(x, name=name, axes=axes)


def causal(sq: int, sk: int) -> np.ndarray:
    """True where query ``i`` may not see key ``j`` (``j > i + sk - sq``: the future)."""
    return np.arange(sk)[None, :] > np.arange(sq)[:, None] + (sk - sq)


class CausalMask(Op):
    """``x`` with the future (last two axes, :func:`causal`) set to ``fill``; may run in place.

    The gradient reads no forward value: the mask follows from the shape. PyTorch's
    ``masked_fill`` saves its boolean mask (``sq x sk`` bytes, usually one buffer for all
    layers); memlab does not count it."""

    name = "causal_mask"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,) = node.inputs
        if len(x.shape) < 2 or x.dtype.kind != "f":
            raise ShapeError(f"causal_mask needs a float input of >= 2 axes (queries, keys), "
                             f"got {x.name}{list(x.shape)} {x.dtype}")
        if x.shape[-2] > x.shape[-1]:       # the first queries would see no key: rows of NaN
            raise ShapeError(f"causal_mask needs s_q <= s_k (queries, keys: the last two axes), "
                             f"got {x.shape[-2]} queries and {x.shape[-1]} keys in "
                             f"{x.name}{list(x.shape)}")
        return x.shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x = inputs[0]
        np.copyto(out, np.where(causal(*x.shape[-2:]), out.dtype.type(node.attrs["fill"]), x))

    inplace = staticmethod(same_memory_inputs)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [causal_mask(grad, fill=0.0)]


CAUSAL_MASK = CausalMask()


def causal_mask(x: Node, fill: float = -np.inf, name: str | None = None) -> Node:
    """Attention scores with each query's future keys set to ``fill`` (-inf: softmax gives 0)."""
    if not isinstance(fill, (int, float)) or isinstance(fill, bool) or np.isnan(fill):
        raise GraphError(f"causal_mask: fill must be a number, got {fill!r}")
    if np.isfinite(fill):
        check_number(fill, "causal_mask: fill", error=GraphError)
    return CAUSAL_MASK(as_node(x, what="causal_mask: x"), name=name, fill=float(fill))

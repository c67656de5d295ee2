"""Neural-network ops: softmax, cross-entropy, pooling and 1-D convolution.

``pool`` and ``conv`` are enough for the lecture's ``Pooling`` (p.22) and
``conv`` (p.23-25) graphs: both act along the last axis with stride 1 and
"same" zero padding, so they keep their input's shape, and neither may run
in place (each output element reads a window of neighbouring inputs).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...errors import FeedError, ShapeError, check_int
from ..node import Node, as_node, check_dtype, constant
from .base import Op
from .elementwise import sub
from .tensor import sum as reduce_sum


def _float(x: Node, what: str) -> None:
    if x.dtype.kind != "f":
        raise ShapeError(f"{what} needs floating-point input, got {x.name} of dtype {x.dtype}")


class Softmax(Op):
    """Softmax over the last axis, computed stably; may run in place. The gradient reads the
    output, ``s * (g - sum(g * s))``, as PyTorch's ``_softmax_backward_data(grad, result)``."""

    name = "softmax"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,) = node.inputs
        _float(x, "softmax")
        if not x.shape:
            raise ShapeError(f"softmax needs at least one axis, got scalar {x.name}")
        return x.shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x = inputs[0]
        np.subtract(x, x.max(axis=-1, keepdims=True), out=out)
        np.exp(out, out=out)
        out /= out.sum(axis=-1, keepdims=True)

    def inplace(self, node: Node) -> tuple[int, ...]:
        return (0,)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        s = node
        return [s * sub(grad, reduce_sum(grad * s, axis=-1, keepdims=True))]


class OneHot(Op):
    """Rows of the identity picked by integer labels: ``onehot(y, C)[i, y[i]] = 1``."""

    name = "onehot"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (y,) = node.inputs
        if y.dtype.kind not in "iu":
            raise ShapeError(f"onehot needs integer labels, got {y.name} of dtype {y.dtype}")
        return y.shape + (node.attrs["depth"],), np.dtype(node.attrs["dtype"])

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        y, depth = inputs[0], node.attrs["depth"]
        if y.size and (y.min() < 0 or y.max() >= depth):
            bad = y[(y < 0) | (y >= depth)].flat[0]
            raise FeedError(f"node {node.name!r}: label {bad} is outside [0, {depth})")
        out.fill(0)
        np.put_along_axis(out, y[..., None].astype(np.intp), 1, axis=-1)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [None]


class SoftmaxCrossEntropy(Op):
    """Mean over rows of ``-log softmax(logits)[label]``, for logits (N, C) and labels (N,).

    The gradient reads the logits and the labels. PyTorch's ``cross_entropy`` is ``log_softmax``
    then ``nll_loss``: it keeps log_softmax's output (N, C), the same bytes as the logits, and the
    labels; so the bytes agree, the value kept differs."""

    name = "softmax_xent"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        x, y = node.inputs
        _float(x, "softmax_cross_entropy")
        if len(x.shape) != 2 or y.shape != x.shape[:1] or y.dtype.kind not in "iu":
            raise ShapeError(f"softmax_cross_entropy needs logits (N, C) and integer labels (N,), "
                             f"got {x.name}{list(x.shape)} and {y.name}{list(y.shape)} {y.dtype}")
        return (), x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x, y = inputs
        n, c = x.shape
        if y.size and (y.min() < 0 or y.max() >= c):
            bad = y[(y < 0) | (y >= c)].flat[0]
            raise FeedError(f"node {node.name!r}: label {bad} is outside [0, {c})")
        m = x.max(axis=1, keepdims=True)
        lse = np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]
        out[...] = np.mean(lse - x[np.arange(n), y]) if n else 0

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        x, y = node.inputs
        n, c = x.shape
        return [sub(softmax(x), onehot(y, c, x.dtype)) * (grad * (1.0 / max(n, 1))), None]


class Pool(Op):
    """Average pooling along the last axis: odd ``window``, stride 1, zero padding.

    The operator is a symmetric matrix, so its gradient is the same pooling
    applied to the incoming gradient: it reads no forward value. PyTorch's ``avg_pool2d``
    saves its input all the same (``avg_pool2d_backward(grad, self, ...)`` reads only its shape);
    memlab does not keep it. Max pooling would keep what it selected (PyTorch: input and
    indices; the shape-only ``pool2d(kind="max")`` keeps input and output).
    """

    name = "pool"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,), w = node.inputs, node.attrs["window"]
        _float(x, "pool")
        if not x.shape or w < 1 or w % 2 == 0:
            raise ShapeError(f"pool needs an odd window >= 1 and an input with an axis; "
                             f"got window={w} for {x.name}{list(x.shape)}")
        return x.shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        w = node.attrs["window"]
        np.mean(_windows(inputs[0], w), axis=-1, out=out)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [pool(grad, node.attrs["window"])]


def _windows(x: np.ndarray, k: int) -> np.ndarray:
    """Sliding windows of ``k`` along the last axis of ``x`` zero-padded by k // 2."""
    r = k // 2
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(r, r)])
    return sliding_window_view(padded, k, axis=-1)


class Conv(Op):
    """1-D cross-correlation along the last axis, odd kernel, stride 1, zero padding.

    The gradient reads the input and the kernel (``conv_wgrad(x, g)`` and ``conv(g, flip(w))``),
    as PyTorch's ``convolution_backward(grad, input, weight, ...)`` does. ``attrs["workspace"]``
    (bytes, default 0) is the scratch an implementation holds while it runs
    (:func:`memlab.graph.set_workspace`)."""

    name = "conv"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        x, w = node.inputs
        _float(x, "conv")
        if not x.shape or len(w.shape) != 1 or w.shape[0] % 2 == 0:
            raise ShapeError(f"conv needs an input with an axis and a 1-D odd kernel, "
                             f"got {x.name}{list(x.shape)} and {w.name}{list(w.shape)}")
        return x.shape, np.result_type(x.dtype, w.dtype)

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x, w = inputs
        np.einsum("...k,k->...", _windows(x, w.shape[0]), w, out=out)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        x, w = node.inputs
        return [conv(grad, flip(w)), conv_wgrad(x, grad, w.shape[0])]


class Flip(Op):
    """A 1-D array reversed (the adjoint of correlation is correlation with the flipped kernel)."""

    name = "flip"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,) = node.inputs
        if len(x.shape) != 1:
            raise ShapeError(f"flip needs a 1-D input, got {x.name}{list(x.shape)}")
        return x.shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        np.copyto(out, inputs[0][::-1])

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [flip(grad)]


class ConvWeightGrad(Op):
    """The kernel gradient of :func:`conv`: ``dw[j] = sum_i g[..., i] x[..., i + j - k//2]``."""

    name = "conv_wgrad"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        x, g = node.inputs
        if x.shape != g.shape:
            raise ShapeError(f"conv_wgrad needs equal shapes, got {x.name}{list(x.shape)} and {g.name}{list(g.shape)}")
        return (node.attrs["k"],), np.result_type(x.dtype, g.dtype)

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x, g = inputs
        k, n = node.attrs["k"], x.shape[-1]
        np.einsum("bik,bi->k", _windows(x, k).reshape(-1, n, k), g.reshape(-1, n), out=out)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        x, g = node.inputs
        return [conv(g, flip(grad)), conv(x, grad)]


SOFTMAX, ONEHOT, SOFTMAX_XENT = Softmax(), OneHot(), SoftmaxCrossEntropy()
POOL, CONV, FLIP, CONV_WGRAD = Pool(), Conv(), Flip(), ConvWeightGrad()


def softmax(x: Node, name: str | None = None) -> Node:
    """Softmax over the last axis (its gradient reads its output, as PyTorch's does)."""
    return SOFTMAX(x, name=name)


def onehot(labels: Node, depth: int, dtype: Any = np.float32, name: str | None = None) -> Node:
    """One-hot rows of length ``depth`` for integer ``labels``."""
    return ONEHOT(labels, name=name, depth=check_int(depth, "onehot: depth", 1, ShapeError),
                  dtype=check_dtype(dtype, "onehot: dtype"))


def softmax_cross_entropy(logits: Node, labels: Node, name: str | None = None) -> Node:
    """Mean softmax cross-entropy of logits (N, C) against integer labels (N,)."""
    return SOFTMAX_XENT(logits, labels, name=name)


def pool(x: Node, window: int = 3, name: str | None = None) -> Node:
    """Average pooling along the last axis (the lecture's ``Pooling``; keeps the shape)."""
    return POOL(x, name=name, window=check_int(window, "pool: window", 1, ShapeError))


def conv(x: Node, w: Node | None = None, name: str | None = None) -> Node:
    """1-D "same" convolution of ``x`` (..., n) with an odd kernel ``w`` (k,).

    Without ``w``, a constant smoothing kernel [1/4, 1/2, 1/4], so the slides'
    one-input ``conv(A[1])`` can be written as it stands.
    """
    x = as_node(x, what="conv: x")
    if w is None:
        w = constant(np.array([0.25, 0.5, 0.25], dtype=x.dtype), name="kernel")
    return CONV(x, w, name=name)


def flip(x: Node, name: str | None = None) -> Node:
    """A 1-D node reversed."""
    return FLIP(x, name=name)


def conv_wgrad(x: Node, g: Node, k: int, name: str | None = None) -> Node:
    """Gradient of ``conv(x, w)`` with respect to a kernel of length ``k``."""
    return CONV_WGRAD(x, g, name=name, k=int(k))

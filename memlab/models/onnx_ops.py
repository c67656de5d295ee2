"""The ONNX ops memlab's own ops do not already cover, each with compute and a gradient that
builds new nodes: ``Gemm``, ``Softmax`` along an axis, ``Sum`` of several inputs, and the log-loss
that ends a training step on a network whose output is a probability (:mod:`.onnx_import`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import FeedError, ShapeError
from ..graph import Node, Op, matmul, mul, sum_to
from ..graph.ops.base import broadcast_shape, same_memory_inputs


class Gemm(Op):
    """``alpha * op(A) @ op(B) + beta * C`` (ONNX ``Gemm``; ``C`` broadcasts, as a bias)."""

    name = "gemm"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        a, b, *c = node.inputs
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise ShapeError(f"gemm needs 2-D A and B, got {a.name}{list(a.shape)} and "
                             f"{b.name}{list(b.shape)}")
        n, k1 = a.shape[::-1] if node.attrs["trans_a"] else a.shape
        k2, m = b.shape[::-1] if node.attrs["trans_b"] else b.shape
        if k1 != k2:
            raise ShapeError(f"gemm inner dimensions differ: {a.name}{list(a.shape)} and "
                             f"{b.name}{list(b.shape)} (trans_a={node.attrs['trans_a']}, "
                             f"trans_b={node.attrs['trans_b']})")
        if c:
            try:
                np.broadcast_shapes(c[0].shape, (n, m))
            except ValueError:
                raise ShapeError(f"gemm's C {c[0].name}{list(c[0].shape)} does not broadcast "
                                 f"to ({n}, {m})") from None
        return (n, m), a.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        a, b, *c = inputs
        at = a.T if node.attrs["trans_a"] else a
        bt = b.T if node.attrs["trans_b"] else b
        out[...] = node.attrs["alpha"] * (at @ bt) + (node.attrs["beta"] * c[0] if c else 0)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        alpha, beta = node.attrs["alpha"], node.attrs["beta"]
        g = grad if alpha == 1 else mul(grad, alpha)
        a, b = node.inputs[:2]
        ta, tb = node.attrs["trans_a"], node.attrs["trans_b"]
        grads: list[Node | None] = [  # as product_gradients: no explicit transposes
            matmul(b, g, trans_a=tb, trans_b=True) if ta else matmul(g, b, trans_b=not tb),
            matmul(g, a, trans_a=True, trans_b=ta) if tb else matmul(a, g, trans_a=not ta)]
        if len(node.inputs) == 3:
            c = node.inputs[2]
            grads.append(sum_to(grad if beta == 1 else mul(grad, beta), c.shape))
        return grads


def _rows(x: np.ndarray, axis: int, coerce: bool) -> np.ndarray:
    """``x`` as rows to normalise: before opset 13 ONNX flattens the axes from ``axis`` on."""
    if coerce:
        return x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)
    return np.moveaxis(x, axis, -1)


class SoftmaxAxis(Op):
    """Softmax along ``axis`` (``coerce``: over all axes from ``axis`` on, ONNX before opset 13)."""

    name = "softmax"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,) = node.inputs
        if x.dtype.kind != "f" or not -len(x.shape) <= node.attrs["axis"] < len(x.shape):
            raise ShapeError(f"softmax needs a floating-point input with axis "
                             f"{node.attrs['axis']}, got {x.name}{list(x.shape)}")
        return x.shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        axis, coerce = node.attrs["axis"] % out.ndim, node.attrs["coerce"]
        r = _rows(inputs[0].astype(np.float64), axis, coerce)
        e = np.exp(r - r.max(axis=-1, keepdims=True))
        e /= e.sum(axis=-1, keepdims=True)
        out[...] = e.reshape(out.shape) if coerce else np.moveaxis(e, -1, axis)

    def inplace(self, node: Node) -> tuple[int, ...]:
        return (0,)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [SOFTMAX_GRAD(grad, node, axis=node.attrs["axis"], coerce=node.attrs["coerce"])]


class SoftmaxGrad(Op):
    """Softmax's input gradient from grad and the output y: ``y * (g - sum(g * y))`` per row."""

    name = "softmax_grad"
    inplace = staticmethod(lambda node: (0,))

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return node.inputs[1].shape, node.inputs[1].dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        axis, coerce = node.attrs["axis"] % out.ndim, node.attrs["coerce"]
        g, y = (_rows(a.astype(np.float64), axis, coerce) for a in inputs)
        d = y * (g - (g * y).sum(axis=-1, keepdims=True))
        out[...] = d.reshape(out.shape) if coerce else np.moveaxis(d, -1, axis)


class AddN(Op):
    """The sum of several inputs (ONNX ``Sum``), broadcasting; may run in place."""

    name = "add_n"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        if not node.inputs:
            raise ShapeError("add_n needs at least one input")
        return broadcast_shape(node.inputs), np.result_type(*(x.dtype for x in node.inputs))

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        total = np.zeros(out.shape, dtype=np.float64)
        for a in inputs:
            total += a
        out[...] = total

    inplace = staticmethod(same_memory_inputs)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [sum_to(grad, x.shape) if x.shape != grad.shape else grad for x in node.inputs]


class LogLoss(Op):
    """``-mean(log p[i, label[i]])`` for probabilities p (N, C) and integer labels (N,)."""

    name = "log_loss"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        p, y = node.inputs
        if len(p.shape) != 2 or y.shape != p.shape[:1] or y.dtype.kind not in "iu":
            raise ShapeError(f"log_loss needs probabilities (N, C) and integer labels (N,), got "
                             f"{p.name}{list(p.shape)} and {y.name}{list(y.shape)} {y.dtype}")
        return (), p.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        p, y = _checked(node, inputs)
        out[...] = -np.mean(np.log(p[np.arange(len(y)), y])) if len(y) else 0

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        p, y = node.inputs
        return [LOG_LOSS_GRAD(p, y, grad), None]


def _checked(node: Node, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    p, y = inputs[0], inputs[1]
    if y.size and (y.min() < 0 or y.max() >= p.shape[1]):
        bad = y[(y < 0) | (y >= p.shape[1])].flat[0]
        raise FeedError(f"node {node.name!r}: label {bad} is outside [0, {p.shape[1]})")
    return p, y


class LogLossGrad(Op):
    """The log-loss's gradient: ``-grad / (N p[i, label[i]])`` at each label, zero elsewhere."""

    name = "log_loss_grad"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return node.inputs[0].shape, node.inputs[0].dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        p, y = _checked(node, inputs)
        rows = np.arange(len(y))
        out.fill(0)
        out[rows, y] = -inputs[2] / (max(len(y), 1) * p[rows, y])


GEMM, SOFTMAX_GRAD, ADD_N = Gemm(), SoftmaxGrad(), AddN()
SOFTMAX_AXIS, LOG_LOSS, LOG_LOSS_GRAD = SoftmaxAxis(), LogLoss(), LogLossGrad()

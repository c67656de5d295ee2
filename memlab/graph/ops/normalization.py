"""Normalisation across channels of ``(N, C, ...)`` arrays: local response normalisation
(AlexNet, GoogLeNet) and batch normalisation with given statistics, with gradients.

As ONNX defines them (``LRN``, ``BatchNormalization``), so that imported networks run
(:func:`memlab.models.from_onnx`). LRN's backward reads its input and output (as Caffe's and
cuDNN's do); batch normalisation's backward reads its input for the scale's gradient, like a
training-mode batch norm that keeps its input for the backward pass (cuDNN also keeps the
batch's mean and inverse deviation, C numbers each, which memlab leaves out). With given
statistics (``mean``, ``var``: ONNX's inference form) the values are those of ONNX's reference
evaluator; a training-mode batch norm computes them from the batch instead, with the same shapes.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...errors import ShapeError, check_int, check_number
from ..node import Node
from .base import Op
from .tensor import sum as reduce_sum


def _window_sum(a: np.ndarray, before: int, after: int) -> np.ndarray:
    """``s[:, c] = sum(a[:, c - before : c + after + 1])`` along axis 1 (zero outside)."""
    pad = [(0, 0)] * a.ndim
    pad[1] = (before, after)
    c = np.cumsum(np.pad(a, pad), axis=1)
    c = np.concatenate([np.zeros_like(c[:, :1]), c], axis=1)
    k = before + after + 1
    return c[:, k:] - c[:, :-k]


def _lrn_scale(x: np.ndarray, node: Node) -> np.ndarray:
    a = node.attrs
    lo, hi = (a["size"] - 1) // 2, a["size"] // 2
    return a["bias"] + a["alpha"] / a["size"] * _window_sum(x.astype(np.float64) ** 2, lo, hi)


class LRN(Op):
    """``y = x / (bias + alpha / size * sum of x**2 over size neighbouring channels) ** beta``."""

    name = "lrn"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,) = node.inputs
        if x.dtype.kind != "f" or len(x.shape) < 2:
            raise ShapeError(f"lrn needs a floating-point (N, C, ...) input, got "
                             f"{x.name}{list(x.shape)}")
        return x.shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x = inputs[0]
        out[...] = x * _lrn_scale(x, node) ** -node.attrs["beta"]

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        a = node.attrs
        return [LRN_DX(grad, node.inputs[0], node, size=a["size"], alpha=a["alpha"], beta=a["beta"],
                       bias=a["bias"])]


class LRNDx(Op):
    """LRN's input gradient from grad, x and y: ``g s**-beta - 2 alpha beta / size * x *
    (sum over the channels whose window holds c of g y / s)``."""

    name = "lrn_dx"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return node.inputs[1].shape, node.inputs[1].dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        g, x, y = inputs
        a = node.attrs
        s = _lrn_scale(x, node)
        lo, hi = (a["size"] - 1) // 2, a["size"] // 2
        back = _window_sum(g * y / s, hi, lo)  # the transposed window
        out[...] = g * s ** -a["beta"] - 2 * a["alpha"] * a["beta"] / a["size"] * x * back


def _per_channel(p: np.ndarray, ndim: int) -> np.ndarray:
    return p.reshape((1, -1) + (1,) * (ndim - 2))


def _inv_std(var: np.ndarray, eps: float, ndim: int) -> np.ndarray:
    return _per_channel(1.0 / np.sqrt(var.astype(np.float64) + eps), ndim)


class BatchNorm(Op):
    """``y = scale * (x - mean) / sqrt(var + eps) + bias`` per channel (axis 1)."""

    name = "batchnorm"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        x, *stats = node.inputs
        if x.dtype.kind != "f" or len(x.shape) < 2 or len(stats) != 4 or \
                any(s.shape != x.shape[1:2] for s in stats):
            raise ShapeError(f"batchnorm needs an (N, C, ...) input and scale, bias, mean, var of "
                             f"shape (C,), got {x.name}{list(x.shape)} and "
                             f"{[list(s.shape) for s in stats]}")
        return x.shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x, scale, bias, mean, var = inputs
        d = x.ndim
        out[...] = (x - _per_channel(mean, d)) * _inv_std(var, node.attrs["eps"], d) \
            * _per_channel(scale, d) + _per_channel(bias, d)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        x, scale, bias, mean, var = node.inputs
        eps = node.attrs["eps"]
        axes = tuple(i for i in range(len(x.shape)) if i != 1)
        return [BATCHNORM_GRAD(grad, scale, var, eps=eps, wrt="x"),
                BATCHNORM_GRAD(grad, x, mean, var, eps=eps, wrt="scale"),
                reduce_sum(grad, axis=axes), None, None]


class BatchNormGrad(Op):
    """Batch norm's gradients: ``wrt="x"`` reads grad, scale and var; ``wrt="scale"`` reads grad,
    x, mean and var (the statistics count as given, as ONNX's inference form has them)."""

    name = "batchnorm_grad"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        g = node.inputs[0]
        return (g.shape if node.attrs["wrt"] == "x" else g.shape[1:2]), g.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        g, *rest = inputs
        d, eps = g.ndim, node.attrs["eps"]
        if node.attrs["wrt"] == "x":
            scale, var = rest
            out[...] = g * _per_channel(scale, d) * _inv_std(var, eps, d)
        else:
            x, mean, var = rest
            xhat = (x - _per_channel(mean, d)) * _inv_std(var, eps, d)
            out[...] = (g * xhat).sum(axis=tuple(i for i in range(d) if i != 1))


LRN_OP, LRN_DX, BATCHNORM, BATCHNORM_GRAD = LRN(), LRNDx(), BatchNorm(), BatchNormGrad()


def lrn(x: Node, size: int, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0,
        name: str | None = None) -> Node:
    """Local response normalisation across ``size`` channels (ONNX ``LRN``)."""
    size = check_int(size, "lrn: size", 1, ShapeError)
    return LRN_OP(x, name=name, size=size,
                  alpha=check_number(alpha, "lrn: alpha", 0, error=ShapeError),
                  beta=check_number(beta, "lrn: beta", 0, error=ShapeError),
                  bias=check_number(bias, "lrn: bias", above=0, error=ShapeError))


def batchnorm(x: Node, scale: Node, bias: Node, mean: Node, var: Node, eps: float = 1e-5,
              name: str | None = None) -> Node:
    """Batch normalisation of ``x`` (N, C, ...) with per-channel statistics (ONNX's form)."""
    return BATCHNORM(x, scale, bias, mean, var, name=name,
                     eps=check_number(eps, "batchnorm: eps", above=0, error=ShapeError))

"""Transformer layer ops: layer normalisation, GELU and dropout with a stored mask.

Each forward op's gradient reads only what Korthikanti et al. 2022 ("Reducing Activation
Recomputation in Large Transformer Models", section 4.1) count as stored: layernorm reads its
input (its mean and deviation are recomputed), GELU its input, dropout its **mask**, a value of
one byte per element built by its own op (OpenNMT's notes, "noise in a dropout cell"). So a planner's
liveness on a transformer layer sees the paper's terms one by one.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ...errors import GraphError, ShapeError, check_int, check_number
from ..node import Node, as_node, constant
from .base import Op, same_memory_inputs
from .elementwise import sum_to


def _float(x: Node, what: str) -> None:
    if x.dtype.kind != "f":
        raise ShapeError(f"{what} needs floating-point input, got {x.name} of dtype {x.dtype}")


def _normalised(x: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """``(x - mean) / sqrt(var + eps)`` over the last axis, and ``1 / sqrt(var + eps)``."""
    mu = x.mean(axis=-1, keepdims=True)
    centred = x - mu
    rstd = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)
    return centred * rstd, rstd


class LayerNorm(Op):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis (Ba et al. 2016).

    The gradient reads the input and ``gamma``, and recomputes the mean and deviation. PyTorch's
    ``native_layer_norm`` also saves them (``mean`` and ``rstd``: two floats per row, besides
    input, weight and bias): memlab keeps 8 bytes per row fewer, a difference of 2 / hidden."""

    name = "layernorm"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        x, gamma, beta = node.inputs
        _float(x, "layernorm")
        h = x.shape[-1:] if x.shape else None
        if h is None or gamma.shape != h or beta.shape != h:
            raise ShapeError(f"layernorm needs gamma and beta shaped like the last axis of "
                             f"{x.name}{list(x.shape)}, got {gamma.name}{list(gamma.shape)} and "
                             f"{beta.name}{list(beta.shape)}")
        return x.shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x, gamma, beta = inputs
        xhat, _ = _normalised(x, node.attrs["eps"])
        np.add(xhat * gamma, beta, out=out)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        x, gamma, beta = node.inputs
        eps = node.attrs["eps"]
        return [LAYERNORM_DX(x, gamma, grad, eps=eps), LAYERNORM_DGAMMA(x, grad, eps=eps),
                sum_to(grad, beta.shape)]


class LayerNormDx(Op):
    """The input gradient of :func:`layernorm`, from its input (statistics recomputed)."""

    name = "layernorm_dx"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return node.inputs[0].shape, node.inputs[0].dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x, gamma, g = inputs
        xhat, rstd = _normalised(x, node.attrs["eps"])
        gy = g * gamma
        out[...] = rstd * (gy - gy.mean(-1, keepdims=True)
                           - xhat * (gy * xhat).mean(-1, keepdims=True))


class LayerNormDgamma(Op):
    """The scale gradient of :func:`layernorm`: ``sum over rows of g * xhat``."""

    name = "layernorm_dgamma"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return node.inputs[0].shape[-1:], node.inputs[0].dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x, g = inputs
        xhat, _ = _normalised(x, node.attrs["eps"])
        np.copyto(out, (g * xhat).reshape(-1, x.shape[-1]).sum(axis=0))


LAYERNORM, LAYERNORM_DX, LAYERNORM_DGAMMA = LayerNorm(), LayerNormDx(), LayerNormDgamma()


def layernorm(x: Node, gamma: Node, beta: Node, eps: float = 1e-5, name: str | None = None
              ) -> Node:
    """Layer normalisation of ``x`` over its last axis; the backward pass reads only ``x``."""
    return LAYERNORM(x, gamma, beta, name=name,
                     eps=check_number(eps, "layernorm: eps", above=0, error=GraphError))


_C = math.sqrt(2.0 / math.pi)


def _gelu(x: np.ndarray, out: np.ndarray) -> None:
    t = np.tanh(_C * (x + 0.044715 * x ** 3))
    np.multiply(0.5 * x, 1.0 + t, out=out)


def _gelu_grad(x: np.ndarray, g: np.ndarray, out: np.ndarray) -> None:
    t = np.tanh(_C * (x + 0.044715 * x ** 3))
    d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _C * (1.0 + 3 * 0.044715 * x * x)
    np.multiply(g, d, out=out)


class Gelu(Op):
    """GELU, tanh form (Hendrycks and Gimpel 2016; GPT-2): its backward reads its input, as
    PyTorch's ``gelu_backward(grad, self, approximate)``."""

    name = "gelu"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        _float(node.inputs[0], "gelu")
        return node.inputs[0].shape, node.inputs[0].dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        _gelu(inputs[0], out)

    inplace = staticmethod(same_memory_inputs)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [GELU_GRAD(node.inputs[0], grad)]


class GeluGrad(Op):
    """``g * gelu'(x)``: the gradient of :func:`gelu` as a node."""

    name = "gelu_grad"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return node.inputs[1].shape, node.inputs[1].dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        _gelu_grad(inputs[0], inputs[1], out)

    inplace = staticmethod(same_memory_inputs)


GELU, GELU_GRAD = Gelu(), GeluGrad()


def gelu(x: Node, name: str | None = None) -> Node:
    """The Gaussian error linear unit, tanh approximation (as GPT-2 computes it)."""
    return GELU(x, name=name)


class DropoutMask(Op):
    """A mask of 0s and 1s (one byte each), 1 with probability ``1 - p``, drawn from the integer
    ``seed`` input and the op's ``key``: a stored value, not recomputable without the seed."""

    name = "dropout_mask"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (seed,) = node.inputs
        if seed.shape != () or seed.dtype.kind not in "iu":
            raise ShapeError(f"dropout_mask needs an integer scalar seed, got "
                             f"{seed.name}{list(seed.shape)} {seed.dtype}")
        return tuple(node.attrs["shape"]), np.dtype(np.uint8)

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        rng = np.random.default_rng([int(inputs[0]) % 2**63, node.attrs["key"]])
        np.greater_equal(rng.random(out.shape), node.attrs["p"], out=out, casting="unsafe")

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [None]


class MaskedScale(Op):
    """``x * mask / (1 - p)``: dropout applied with a stored mask; its gradient is itself, and
    reads only the mask, as PyTorch's ``native_dropout_backward(grad, mask, scale)`` (a bool mask,
    one byte per element)."""

    name = "dropout"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        x, mask = node.inputs
        _float(x, "dropout")
        if mask.shape != x.shape:
            raise ShapeError(f"dropout mask {mask.name}{list(mask.shape)} is not shaped like "
                             f"{x.name}{list(x.shape)}")
        return x.shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x, mask = inputs
        np.multiply(x, mask, out=out)
        out *= out.dtype.type(1.0 / (1.0 - node.attrs["p"]))

    def inplace(self, node: Node) -> tuple[int, ...]:
        return (0,)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [MASKED_SCALE(grad, node.inputs[1], p=node.attrs["p"]), None]


DROPOUT_MASK, MASKED_SCALE = DropoutMask(), MaskedScale()


def dropout(x: Node, p: float, seed: Node | int = 0, key: int = 0, name: str | None = None
            ) -> Node:
    """Dropout of rate ``p`` (Srivastava et al. 2014): ``x`` itself when ``p == 0``, else
    ``x * mask / (1 - p)`` with ``mask = dropout_mask(seed)`` (``y.inputs[1]``), one byte per
    element. ``seed`` is an integer scalar node (fed anew each step) or an int; ``key`` tells
    apart the masks of one graph."""
    x = as_node(x, what="dropout: x")
    p = check_number(p, "dropout: p", low=0, error=GraphError)
    if p >= 1:
        raise GraphError(f"dropout: p must be in [0, 1), got {p!r}")
    if p == 0:
        return x
    seed = seed if isinstance(seed, Node) else constant(
        np.int64(check_int(seed, "dropout: seed", 0, GraphError)))
    mask = DROPOUT_MASK(seed, name=None if name is None else name + ".mask", shape=x.shape,
                        p=p, key=check_int(key, "dropout: key", 0, GraphError))
    return MASKED_SCALE(x, mask, name=name, p=p)

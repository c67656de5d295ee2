"""Elementwise ops: add, sub, mul, div, copy, neg, exp, log, sigmoid, tanh, relu.

All may run in place (lecture 7, p.19): an elementwise op reads each input
element once, before it writes the same output element. Binary ops broadcast
like numpy (scalars and biases); the gradient of a broadcast input is summed
back to its shape with :func:`sum_to`.

What each gradient reads is what PyTorch saves for it (``tools/autograd/derivatives.yaml``):
an op whose derivative can be written with its **output** reads its output -- exp
(``grad * result``), sigmoid (``sigmoid_backward(grad, result)``), tanh
(``tanh_backward(grad, result)``) and relu (``threshold_backward(grad, result, 0)``, saved as
``result`` by ``ReluBackward0``) -- so the input may die, or be overwritten in place, when the
forward op has run. mul and div read their **inputs** (``grad * other``, ``grad / other`` and
``-grad * self / (other * other)``), log its input (``grad / self``); add, sub, neg and copy read
nothing. :func:`memlab.graph.saved_for_backward` reads this off the gradient graph.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ...errors import ShapeError
from ..node import Node
from .base import Op, broadcast_shape, result_dtype, same_memory_inputs

Grad = Callable[[Node, Node], list]


class Elementwise(Op):
    """An elementwise op given by a numpy ufunc-like function and a gradient rule."""

    def __init__(self, name: str, fn: Callable[..., Any], grad: Grad, arity: int) -> None:
        self.name, self.fn, self.grad, self.arity = name, fn, grad, arity

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        if len(node.inputs) != self.arity:
            raise ShapeError(f"{self.name} takes {self.arity} input(s), got {len(node.inputs)}")
        dtype = result_dtype(node.inputs)
        if dtype.kind != "f":
            raise ShapeError(f"{self.name} needs floating-point inputs, got {dtype}")
        return broadcast_shape(node.inputs), dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        self.fn(*inputs, out=out)

    #: an elementwise op may overwrite any input of its output's shape and dtype (p.19)
    inplace = staticmethod(same_memory_inputs)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        gs = self.grad(node, grad)
        return [None if g is None else sum_to(g, x.shape) for g, x in zip(gs, node.inputs)]


def _sigmoid(x: np.ndarray, out: np.ndarray) -> None:
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)


def _relu(x: np.ndarray, out: np.ndarray) -> None:
    np.maximum(x, 0, out=out)


def _relu_grad(x: np.ndarray, g: np.ndarray, out: np.ndarray) -> None:
    np.multiply(g, x > 0, out=out)


ADD = Elementwise("add", np.add, lambda n, g: [g, g], 2)
SUB = Elementwise("sub", np.subtract, lambda n, g: [g, neg(g)], 2)
MUL = Elementwise("mul", np.multiply, lambda n, g: [g * n.inputs[1], g * n.inputs[0]], 2)
DIV = Elementwise("div", np.divide, lambda n, g: [g / n.inputs[1], neg(g * n.inputs[0] / (
    n.inputs[1] * n.inputs[1]))], 2)
COPY = Elementwise("copy", np.positive, lambda n, g: [g], 1)
NEG = Elementwise("neg", np.negative, lambda n, g: [neg(g)], 1)
EXP = Elementwise("exp", np.exp, lambda n, g: [g * n], 1)
LOG = Elementwise("log", np.log, lambda n, g: [g / n.inputs[0]], 1)
SIGMOID = Elementwise("sigmoid", _sigmoid, lambda n, g: [g * (n * (1.0 - n))], 1)
TANH = Elementwise("tanh", np.tanh, lambda n, g: [g * (1.0 - n * n)], 1)
# relu's gradient reads its output, as PyTorch's ReluBackward0 does: y > 0 exactly where x > 0, so
# g * (y > 0) is g * (x > 0). It is itself an op, so gradients of gradients work.
RELU = Elementwise("relu", _relu, lambda n, g: [relu_grad(n, g)], 1)
RELU_GRAD = Elementwise("relu_grad", _relu_grad, lambda n, g: [None, relu_grad(n.inputs[0], g)], 2)


def add(a: Any, b: Any, name: str | None = None) -> Node:
    """a + b, broadcasting."""
    return ADD(a, b, name=name)


def sub(a: Any, b: Any, name: str | None = None) -> Node:
    """a - b, broadcasting."""
    return SUB(a, b, name=name)


def mul(a: Any, b: Any, name: str | None = None) -> Node:
    """a * b, broadcasting; the gradient reads both inputs (PyTorch: ``grad * other``,
    ``grad * self``)."""
    return MUL(a, b, name=name)


def div(a: Any, b: Any, name: str | None = None) -> Node:
    """a / b, broadcasting; the gradient reads both inputs, as PyTorch's does (``grad / other``,
    ``-grad * self / (other * other)``), not the output."""
    return DIV(a, b, name=name)


def copy(x: Node, name: str | None = None) -> Node:
    """A copy of ``x`` in storage of its own (a module that keeps its own input, OpenNMT)."""
    return COPY(x, name=name)


def neg(x: Node, name: str | None = None) -> Node:
    """-x."""
    return NEG(x, name=name)


def exp(x: Node, name: str | None = None) -> Node:
    """e**x; the gradient reads the output, ``g * y`` (PyTorch: ``grad * result``)."""
    return EXP(x, name=name)


def log(x: Node, name: str | None = None) -> Node:
    """Natural logarithm; the gradient reads the input, ``g / x`` (PyTorch: ``grad / self``)."""
    return LOG(x, name=name)


def sigmoid(x: Node, name: str | None = None) -> Node:
    """1 / (1 + e**-x); its gradient reads the output: g * y * (1 - y) (PyTorch:
    ``sigmoid_backward(grad, result)``)."""
    return SIGMOID(x, name=name)


def tanh(x: Node, name: str | None = None) -> Node:
    """Hyperbolic tangent; the gradient reads the output: g * (1 - y**2) (PyTorch:
    ``tanh_backward(grad, result)``)."""
    return TANH(x, name=name)


def relu(x: Node, name: str | None = None) -> Node:
    """max(x, 0); the gradient reads the **output**: g where y > 0 (PyTorch's ``ReluBackward0``
    saves ``result``: ``threshold_backward(grad, result, 0)``), so relu may run in place over
    its input and the two share one block."""
    return RELU(x, name=name)


def relu_grad(x: Node, g: Node, name: str | None = None) -> Node:
    """g where x > 0, else 0: the gradient of relu as a graph node (relu passes its output as
    ``x``: it is positive exactly where relu's input is)."""
    return RELU_GRAD(x, g, name=name)


class BroadcastTo(Op):
    """Repeat ``x`` to a larger shape (numpy rules); gradient: :func:`sum_to`."""

    name = "broadcast_to"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,), shape = node.inputs, tuple(node.attrs["shape"])
        try:
            if np.broadcast_shapes(x.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ShapeError(f"cannot broadcast {x.name}{list(x.shape)} to {list(shape)}") from None
        return shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        np.copyto(out, np.broadcast_to(inputs[0], out.shape))

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [sum_to(grad, node.inputs[0].shape)]


class SumTo(Op):
    """Sum ``x`` down to a shape it was broadcast from; gradient: :func:`broadcast_to`."""

    name = "sum_to"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,), shape = node.inputs, tuple(node.attrs["shape"])
        try:
            if np.broadcast_shapes(x.shape, shape) != x.shape:
                raise ValueError
        except ValueError:
            raise ShapeError(f"cannot sum {x.name}{list(x.shape)} to {list(shape)}") from None
        return shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        np.copyto(out, self._summed(inputs[0], out.shape))

    accumulates = True

    def add_into(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        out += self._summed(inputs[0], out.shape)

    @staticmethod
    def _summed(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                          if n == 1 and x.shape[lead + i] != 1)
        return np.sum(x, axis=axes).reshape(shape)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [broadcast_to(grad, node.inputs[0].shape)]


BROADCAST_TO, SUM_TO = BroadcastTo(), SumTo()


def broadcast_to(x: Node, shape: Sequence[int], name: str | None = None) -> Node:
    """``x`` repeated to ``shape``; a no-op (returns ``x``) when shapes match."""
    return x if tuple(shape) == x.shape else BROADCAST_TO(x, name=name, shape=tuple(shape))


def sum_to(x: Node, shape: Sequence[int], name: str | None = None) -> Node:
    """``x`` summed to ``shape``; a no-op (returns ``x``) when shapes match."""
    return x if tuple(shape) == x.shape else SUM_TO(x, name=name, shape=tuple(shape))

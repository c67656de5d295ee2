"""The op interface: compute, shape inference, in-place permission, gradient.

Following CSE599G1 assignment 1, an op is an object whose ``gradient``
returns *new graph nodes*: differentiation extends the graph (lecture 7,
p.6 "autodiff by extending the graph"), so the backward pass is a graph
that a memory planner can see (p.26-27).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...errors import ShapeError
from ..node import CONSTANT, PLACEHOLDER, Node, Op


class FullOp(Op):
    """An array of one value (``ones_like`` seeds the backward pass)."""

    name = "full"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return tuple(node.attrs["shape"]), np.dtype(node.attrs.get("dtype", np.float32))

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        out.fill(node.attrs["value"])

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return []


def full(shape: Sequence[int], value: float, dtype: Any = np.float32, name: str | None = None) -> Node:
    """A computed array of ``shape`` filled with ``value``."""
    return Node(FULL, (), name=name, attrs={"shape": tuple(shape), "value": value, "dtype": np.dtype(dtype)})


def ones_like(x: Node, name: str | None = None) -> Node:
    """Ones with ``x``'s shape and dtype (no data dependency on ``x``)."""
    return full(x.shape, 1.0, x.dtype, name=name)


FULL = FullOp()


def weak(x: Node) -> bool:
    """A 0-d constant takes the dtype of the other operand (like ``x + 3``)."""
    return x.op is CONSTANT and x.shape == ()


def result_dtype(inputs: Sequence[Node]) -> np.dtype:
    """Dtype of an elementwise result, ignoring weak scalar constants."""
    strong = [x.dtype for x in inputs if not weak(x)] or [x.dtype for x in inputs]
    return np.result_type(*strong)


def broadcast_shape(inputs: Sequence[Node]) -> tuple[int, ...]:
    """Numpy broadcasting of the inputs' shapes, or ShapeError naming them."""
    try:
        return tuple(np.broadcast_shapes(*(x.shape for x in inputs)))
    except ValueError:
        shapes = ", ".join(f"{x.name}{list(x.shape)}" for x in inputs)
        raise ShapeError(f"shapes do not broadcast: {shapes}") from None


def same_memory_inputs(node: Node) -> tuple[int, ...]:
    """Inputs with exactly the output's shape and dtype: candidates for in-place."""
    shape, dtype = node.shape, node.dtype     # locals, ``is`` first: the planner asks this per op
    same = []
    for i, x in enumerate(node.inputs):
        if x.shape == shape and (x.dtype is dtype or x.dtype == dtype):
            same.append(i)
    return tuple(same)

"""Gradients accumulated in place: ``acc + part`` computed by adding ``part`` into ``acc``.

A parameter shared by every timestep replica gets one gradient contribution per replica. Summed
with ``add`` nodes, each contribution is a value of its own; OpenNMT (OpenNMT's notes, "Sharing
parameters") and MXNet (``kAddTo``) instead let each replica's gradient op add straight into
the one gradient buffer. :func:`accumulate` builds that fused node when the contribution's op
can add into an output (``op.accumulates``: matmul, embedding gradients, bias sums), and the
node may run in place on the accumulator, so a plan can keep a single buffer.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...errors import GraphError, ShapeError
from ..node import Node
from .base import Op
from .elementwise import add


class Accumulate(Op):
    """``acc + part``, where ``part`` (the node ``attrs["part"]``) is computed by adding it
    into the output; its inputs are ``acc`` followed by ``part``'s inputs."""

    name = "accumulate"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        acc, part = node.inputs[0], node.attrs["part"]
        if acc.shape != part.shape or acc.dtype != part.dtype:
            raise ShapeError(f"accumulate: {acc.name}{list(acc.shape)} {acc.dtype} and "
                             f"{part.name}{list(part.shape)} {part.dtype} differ")
        return acc.shape, acc.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        if out is not inputs[0]:
            np.copyto(out, inputs[0])
        part = node.attrs["part"]
        part.op.add_into(part, inputs[1:], out)

    def inplace(self, node: Node) -> tuple[int, ...]:
        return (0,)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        part = node.attrs["part"]
        return [grad, *part.op.gradient(part, grad)]


ACCUMULATE = Accumulate()


def accumulate(acc: Node, part: Node, name: str | None = None) -> Node:
    """``acc + part`` with ``part`` added into the accumulator by its own op when it can
    (a fused add-to), else a plain ``add``. ``part`` must have no other reader."""
    for what, x in (("acc", acc), ("part", part)):
        if not isinstance(x, Node):
            raise GraphError(f"accumulate: {what} must be a Node, got {type(x).__name__} {x!r:.60}")
    if not part.op.accumulates:
        return add(acc, part, name=name)
    return ACCUMULATE(acc, *part.inputs, name=name, part=part)

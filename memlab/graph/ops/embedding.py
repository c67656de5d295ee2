"""Embedding lookup: rows of a table picked by integer ids, and its gradient (a scatter-add).

A sequence-to-sequence model turns each token id into a vector with a lookup table (OpenNMT's
``LookupTable``; the encoder and decoder of :func:`memlab.models.seq2seq`). The gradient with
respect to the table adds each row of the incoming gradient into the row its id picked, so a
token seen twice in a batch gets both contributions; ids get no gradient.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...errors import FeedError, ShapeError
from ..node import Node
from .base import Op


def _check_ids(node: Node, ids: np.ndarray, rows: int) -> None:
    if ids.size and (ids.min() < 0 or ids.max() >= rows):
        bad = ids[(ids < 0) | (ids >= rows)].flat[0]
        raise FeedError(f"node {node.name!r}: id {bad} is outside the table's rows [0, {rows})")


class Embedding(Op):
    """``table[ids]``: a table (V, D) and integer ids (N,) give (N, D). The gradient reads the ids,
    as PyTorch's ``embedding_backward(grad, indices, ...)``."""

    name = "embedding"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        table, ids = node.inputs
        if len(table.shape) != 2 or table.dtype.kind != "f":
            raise ShapeError(f"embedding needs a float table (V, D), got {table.name}"
                             f"{list(table.shape)} {table.dtype}")
        if len(ids.shape) != 1 or ids.dtype.kind not in "iu":
            raise ShapeError(f"embedding needs integer ids (N,), got {ids.name}{list(ids.shape)} "
                             f"{ids.dtype}")
        return (ids.shape[0], table.shape[1]), table.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        table, ids = inputs
        _check_ids(node, ids, table.shape[0])
        np.take(table, ids, axis=0, out=out)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        table, ids = node.inputs
        return [embedding_grad(grad, ids, table.shape[0]), None]


class EmbeddingGrad(Op):
    """The table's gradient: zeros (V, D), with row ``g[i]`` added into row ``ids[i]``."""

    name = "embedding_grad"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        g, ids = node.inputs
        if len(g.shape) != 2 or ids.shape != g.shape[:1]:
            raise ShapeError(f"embedding_grad needs a gradient (N, D) and ids (N,), got "
                             f"{g.name}{list(g.shape)} and {ids.name}{list(ids.shape)}")
        return (node.attrs["rows"], g.shape[1]), g.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        g, ids = inputs
        _check_ids(node, ids, out.shape[0])
        out.fill(0)
        self.add_into(node, inputs, out)

    accumulates = True

    def add_into(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        g, ids = inputs
        _check_ids(node, ids, out.shape[0])
        np.add.at(out, ids, g)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [embedding(grad, node.inputs[1]), None]


EMBEDDING, EMBEDDING_GRAD = Embedding(), EmbeddingGrad()


def embedding(table: Node, ids: Node, name: str | None = None) -> Node:
    """Rows of ``table`` (V, D) picked by integer ``ids`` (N,): a lookup table."""
    return EMBEDDING(table, ids, name=name)


def embedding_grad(grad: Node, ids: Node, rows: int, name: str | None = None) -> Node:
    """Gradient of :func:`embedding` with respect to a table of ``rows`` rows."""
    if not isinstance(rows, (int, np.integer)) or rows < 1:
        raise ShapeError(f"embedding_grad: rows must be a positive int, got {rows!r}")
    return EMBEDDING_GRAD(grad, ids, name=name, rows=int(rows))

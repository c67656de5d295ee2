"""Embedding kernels and gradients accumulated in place (lesson 10's model on the device).

:func:`gather` gives one thread to each element of the output: ``out[i, j] = table[ids[i], j]``.
:func:`scatter_add` adds row ``g[i]`` into row ``ids[i]`` of ``out`` with atomic additions, since
two ids may name the same row. :func:`accumulate` runs memlab's ``accumulate`` node
(:mod:`memlab.graph.ops.accumulate`): the accumulator copied into the output (a no-op when the
plan put them in one place), then the contribution added into it by its own kernel (a matrix
product with ``beta = 1``, a scatter-add, or a bias sum). Ids out of range are flagged on the
device and reported as a :class:`~memlab.errors.FeedError`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from numba import cuda

from ..errors import DeviceError, ShapeError
from .device import block_size, blocks_for, check_f32, check_shape, flat
from .elementwise import binary, unary
from .matmul import matmul
from .nn import _check_labels, _flag
from .reduce import sum_to


@cuda.jit
def _gather_kernel(table, ids, out, d, rows, flag):
    i = cuda.grid(1)
    if i < out.size:
        r = ids[i // d]
        if r < 0 or r >= rows:
            flag[0] = 1
            flag[1] = r
        else:
            out[i] = table[r * d + i % d]


@cuda.jit
def _scatter_add_kernel(g, ids, out, d, rows, flag):
    i = cuda.grid(1)
    if i < g.size:
        r = ids[i // d]
        if r < 0 or r >= rows:
            flag[0] = 1
            flag[1] = r
        else:
            cuda.atomic.add(out, r * d + i % d, g[i])


def _rows_cols(table_shape: Sequence[int], ids: Any, other: Any, what: str) -> tuple[int, int]:
    if len(table_shape) != 2 or len(ids.shape) != 1:
        raise ShapeError(f"{what} needs a table (V, D) and ids (N,), got {list(table_shape)} "
                         f"and {list(ids.shape)}")
    rows, d = int(table_shape[0]), int(table_shape[1])
    check_shape(f"{what}'s rows", other, (int(ids.shape[0]), d))
    return rows, d


def _by_rows(kernel: Any, rows_src: Any, ids: Any, dst: Any, table_shape: Sequence[int],
             per_id: Any, what: str) -> None:
    """Launch a row kernel over the (N, D) array ``per_id``, ids checked against the table."""
    check_f32("src", rows_src)
    check_f32("out", dst)
    rows, d = _rows_cols(tuple(table_shape), ids, per_id, what)
    n, flag = int(np.prod(per_id.shape, dtype=np.int64)), _flag()
    if n:
        t = block_size()
        kernel[blocks_for(n, t), t](flat(rows_src), ids, flat(dst), d, rows, flag)
        _check_labels(flag, rows, what)


def gather(table: Any, ids: Any, out: Any, what: str = "embedding") -> None:
    """``out = table[ids]``: rows of ``table`` (V, D) picked by integer ``ids`` (N,)."""
    _by_rows(_gather_kernel, table, ids, out, table.shape, out, what)


def scatter_add(g: Any, ids: Any, out: Any, what: str = "embedding_grad") -> None:
    """``out[ids[i]] += g[i]`` for every row ``i`` of ``g`` (N, D); ``out`` is (V, D)."""
    _by_rows(_scatter_add_kernel, g, ids, out, out.shape, g, what)


def _add_sum_to(x: Any, out: Any) -> None:
    """``out += x`` summed to ``out``'s shape: the sum goes to a small scratch array first (a
    bias gradient: one vector), then is added in."""
    scratch = cuda.device_array(tuple(out.shape), np.float32)
    sum_to(x, scratch)
    binary("add", out, scratch, out)


#: how each contribution's op adds into an output: (node attrs, inputs, out) -> None
ADD_INTO: dict[str, Callable[[dict, Sequence[Any], Any], None]] = {
    "matmul": lambda a, xs, out: matmul(xs[0], xs[1], out, a["trans_a"], a["trans_b"], add=True),
    "embedding_grad": lambda a, xs, out: scatter_add(xs[0], xs[1], out),
    "sum_to": lambda a, xs, out: _add_sum_to(xs[0], out),
}


def accumulate(part_op: str, attrs: dict, inputs: Sequence[Any], out: Any) -> None:
    """``out = inputs[0] + part(*inputs[1:])``, the part added into ``out`` by its own kernel."""
    if part_op not in ADD_INTO:
        raise DeviceError(f"no CUDA kernel adds a {part_op!r} into its output; the device "
                          f"accumulates {', '.join(ADD_INTO)}")
    unary("identity", inputs[0], out)
    ADD_INTO[part_op](attrs, inputs[1:], out)

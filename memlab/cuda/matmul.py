"""Tiled matrix product in shared memory: ``out = op(a) @ op(b)``, op transposing when asked.

The output is cut into ``tile x tile`` tiles, one block of ``tile x tile`` threads per tile, one
thread per output element. The block walks along the inner dimension one tile at a time: each
thread loads one element of ``a``'s tile and one of ``b``'s into shared memory, the block waits
(``syncthreads``), every thread adds ``tile`` products from shared memory to its sum, the block
waits again, and the next pair of tiles comes in. Each element of ``a`` and ``b`` is read from
global memory ``n / tile`` times instead of ``n`` times. Elements past the edges load as zeros,
so any size works. :func:`tile_schedule` lists the steps for the lesson's picture.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from numba import cuda, float32

from ..errors import ShapeError
from .device import check_f32, check_shape, simulator


def default_tile() -> int:
    """Tile edge: 16 on a GPU (256 threads a block), 8 in the simulator (each thread there is a
    Python thread; a 64 x 64 product with 16 x 16 tiles takes seconds)."""
    return 8 if simulator() else 16


@lru_cache(maxsize=None)
def matmul_kernel(tile: int) -> Any:
    """The tiled kernel for ``tile x tile`` blocks (compiled once per tile size)."""

    @cuda.jit
    def kernel(a, b, out, trans_a, trans_b, inner, add):
        sa = cuda.shared.array((tile, tile), float32)
        sb = cuda.shared.array((tile, tile), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        row = cuda.blockIdx.y * tile + ty
        col = cuda.blockIdx.x * tile + tx
        n, m = out.shape[0], out.shape[1]
        acc = float32(0)
        for t0 in range(0, inner, tile):
            k = t0 + tx                                  # a's tile: rows of out, columns k
            v = float32(0)
            if row < n and k < inner:
                v = a[k, row] if trans_a else a[row, k]
            sa[ty, tx] = v
            k = t0 + ty                                  # b's tile: rows k, columns of out
            v = float32(0)
            if k < inner and col < m:
                v = b[col, k] if trans_b else b[k, col]
            sb[ty, tx] = v
            cuda.syncthreads()
            for j in range(tile):
                acc += sa[ty, j] * sb[j, tx]
            cuda.syncthreads()
        if row < n and col < m:
            out[row, col] = out[row, col] + acc if add else acc
    return kernel


def matmul_shape(a_shape: tuple[int, ...], b_shape: tuple[int, ...], trans_a: bool = False,
                 trans_b: bool = False) -> tuple[int, int, int]:
    """``(n, inner, m)`` of ``op(a) @ op(b)``, or :class:`ShapeError`."""
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ShapeError(f"matmul needs 2-D inputs, got {list(a_shape)} and {list(b_shape)}")
    n, k1 = a_shape[::-1] if trans_a else a_shape
    k2, m = b_shape[::-1] if trans_b else b_shape
    if k1 != k2:
        raise ShapeError(f"matmul inner dimensions differ: {list(a_shape)} (trans_a={trans_a}) "
                         f"and {list(b_shape)} (trans_b={trans_b})")
    return int(n), int(k1), int(m)


def matmul(a: Any, b: Any, out: Any, trans_a: bool = False, trans_b: bool = False,
           tile: int | None = None, add: bool = False) -> None:
    """``out = op(a) @ op(b)`` with the tiled kernel (``tile``: default :func:`default_tile`);
    with ``add``, ``out += op(a) @ op(b)`` (a GEMM with ``beta = 1``: gradients accumulated)."""
    for name, v in (("a", a), ("b", b), ("out", out)):
        check_f32(name, v)
    n, inner, m = matmul_shape(tuple(a.shape), tuple(b.shape), trans_a, trans_b)
    check_shape("matmul's out", out, (n, m))
    tile = tile or default_tile()
    if n and m:
        grid = (-(-m // tile), -(-n // tile))
        matmul_kernel(tile)[grid, (tile, tile)](a, b, out, bool(trans_a), bool(trans_b), inner,
                                                 bool(add))


def tile_schedule(n: int, inner: int, m: int, tile: int) -> list[dict[str, Any]]:
    """The steps the kernel takes, in order, for the lesson's stepper: for every output tile
    (block ``by, bx``) and every inner tile ``t``, the rows, columns and inner range loaded."""
    steps = []
    for by in range(-(-n // tile)):
        for bx in range(-(-m // tile)):
            for t in range(max(1, -(-inner // tile))):
                steps.append({"block": (by, bx), "t": t,
                              "rows": (by * tile, min(n, (by + 1) * tile)),
                              "cols": (bx * tile, min(m, (bx + 1) * tile)),
                              "inner": (t * tile, min(inner, (t + 1) * tile))})
    return steps


def global_reads(n: int, inner: int, m: int, tile: int | None) -> int:
    """Elements read from global memory: ``2 n m inner`` without tiles (each thread reads a row
    and a column), ``n m inner (1/tile + 1/tile)`` padded to whole tiles with them."""
    if not tile:
        return 2 * n * m * inner
    bn, bm, bk = (-(-v // tile) for v in (n, m, inner))
    return bn * bm * bk * 2 * tile * tile

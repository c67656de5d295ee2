"""Elementwise kernels: one thread per output element, inputs broadcast like numpy.

A launch covers the output with blocks of :func:`~memlab.cuda.device.block_size` threads
(``cuda.grid(1)`` is the element a thread owns). Broadcasting costs nothing: an input's stride is 0
along an axis it is broadcast over, so a scalar or a bias vector is read, not copied. Shapes are
padded to :data:`MAXDIM` axes so each kernel compiles once. The same strided copy places an
input inside a larger output, which gives concat, slice and pad.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np
from numba import cuda

from ..errors import DeviceError, ShapeError
from .device import block_size, blocks_for, check_f32, check_shape, flat

MAXDIM = 4  #: most axes an elementwise operand may have


@cuda.jit(device=True)
def strided(i, shape, stride):
    """Offset of the ``i``-th element (row-major over ``shape``) in memory with ``stride``."""
    off = 0
    for d in range(len(shape) - 1, -1, -1):
        off += (i % shape[d]) * stride[d]
        i //= shape[d]
    return off


def _pad(shape: Sequence[int], stride: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if len(shape) > MAXDIM:
        raise ShapeError(f"the CUDA kernels take at most {MAXDIM} axes, got shape {list(shape)}")
    k = MAXDIM - len(shape)
    return (1,) * k + tuple(int(n) for n in shape), (0,) * k + tuple(int(s) for s in stride)


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a row-major array of ``shape``."""
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= int(n)
    return tuple(reversed(out))


def broadcast_strides(shape: Sequence[int], to: Sequence[int]) -> tuple[int, ...]:
    """Strides reading a row-major ``shape`` as if broadcast to ``to`` (0 on broadcast axes)."""
    try:
        if np.broadcast_shapes(tuple(shape), tuple(to)) != tuple(to):
            raise ValueError
    except ValueError:
        raise ShapeError(f"shape {list(shape)} does not broadcast to {list(to)}") from None
    lead = len(to) - len(shape)
    own = contiguous_strides(shape)
    return tuple(0 if d < lead or shape[d - lead] != to[d] else own[d - lead] for d in range(len(to)))


# -- the scalar functions ------------------------------------------------------------------------
@cuda.jit(device=True)
def _identity(x):
    return x


@cuda.jit(device=True)
def _neg(x):
    return -x


@cuda.jit(device=True)
def _exp(x):
    return math.exp(x)


@cuda.jit(device=True)
def _log(x):
    return math.log(x)


@cuda.jit(device=True)
def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


@cuda.jit(device=True)
def _tanh(x):
    return math.tanh(x)


@cuda.jit(device=True)
def _relu(x):
    return x if x > 0 else 0.0


@cuda.jit(device=True)
def _add(a, b):
    return a + b


@cuda.jit(device=True)
def _sub(a, b):
    return a - b


@cuda.jit(device=True)
def _mul(a, b):
    return a * b


@cuda.jit(device=True)
def _div(a, b):
    return a / b


@cuda.jit(device=True)
def _relu_grad(x, g):
    return g if x > 0 else 0.0


UNARY: dict[str, Callable] = {"identity": _identity, "neg": _neg, "exp": _exp, "log": _log,
                              "sigmoid": _sigmoid, "tanh": _tanh, "relu": _relu}
BINARY: dict[str, Callable] = {"add": _add, "sub": _sub, "mul": _mul, "div": _div,
                               "relu_grad": _relu_grad}


# -- the kernels, one per scalar function (compiled on first use) --------------------------------
@lru_cache(maxsize=None)
def unary_kernel(name: str) -> Any:
    """``dst[dbase + i@dstride] = f(src[sbase + i@sstride])`` for every ``i < count``."""
    f = UNARY[name]

    @cuda.jit
    def kernel(src, sbase, sstride, dst, dbase, dstride, shape, count):
        i = cuda.grid(1)
        if i < count:
            dst[dbase + strided(i, shape, dstride)] = f(src[sbase + strided(i, shape, sstride)])
    return kernel


@lru_cache(maxsize=None)
def binary_kernel(name: str) -> Any:
    """``out[i] = f(a[i@astride], b[i@bstride])`` for every element ``i`` of a contiguous out."""
    f = BINARY[name]

    @cuda.jit
    def kernel(a, astride, b, bstride, out, shape):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = f(a[strided(i, shape, astride)], b[strided(i, shape, bstride)])
    return kernel


@cuda.jit
def _fill_kernel(out, value):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = value


def _launch(kernel: Any, count: int, *args: Any) -> None:
    if count:
        t = block_size()
        kernel[blocks_for(count, t), t](*args)


# -- launchers ----------------------------------------------------------------------------------
def fill(out: Any, value: float) -> None:
    """Every element of ``out`` set to ``value``."""
    check_f32("out", out)
    _launch(_fill_kernel, int(np.prod(out.shape, dtype=np.int64)), flat(out), np.float32(value))


def unary(name: str, x: Any, out: Any) -> None:
    """``out = f(x)`` with ``f`` one of :data:`UNARY` (``x`` broadcast to ``out``'s shape)."""
    if name not in UNARY:
        raise DeviceError(f"no unary CUDA kernel {name!r}; known: {', '.join(UNARY)}")
    check_f32("x", x)
    check_f32("out", out)
    shape, sstride = _pad(out.shape, broadcast_strides(x.shape, out.shape))
    _, dstride = _pad(out.shape, contiguous_strides(out.shape))
    _launch(unary_kernel(name), math.prod(shape), flat(x), 0, sstride, flat(out), 0, dstride,
            shape, math.prod(shape))


def binary(name: str, a: Any, b: Any, out: Any) -> None:
    """``out = f(a, b)`` with ``f`` one of :data:`BINARY`; ``a`` and ``b`` broadcast like numpy
    (a scalar, a bias row) to ``out``'s shape, which must be their broadcast shape."""
    if name not in BINARY:
        raise DeviceError(f"no binary CUDA kernel {name!r}; known: {', '.join(BINARY)}")
    for arg, v in (("a", a), ("b", b), ("out", out)):
        check_f32(arg, v)
    try:
        shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise ShapeError(f"{name}: shapes {list(a.shape)} and {list(b.shape)} do not broadcast") \
            from None
    check_shape(f"{name}'s out", out, shape)
    padded, astride = _pad(shape, broadcast_strides(a.shape, shape))
    _, bstride = _pad(shape, broadcast_strides(b.shape, shape))
    _launch(binary_kernel(name), math.prod(padded), flat(a), astride, flat(b), bstride,
            flat(out), padded)


def _copy_block(small: Any, big: Any, axis: int, start: int, into_big: bool, what: str) -> None:
    """Copy between ``small`` and the block of ``big`` at ``start`` along ``axis`` (same shape
    on the other axes): into ``big`` when ``into_big``, else out of it into ``small``."""
    check_f32("x", small if into_big else big)
    check_f32("out", big if into_big else small)
    if len(small.shape) != len(big.shape) or any(
            (m != n if d != axis else m + start > n)
            for d, (m, n) in enumerate(zip(small.shape, big.shape))):
        raise ShapeError(f"cannot {what} {list(small.shape)} at {start} along axis {axis} "
                         f"of {list(big.shape)}")
    bstride = contiguous_strides(big.shape)
    shape, sstride = _pad(small.shape, contiguous_strides(small.shape))
    _, blocked = _pad(small.shape, bstride)
    offset = start * bstride[axis]
    if into_big:
        args = (flat(small), 0, sstride, flat(big), offset, blocked)
    else:
        args = (flat(big), offset, blocked, flat(small), 0, sstride)
    _launch(unary_kernel("identity"), math.prod(shape), *args, shape, math.prod(shape))


def place(x: Any, out: Any, axis: int, start: int) -> None:
    """Copy ``x`` into ``out`` at ``start`` along ``axis`` (same shape on the other axes)."""
    _copy_block(x, out, axis, start, True, "place")


def take(x: Any, out: Any, axis: int, start: int) -> None:
    """``out = x[..., start:start + out.shape[axis], ...]`` along ``axis``."""
    _copy_block(out, x, axis, start, False, "take")

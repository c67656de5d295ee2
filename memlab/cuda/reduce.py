"""Reductions in shared memory: sum and mean over all axes or some, one block per output element.

Each thread of a block adds up a strided share of the reduced elements, writes its partial sum to
the block's shared memory, and the block halves the number of active threads until thread 0
holds the total (a tree reduction, :func:`block_sum`; ``cuda.syncthreads()`` between rounds, no
warp shuffles, so the simulator runs it too). Which input elements feed an output element is
given by the kept axes' and the reduced axes' shapes and strides, so one kernel serves
``sum``, ``mean`` (the total times ``1/count``) and ``sum_to`` (the gradient of broadcasting).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Sequence

import numpy as np
from numba import cuda, float32

from ..errors import ShapeError
from .device import check_f32, check_shape, flat, grid_limit, simulator
from .elementwise import MAXDIM, _pad, contiguous_strides, strided


def reduce_threads() -> int:
    """Threads per reducing block (a power of two): 128 on a GPU, 8 in the simulator (a thread is
    a Python thread there; a reduction's block syncs once per halving round)."""
    return 8 if simulator() else 128


@cuda.jit(device=True)
def block_sum(s, t):
    """Tree-sum the block's shared array ``s`` (length a power of two) into ``s[0]``."""
    step = s.shape[0] // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2


@cuda.jit(device=True)
def block_max(s, t):
    """Tree-max of the block's shared array ``s`` into ``s[0]``."""
    step = s.shape[0] // 2
    while step > 0:
        if t < step and s[t + step] > s[t]:
            s[t] = s[t + step]
        cuda.syncthreads()
        step //= 2


@lru_cache(maxsize=None)
def reduce_kernel(threads: int) -> Any:
    """The reduction kernel for blocks of ``threads`` threads (compiled once per size)."""

    @cuda.jit
    def kernel(x, out, kshape, kstride, rshape, rstride, count, scale):
        s = cuda.shared.array(threads, float32)
        t = cuda.threadIdx.x
        for j in range(cuda.blockIdx.x, out.size, cuda.gridDim.x):   # block-stride over outputs
            base = strided(j, kshape, kstride)
            acc = float32(0)
            for k in range(t, count, threads):
                acc += x[base + strided(k, rshape, rstride)]
            s[t] = acc
            cuda.syncthreads()
            block_sum(s, t)
            if t == 0:
                out[j] = s[0] * scale
            cuda.syncthreads()
    return kernel


def reduce_axes(x: Any, out: Any, axes: Sequence[int], mean: bool = False) -> None:
    """``out`` = sum (or mean) of ``x`` over ``axes``; ``out`` has ``x``'s shape without those axes,
    with or without size-1 placeholders (keepdims)."""
    check_f32("x", x)
    check_f32("out", out)
    nd = len(x.shape)
    axes = sorted({a % nd if -nd <= a < nd else _bad_axis(a, x) for a in axes})
    kept = [d for d in range(nd) if d not in axes]
    want = [x.shape[d] for d in kept]
    keep = [1 if d in axes else x.shape[d] for d in range(nd)]
    if list(out.shape) not in (want, keep):
        check_shape("out", out, want)
    stride = contiguous_strides(x.shape)
    kshape, kstride = _pad([x.shape[d] for d in kept], [stride[d] for d in kept])
    rshape, rstride = _pad([x.shape[d] for d in axes], [stride[d] for d in axes])
    count = math.prod(rshape)
    scale = 1.0 / max(count, 1) if mean else 1.0
    n_out = math.prod(kshape)
    if n_out == 0:
        return
    t = reduce_threads()
    reduce_kernel(t)[min(n_out, grid_limit()), t](flat(x), flat(out), kshape, kstride, rshape, rstride,
                                          count, np.float32(scale))


def tree_rounds(x: Sequence[float], threads: int | None = None) -> list[np.ndarray]:
    """The shared array ``s`` of one reducing block after each round, the rule of
    :func:`reduce_kernel` and :func:`block_sum` written in numpy (for the lesson's picture; the
    tests hold it to the kernel): round 0 holds each thread's strided partial sum (thread ``t`` adds
    ``x[t], x[t + threads], ...``); each later round halves the working threads, ``s[t] +=
    s[t + step]`` for ``t < step``, until ``s[0]`` holds the total. ``threads``: a power of two
    (default :func:`reduce_threads`)."""
    threads = reduce_threads() if threads is None else threads
    if not isinstance(threads, int) or threads < 1 or threads & (threads - 1):
        raise ShapeError(f"tree_rounds: threads must be a power of two >= 1, got {threads!r}")
    values = np.asarray(x, dtype=np.float32).ravel()
    shared = np.zeros(threads, np.float32)
    for t in range(threads):
        for v in values[t::threads]:          # sequentially, in float32, as each thread does
            shared[t] = np.float32(shared[t] + v)
    rounds = [shared.copy()]
    step = threads // 2
    while step > 0:
        shared[:step] = shared[:step] + shared[step:2 * step]
        rounds.append(shared.copy())
        step //= 2
    return rounds


def _bad_axis(a: int, x: Any) -> int:
    raise ShapeError(f"axis {a} is out of range for shape {list(x.shape)}")


def reduce_all(x: Any, out: Any, mean: bool = False) -> None:
    """``out`` (one element) = sum (or mean) of every element of ``x``."""
    reduce_axes(x, out, range(len(x.shape)), mean)


def sum_to(x: Any, out: Any) -> None:
    """Sum ``x`` down to ``out``'s shape, which ``x`` was broadcast from (a bias gradient)."""
    check_f32("x", x)
    try:
        ok = np.broadcast_shapes(tuple(x.shape), tuple(out.shape)) == tuple(x.shape)
    except ValueError:
        ok = False
    if not ok or len(out.shape) > MAXDIM:
        raise ShapeError(f"cannot sum shape {list(x.shape)} to {list(out.shape)}")
    lead = len(x.shape) - len(out.shape)
    axes = list(range(lead)) + [lead + i for i, n in enumerate(out.shape)
                                if n == 1 and x.shape[lead + i] != 1]
    reduce_axes(x, out.reshape(tuple(x.shape[d] for d in range(len(x.shape)) if d not in axes))
                if axes else out, axes)

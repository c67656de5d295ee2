"""Neural-network kernels: softmax, one-hot, softmax cross-entropy (forward and backward),
average pooling and the 1-D convolution with its gradients.

Row-wise kernels give one block to a row and reduce in shared memory (:func:`block_max`,
:func:`block_sum`); window kernels (pooling, convolution) give one thread to an output element.
Labels out of range are flagged on the device and reported as a
:class:`~memlab.errors.FeedError` after the launch, as the numpy ops do.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from numba import cuda, float32

from ..errors import FeedError, ShapeError
from .device import block_size, blocks_for, check_f32, check_shape, flat, grid_limit
from .reduce import block_max, block_sum, reduce_threads


def _rows(x: Any) -> tuple[int, int]:
    if not x.shape:
        raise ShapeError("a row-wise kernel needs at least one axis, got a scalar")
    c = int(tuple(x.shape)[-1])
    return int(np.prod(tuple(x.shape)[:-1], dtype=np.int64)), c


@lru_cache(maxsize=None)
def _softmax_kernel(threads: int) -> Any:
    @cuda.jit
    def kernel(x, out, rows, c):
        s = cuda.shared.array(threads, float32)
        t = cuda.threadIdx.x
        for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
            base = r * c
            m = -math.inf
            for k in range(t, c, threads):
                m = max(m, x[base + k])
            s[t] = m
            cuda.syncthreads()
            block_max(s, t)
            m = s[0]
            cuda.syncthreads()
            acc = float32(0)
            for k in range(t, c, threads):
                e = math.exp(x[base + k] - m)
                out[base + k] = e
                acc += e
            s[t] = acc
            cuda.syncthreads()
            block_sum(s, t)
            total = s[0]
            for k in range(t, c, threads):
                out[base + k] /= total
            cuda.syncthreads()
    return kernel


def softmax(x: Any, out: Any) -> None:
    """Softmax over the last axis, stably (the row's maximum subtracted first)."""
    check_f32("x", x)
    check_f32("out", out)
    check_shape("softmax's out", out, x.shape)
    rows, c = _rows(x)
    if rows and c:
        t = reduce_threads()
        _softmax_kernel(t)[min(rows, grid_limit()), t](flat(x), flat(out), rows, c)


@lru_cache(maxsize=1)
def _flag_buffer() -> Any:
    return cuda.device_array(2, np.int64)


def _flag() -> Any:
    """A small device array, allocated once, where a kernel flags a label out of range."""
    flag = _flag_buffer()
    flag.copy_to_device(np.zeros(2, np.int64))
    return flag


def _check_labels(flag: Any, depth: int, what: str) -> None:
    bad = flag.copy_to_host()
    if bad[0]:
        raise FeedError(f"{what}: label {int(bad[1])} is outside [0, {depth})")


@cuda.jit
def _onehot_kernel(labels, out, depth, flag):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // depth, i % depth
        y = labels[r]
        if y < 0 or y >= depth:
            flag[0] = 1
            flag[1] = y
        out[i] = float32(1) if y == c else float32(0)


def onehot(labels: Any, out: Any, what: str = "onehot") -> None:
    """``out[i, labels[i]] = 1``, zeros elsewhere; ``out`` has shape ``labels.shape + (depth,)``."""
    check_f32("out", out)
    depth = int(tuple(out.shape)[-1]) if out.shape else 0
    check_shape("onehot's out", out, tuple(labels.shape) + (depth,))
    flag = _flag()
    n = int(np.prod(out.shape, dtype=np.int64))
    if n:
        t = block_size()
        _onehot_kernel[blocks_for(n, t), t](flat(labels), flat(out), depth, flag)
        _check_labels(flag, depth, what)


@cuda.jit(device=True)
def _row_lse(x, base, c):
    """log-sum-exp of one row, computed stably by one thread."""
    m = -math.inf
    for k in range(c):
        m = max(m, x[base + k])
    acc = float32(0)
    for k in range(c):
        acc += math.exp(x[base + k] - m)
    return math.log(acc) + m


@lru_cache(maxsize=None)
def _xent_kernel(threads: int) -> Any:
    @cuda.jit
    def kernel(x, labels, out, n, c, flag):
        s = cuda.shared.array(threads, float32)
        t = cuda.threadIdx.x
        acc = float32(0)
        for r in range(t, n, threads):                   # one thread a row
            y = labels[r]
            if y < 0 or y >= c:
                flag[0] = 1
                flag[1] = y
            else:
                acc += _row_lse(x, r * c, c) - x[r * c + y]
        s[t] = acc
        cuda.syncthreads()
        block_sum(s, t)
        if t == 0:
            out[0] = s[0] / n if n > 0 else float32(0)
    return kernel


def _xent_shapes(x: Any, labels: Any) -> tuple[int, int]:
    if len(x.shape) != 2 or tuple(labels.shape) != tuple(tuple(x.shape)[:1]):
        raise ShapeError(f"softmax cross-entropy needs logits (N, C) and labels (N,), got "
                         f"{list(x.shape)} and {list(labels.shape)}")
    return int(x.shape[0]), int(x.shape[1])


def softmax_xent(x: Any, labels: Any, out: Any, what: str = "softmax_xent") -> None:
    """``out`` (one element) = mean over rows of ``logsumexp(x[i]) - x[i, labels[i]]``: one block,
    a thread per row, the rows' losses summed in shared memory."""
    check_f32("logits", x)
    check_f32("out", out)
    n, c = _xent_shapes(x, labels)
    check_shape("softmax_xent's out", out, () if not out.shape else (1,))
    flag = _flag()
    t = reduce_threads()
    _xent_kernel(t)[1, t](flat(x), flat(labels), flat(out), n, c, flag)
    _check_labels(flag, c, what)


@cuda.jit
def _xent_grad_kernel(x, labels, g, out, n, c, flag):
    r = cuda.grid(1)
    if r < n:
        y = labels[r]
        if y < 0 or y >= c:
            flag[0] = 1
            flag[1] = y
        base = r * c
        lse = _row_lse(x, base, c)
        scale = g[0] / n
        for k in range(c):
            p = math.exp(x[base + k] - lse)
            out[base + k] = (p - (float32(1) if k == y else float32(0))) * scale


def softmax_xent_backward(x: Any, labels: Any, g: Any, out: Any) -> None:
    """Gradient of :func:`softmax_xent` with respect to the logits, fused:
    ``out = (softmax(x) - onehot(labels)) * g / N``, one thread a row."""
    for name, v in (("logits", x), ("g", g), ("out", out)):
        check_f32(name, v)
    n, c = _xent_shapes(x, labels)
    check_shape("the gradient", out, x.shape)
    flag = _flag()
    if n:
        t = block_size()
        _xent_grad_kernel[blocks_for(n, t), t](flat(x), flat(labels), flat(g), flat(out), n, c, flag)
        _check_labels(flag, c, "softmax_xent_backward")


@cuda.jit
def _window_kernel(x, w, weighted, out, length, k, scale):
    """``out[.., j] = scale * sum_t w[t] x[.., j + t - k//2]`` (``w[t] = 1`` unless ``weighted``),
    zeros past the ends."""
    i = cuda.grid(1)
    if i < out.size:
        row, j = i // length, i % length
        acc = float32(0)
        for t in range(k):
            p = j + t - k // 2
            if 0 <= p < length:
                acc += (w[t] if weighted else float32(1)) * x[row * length + p]
        out[i] = acc * scale


def _window(x: Any, w: Any | None, out: Any, k: int, scale: float) -> None:
    check_f32("x", x)
    check_f32("out", out)
    check_shape("out", out, x.shape)
    if not x.shape or k < 1 or k % 2 == 0:
        raise ShapeError(f"a window kernel needs an odd window and an input with an axis, "
                         f"got window {k} for {list(x.shape)}")
    n = int(np.prod(x.shape, dtype=np.int64))
    if n:
        t = block_size()
        _window_kernel[blocks_for(n, t), t](flat(x), flat(x) if w is None else w, w is not None,
                                            flat(out), int(tuple(x.shape)[-1]), k, np.float32(scale))


def pool(x: Any, out: Any, window: int = 3) -> None:
    """Average pooling along the last axis: odd ``window``, stride 1, zero padding (the mean of
    each window counts the padded zeros, as the numpy op does)."""
    _window(x, None, out, window, 1.0 / max(window, 1))


def conv(x: Any, w: Any, out: Any) -> None:
    """1-D "same" cross-correlation of ``x`` along its last axis with an odd kernel ``w``."""
    check_f32("w", w)
    if len(w.shape) != 1:
        raise ShapeError(f"conv needs a 1-D kernel, got shape {list(w.shape)}")
    _window(x, w, out, int(w.shape[0]), 1.0)


@cuda.jit
def _flip_kernel(x, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[out.size - 1 - i]


def flip(x: Any, out: Any) -> None:
    """A 1-D array reversed."""
    check_f32("x", x)
    check_f32("out", out)
    if len(x.shape) != 1:
        raise ShapeError(f"flip needs a 1-D input, got shape {list(x.shape)}")
    check_shape("flip's out", out, x.shape)
    if x.shape[0]:
        t = block_size()
        _flip_kernel[blocks_for(x.shape[0], t), t](x, out)


@lru_cache(maxsize=None)
def _wgrad_kernel(threads: int) -> Any:
    @cuda.jit
    def kernel(x, g, out, length, total):
        s = cuda.shared.array(threads, float32)
        t, j = cuda.threadIdx.x, cuda.blockIdx.x       # one block per kernel tap j
        k = out.size
        acc = float32(0)
        for i in range(t, total, threads):
            p = i % length + j - k // 2
            if 0 <= p < length:
                acc += g[i] * x[i - i % length + p]
        s[t] = acc
        cuda.syncthreads()
        block_sum(s, t)
        if t == 0:
            out[j] = s[0]
    return kernel


def conv_wgrad(x: Any, g: Any, out: Any) -> None:
    """Kernel gradient of :func:`conv`: ``out[j] = sum g[.., i] x[.., i + j - k//2]``."""
    for name, v in (("x", x), ("g", g), ("out", out)):
        check_f32(name, v)
    check_shape("g", g, x.shape)
    if len(out.shape) != 1 or out.shape[0] % 2 == 0 or not x.shape:
        raise ShapeError(f"conv_wgrad needs an odd 1-D out and an input with an axis, got "
                         f"{list(out.shape)} and {list(x.shape)}")
    t = reduce_threads()
    _wgrad_kernel(t)[int(out.shape[0]), t](flat(x), flat(g), out, int(tuple(x.shape)[-1]),
                                            int(np.prod(x.shape, dtype=np.int64)))

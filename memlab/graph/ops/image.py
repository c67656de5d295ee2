"""Image ops on ``(N, C, H, W)`` arrays: 2-D convolution and max / average pooling, with gradients.

What ONNX's ``Conv``, ``MaxPool`` and ``AveragePool`` compute (groups, strides, pads, dilations,
``ceil_mode``, ``count_include_pad``), written with numpy as one loop over the kernel's
positions, so that real networks imported from ONNX files (:func:`memlab.models.from_onnx`) run
as well as plan. Each backward op reads what cuDNN's does: the convolution's data gradient reads
the weight, its weight gradient the input; max pooling's gradient reads input and output
(to find each window's maximum), average pooling's only the incoming gradient.
Pads are ``(top, left, bottom, right)``, ONNX's order.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from ...errors import ShapeError, check_bool
from ..node import Node, as_node
from .base import Op

Pair = tuple[int, int]
_GEOMETRY = ("kernel", "strides", "pads", "dilations", "group", "kind", "ceil", "count_include_pad")


def _geometry_attrs(node: Node) -> dict:
    """The attributes a gradient op needs (not the forward op's own, such as its workspace)."""
    return {k: node.attrs[k] for k in _GEOMETRY if k in node.attrs}


def _float(x: Node, what: str) -> None:
    if x.dtype.kind != "f" or len(x.shape) != 4:
        raise ShapeError(f"{what} needs a floating-point (N, C, H, W) input, "
                         f"got {x.name}{list(x.shape)} {x.dtype}")


def out_size(size: int, k: int, stride: int, before: int, after: int, dilation: int = 1,
             ceil: bool = False) -> int:
    """Output length of a window ``k`` (dilated) sliding with ``stride`` over padded ``size``."""
    span = (k - 1) * dilation + 1
    room = size + before + after - span
    if room < 0:
        raise ShapeError(f"a window of {span} does not fit {size} + pads {before}, {after}")
    n = (-(-room // stride) if ceil else room // stride) + 1
    # ceil mode: the last window must start inside the input or its leading pad, as in PyTorch,
    # onnxruntime and ONNX's reference evaluator (ONNX 1.23's shape inference omits this rule;
    # from_onnx reports that disagreement as a ShapeError)
    if ceil and (n - 1) * stride >= size + before:
        n -= 1
    return n


def _geometry(node: Node, x_shape: Sequence[int]) -> tuple[int, int]:
    a = node.attrs
    (kh, kw), (sh, sw) = a["kernel"], a["strides"]
    (dh, dw), (pt, pl, pb, pr) = a["dilations"], a["pads"]
    ceil = a.get("ceil", False)
    return (out_size(x_shape[2], kh, sh, pt, pb, dh, ceil),
            out_size(x_shape[3], kw, sw, pl, pr, dw, ceil))


def _padded(x: np.ndarray, node: Node, out_hw: Pair, fill: float) -> np.ndarray:
    """``x`` padded by the node's pads, and on the bottom / right as far as ceil mode reads."""
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = (node.attrs[k] for k in
                                                       ("kernel", "strides", "dilations", "pads"))
    need_h = (out_hw[0] - 1) * sh + (kh - 1) * dh + 1
    need_w = (out_hw[1] - 1) * sw + (kw - 1) * dw + 1
    eh = max(pb, need_h - x.shape[2] - pt)
    ew = max(pr, need_w - x.shape[3] - pl)
    return np.pad(x, ((0, 0), (0, 0), (pt, eh), (pl, ew)), constant_values=fill)


def _taps(node: Node, out_hw: Pair) -> Iterator[tuple[int, int, tuple[slice, ...]]]:
    """For each kernel position (i, j): the strided slice of the padded input it reads."""
    a = node.attrs
    (kh, kw), (sh, sw), (dh, dw) = a["kernel"], a["strides"], a["dilations"]
    ho, wo = out_hw
    for i in range(kh):
        for j in range(kw):
            yield i, j, (slice(None), slice(None), slice(i * dh, i * dh + (ho - 1) * sh + 1, sh),
                         slice(j * dw, j * dw + (wo - 1) * sw + 1, sw))


def _crop(xp: np.ndarray, node: Node, shape: Sequence[int]) -> np.ndarray:
    pt, pl = node.attrs["pads"][:2]
    return xp[:, :, pt:pt + shape[2], pl:pl + shape[3]]


class Conv2d(Op):
    """``y[n, o] = sum_c w[o, c] * x[n, g(o) c]`` over each (dilated) window, ``+ b[o]``
    (ONNX ``Conv``: inputs x (N, C, H, W), w (O, C / group, kh, kw), optional b (O,))."""

    name = "conv2d"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        x, w, *b = node.inputs
        _float(x, "conv2d")
        g = node.attrs["group"]
        if len(w.shape) != 4 or x.shape[1] != w.shape[1] * g or w.shape[0] % g or \
                tuple(w.shape[2:]) != tuple(node.attrs["kernel"]) or \
                (b and b[0].shape != w.shape[:1]):
            raise ShapeError(f"conv2d (group {g}) needs w (O, C/{g}, kh, kw) and b (O,) for "
                             f"{x.name}{list(x.shape)}, got {w.name}{list(w.shape)}"
                             + (f" and {b[0].name}{list(b[0].shape)}" if b else ""))
        return (x.shape[0], w.shape[0], *_geometry(node, x.shape)), x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x, w, *b = inputs
        g = node.attrs["group"]
        n, o = out.shape[:2]
        xp = _padded(x, node, out.shape[2:], 0.0)
        acc = np.zeros((n, g, o // g) + out.shape[2:], dtype=np.float64)
        for i, j, sl in _taps(node, out.shape[2:]):
            xs = xp[sl].reshape(n, g, -1, *out.shape[2:])
            acc += np.einsum("ngchw,goc->ngohw", xs, w[:, :, i, j].reshape(g, o // g, -1))
        out[...] = acc.reshape(out.shape) + (b[0].reshape(1, -1, 1, 1) if b else 0)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        x, w, *b = node.inputs
        geo = _geometry_attrs(node)
        grads = [CONV2D_DX(grad, w, **geo, shape=x.shape), CONV2D_DW(x, grad, **geo)]
        if b:
            from .tensor import sum as reduce_sum
            grads.append(reduce_sum(grad, axis=(0, 2, 3)))
        return grads


class Conv2dDx(Op):
    """The input gradient of :class:`Conv2d` (a transposed convolution): reads grad and w."""

    name = "conv2d_dx"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return tuple(node.attrs["shape"]), node.inputs[0].dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        gy, w = inputs
        g = node.attrs["group"]
        n, o, ho, wo = gy.shape
        padded_hw = _padded(np.empty((0, 0) + out.shape[2:]), node, (ho, wo), 0.0).shape[2:]
        dxp = np.zeros(out.shape[:2] + padded_hw, dtype=np.float64)
        gg = gy.reshape(n, g, o // g, ho, wo)
        for i, j, sl in _taps(node, (ho, wo)):
            dxp[sl] += np.einsum("ngohw,goc->ngchw", gg, w[:, :, i, j].reshape(g, o // g, -1)
                                 ).reshape(n, -1, ho, wo)
        out[...] = _crop(dxp, node, out.shape)


class Conv2dDw(Op):
    """The weight gradient of :class:`Conv2d`: reads the layer's input x and grad."""

    name = "conv2d_dw"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        x, gy = node.inputs
        g = node.attrs["group"]
        return (gy.shape[1], x.shape[1] // g, *node.attrs["kernel"]), x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x, gy = inputs
        g = node.attrs["group"]
        n, o, ho, wo = gy.shape
        xp = _padded(x, node, (ho, wo), 0.0)
        gg = gy.reshape(n, g, o // g, ho, wo)
        for i, j, sl in _taps(node, (ho, wo)):
            xs = xp[sl].reshape(n, g, -1, ho, wo)
            out[:, :, i, j] = np.einsum("ngohw,ngchw->goc", gg, xs).reshape(o, -1)


class Pool2d(Op):
    """Max or average pooling over (dilated) windows (ONNX ``MaxPool``, ``AveragePool``);
    ``count_include_pad``: whether an average divides by the pads too."""

    name = "pool2d"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,) = node.inputs
        _float(x, f"{node.attrs['kind']} pooling")
        return (*x.shape[:2], *_geometry(node, x.shape)), x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        x = inputs[0]
        if node.attrs["kind"] == "max":
            xp = _padded(x, node, out.shape[2:], -np.inf)
            out.fill(-np.inf)
            for _, _, sl in _taps(node, out.shape[2:]):
                np.maximum(out, xp[sl], out=out)
        else:
            xp = _padded(x, node, out.shape[2:], 0.0)
            acc = np.zeros(out.shape)
            for _, _, sl in _taps(node, out.shape[2:]):
                acc += xp[sl]
            out[...] = acc / _counts(node, x.shape, out.shape[2:])

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        (x,) = node.inputs
        if node.attrs["kind"] == "max":
            return [POOL2D_DX(grad, x, node, **_geometry_attrs(node), shape=x.shape)]
        return [POOL2D_DX(grad, **_geometry_attrs(node), shape=x.shape)]


def _counts(node: Node, shape: Sequence[int], out_hw: Pair) -> np.ndarray:
    """How many elements each average divides by: the window less the pads (unless
    ``count_include_pad``), and always less what ceil mode reads past the pads."""
    pt, pl, pb, pr = node.attrs["pads"]
    cp = _padded(np.ones((1, 1) + tuple(shape[2:])), node, out_hw, 0.0)
    if node.attrs.get("count_include_pad"):
        cp[:, :, :pt + shape[2] + pb, :pl + shape[3] + pr] = 1.0
    total = np.zeros((1, 1) + tuple(out_hw))
    for _, _, sl in _taps(node, out_hw):
        total += cp[sl]
    return np.maximum(total, 1.0)


class Pool2dDx(Op):
    """The input gradient of :class:`Pool2d`. Max: each window's gradient goes to the first
    position holding its maximum (reads grad, x and y); average: spread evenly (reads grad)."""

    name = "pool2d_dx"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return tuple(node.attrs["shape"]), node.inputs[0].dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        gy, *xy = inputs
        hw = gy.shape[2:]
        if node.attrs["kind"] == "max":
            x, y = xy
            xp = _padded(x, node, hw, -np.inf)
            dxp = np.zeros(xp.shape)
            taken = np.zeros(gy.shape, dtype=bool)
            for _, _, sl in _taps(node, hw):
                hit = (xp[sl] == y) & ~taken
                dxp[sl] += np.where(hit, gy, 0.0)
                taken |= hit
        else:
            dxp = np.zeros(out.shape[:2] + _padded(np.empty((0, 0) + out.shape[2:]), node, hw,
                                                   0.0).shape[2:])
            share = gy / _counts(node, out.shape, hw)
            for _, _, sl in _taps(node, hw):
                dxp[sl] += share
        out[...] = _crop(dxp, node, out.shape)


CONV2D, CONV2D_DX, CONV2D_DW = Conv2d(), Conv2dDx(), Conv2dDw()
POOL2D, POOL2D_DX = Pool2d(), Pool2dDx()


def _ints(v: object, n: int, low: int, what: str) -> tuple[int, ...]:
    if not isinstance(v, (list, tuple)) or len(v) != n or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) and a >= low for a in v):
        raise ShapeError(f"{what} must be {n} integers >= {low}, got {v!r}")
    return tuple(int(a) for a in v)


def _pairs(kernel: Sequence[int], strides: Sequence[int] | None, pads: Sequence[int] | None,
           dilations: Sequence[int] | None, what: str) -> dict:
    return {"kernel": _ints(kernel, 2, 1, f"{what}: kernel"),
            "strides": (1, 1) if strides is None else _ints(strides, 2, 1, f"{what}: strides"),
            "pads": (0,) * 4 if pads is None else _ints(pads, 4, 0, f"{what}: pads"),
            "dilations": (1, 1) if dilations is None else _ints(dilations, 2, 1,
                                                                f"{what}: dilations")}


def conv2d(x: Node, w: Node, b: Node | None = None, strides: Sequence[int] | None = None,
           pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None,
           group: int = 1, name: str | None = None) -> Node:
    """2-D convolution of ``x`` (N, C, H, W) with ``w`` (O, C / group, kh, kw) and bias ``b``."""
    w = as_node(w, what="conv2d: w")
    if len(w.shape) != 4:
        raise ShapeError(f"conv2d: w must be (O, C / group, kh, kw), got {w.name}{list(w.shape)}")
    attrs = _pairs(tuple(w.shape[2:]), strides, pads, dilations, "conv2d")
    if not isinstance(group, (int, np.integer)) or isinstance(group, bool) or group < 1:
        raise ShapeError(f"conv2d: group must be an integer >= 1, got {group!r}")
    inputs = (x, w) if b is None else (x, w, b)
    return CONV2D(*inputs, name=name, group=int(group), **attrs)


def pool2d(x: Node, kernel: Sequence[int], kind: str = "max", strides: Sequence[int] | None = None,
           pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None,
           ceil: bool = False, count_include_pad: bool = False, name: str | None = None) -> Node:
    """Max (``kind="max"``) or average (``"avg"``) pooling of ``x`` (N, C, H, W)."""
    if kind not in ("max", "avg"):
        raise ShapeError(f"pool2d: kind must be 'max' or 'avg', got {kind!r}")
    return POOL2D(x, name=name, kind=kind, ceil=check_bool(ceil, "pool2d: ceil", ShapeError),
                  count_include_pad=check_bool(count_include_pad, "pool2d: count_include_pad",
                                               ShapeError),
                  **_pairs(kernel, strides, pads, dilations, "pool2d"))

"""Shape-changing ops: matmul, sum, mean, reshape, concat and slicing.

None of these may run in place except ``reshape`` (same bytes, new shape):
a matmul or a reduction reads input elements after it has started writing
output elements (lecture 7, p.19 "what operation cannot be done inplace?").
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ...errors import GraphError, ShapeError, check_bool, check_int
from ..node import Node, as_node
from .base import Op
from .elementwise import broadcast_to


class MatMul(Op):
    """``op(a) @ op(b)`` on 2-D arrays, where op transposes when asked.

    The gradient reads both inputs (PyTorch's ``mm``: ``grad @ mat2^T`` and ``self^T @ grad``).
    ``attrs["workspace"]`` (bytes, default 0) is the scratch a GEMM holds while it runs
    (:func:`memlab.graph.set_workspace`)."""

    name = "matmul"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        a, b = node.inputs
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise ShapeError(f"matmul needs 2-D inputs, got {a.name}{list(a.shape)} and {b.name}{list(b.shape)}")
        (n, k1) = a.shape[::-1] if node.attrs["trans_a"] else a.shape
        (k2, m) = b.shape[::-1] if node.attrs["trans_b"] else b.shape
        if k1 != k2:
            raise ShapeError(f"matmul inner dimensions differ: {a.name}{list(a.shape)} "
                             f"(trans_a={node.attrs['trans_a']}) and {b.name}{list(b.shape)} "
                             f"(trans_b={node.attrs['trans_b']})")
        return (n, m), np.result_type(a.dtype, b.dtype)

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        a, b = inputs
        np.matmul(a.T if node.attrs["trans_a"] else a, b.T if node.attrs["trans_b"] else b, out=out)

    accumulates = True

    def add_into(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        # a BLAS GEMM with beta = 1 adds in place; numpy's matmul needs a temporary
        a, b = inputs
        out += (a.T if node.attrs["trans_a"] else a) @ (b.T if node.attrs["trans_b"] else b)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return product_gradients(matmul, node, grad)


def product_gradients(product: Callable[..., Node], node: Node, grad: Node) -> list[Node]:
    """The gradients of ``C = op(A) op(B)`` (``op``: transposed or not, as ``node``'s attributes
    say) as new products: ``dA = grad op(B)^T`` and ``dB = op(A)^T grad``, each arranged so that
    it needs no explicit transpose. ``product`` is :func:`matmul` or a batched version."""
    a, b = node.inputs
    ta, tb = node.attrs["trans_a"], node.attrs["trans_b"]
    da = product(b, grad, trans_a=tb, trans_b=True) if ta else product(grad, b, trans_b=not tb)
    db = product(grad, a, trans_a=True, trans_b=ta) if tb else product(a, grad, trans_a=not ta)
    return [da, db]


MATMUL = MatMul()


def matmul(a: Node, b: Node, trans_a: bool = False, trans_b: bool = False, name: str | None = None) -> Node:
    """Matrix product, optionally of transposes (the gradients need both)."""
    return MATMUL(a, b, name=name, trans_a=check_bool(trans_a, "matmul: trans_a", GraphError),
                  trans_b=check_bool(trans_b, "matmul: trans_b", GraphError))


def _axes(x: Node, axis: int | Sequence[int] | None) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(len(x.shape)))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else axis
    if not isinstance(axes, (tuple, list)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axes):
        raise ShapeError(f"axis must be an integer, a list of integers or None, got {axis!r}")
    nd = len(x.shape)
    for a in axes:
        if not -nd <= a < nd:
            raise ShapeError(f"axis {a} is out of range for {x.name}{list(x.shape)}")
    return tuple(sorted(a % nd for a in axes))


class Reduce(Op):
    """Sum or mean over some axes (all by default), with ``keepdims``."""

    def __init__(self, name: str, mean: bool) -> None:
        self.name, self.mean = name, mean

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,) = node.inputs
        axes = _axes(x, node.attrs["axis"])
        keep = node.attrs["keepdims"]
        shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape) if keep or i not in axes)
        return shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        axes = _axes(node.inputs[0], node.attrs["axis"])
        fn = np.mean if self.mean else np.sum
        fn(inputs[0], axis=axes, keepdims=node.attrs["keepdims"], out=out)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        (x,) = node.inputs
        axes = _axes(x, node.attrs["axis"])
        kept = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
        g = broadcast_to(reshape(grad, kept), x.shape)
        if self.mean:
            count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
            g = g * (1.0 / max(count, 1))
        return [g]


SUM, MEAN = Reduce("sum", mean=False), Reduce("mean", mean=True)


def sum(x: Node, axis: int | Sequence[int] | None = None, keepdims: bool = False,  # noqa: A001
        name: str | None = None) -> Node:
    """Sum over ``axis`` (all axes by default)."""
    return SUM(x, name=name, axis=axis, keepdims=check_bool(keepdims, "sum: keepdims", GraphError))


def mean(x: Node, axis: int | Sequence[int] | None = None, keepdims: bool = False,
         name: str | None = None) -> Node:
    """Mean over ``axis`` (all axes by default)."""
    return MEAN(x, name=name, axis=axis, keepdims=check_bool(keepdims, "mean: keepdims", GraphError))


class Reshape(Op):
    """Same elements, new shape (one ``-1`` allowed). May run in place."""

    name = "reshape"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,) = node.inputs
        try:
            shape = np.empty(x.shape, dtype=np.bool_).reshape(node.attrs["shape"]).shape
        except ValueError:
            raise ShapeError(f"cannot reshape {x.name}{list(x.shape)} to {list(node.attrs['shape'])}") from None
        return shape, x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        np.copyto(out, inputs[0].reshape(out.shape))

    def inplace(self, node: Node) -> tuple[int, ...]:
        return (0,)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return [reshape(grad, node.inputs[0].shape)]


RESHAPE = Reshape()


def reshape(x: Node, shape: Sequence[int], name: str | None = None) -> Node:
    """``x`` with a new shape; a no-op (returns ``x``) when the shape is unchanged."""
    x = as_node(x, what="reshape: x")
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= -1 for n in shape):
        raise ShapeError(f"reshape: shape must be a list of integers (one may be -1), got {shape!r}")
    shape = tuple(int(n) for n in shape)
    return x if shape == x.shape else RESHAPE(x, name=name, shape=shape)


class Concat(Op):
    """Join arrays along an axis (``A[8] = concat(A[4], A[7])`` on p.23)."""

    name = "concat"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        xs, axis = node.inputs, node.attrs["axis"]
        if not xs:
            raise ShapeError("concat needs at least one input")
        ax = _axes(xs[0], axis)[0]
        for x in xs[1:]:
            if len(x.shape) != len(xs[0].shape) or any(
                    a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != ax):
                raise ShapeError(f"concat inputs differ off axis {axis}: "
                                 f"{xs[0].name}{list(xs[0].shape)} and {x.name}{list(x.shape)}")
        shape = list(xs[0].shape)
        shape[ax] = int(np.sum([x.shape[ax] for x in xs]))
        return tuple(shape), np.result_type(*(x.dtype for x in xs))

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        np.concatenate(inputs, axis=node.attrs["axis"], out=out)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        ax = _axes(node, node.attrs["axis"])[0]
        grads, start = [], 0
        for x in node.inputs:
            grads.append(slice_axis(grad, ax, start, start + x.shape[ax]))
            start += x.shape[ax]
        return grads


class SliceAxis(Op):
    """``x[..., start:stop, ...]`` along one axis; gradient: :func:`pad_axis`."""

    name = "slice"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,), a = node.inputs, node.attrs
        ax = _axes(x, a["axis"])[0]
        if not 0 <= a["start"] <= a["stop"] <= x.shape[ax]:
            raise ShapeError(f"slice [{a['start']}:{a['stop']}] is out of range for axis {ax} of {x.name}{list(x.shape)}")
        shape = list(x.shape)
        shape[ax] = a["stop"] - a["start"]
        return tuple(shape), x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        a = node.attrs
        np.copyto(out, np.take(inputs[0], range(a["start"], a["stop"]), axis=a["axis"]))

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        (x,), a = node.inputs, node.attrs
        ax = _axes(x, a["axis"])[0]
        return [pad_axis(grad, ax, a["start"], x.shape[ax] - a["stop"])]


class PadAxis(Op):
    """Zeros before and after ``x`` along one axis; gradient: :func:`slice_axis`."""

    name = "pad"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        (x,), a = node.inputs, node.attrs
        ax = _axes(x, a["axis"])[0]
        if a["before"] < 0 or a["after"] < 0:
            raise ShapeError(f"negative padding {a['before']}, {a['after']} for {x.name}")
        shape = list(x.shape)
        shape[ax] += a["before"] + a["after"]
        return tuple(shape), x.dtype

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        a = node.attrs
        out.fill(0)
        n = inputs[0].shape[a["axis"]]
        index = [slice(None)] * out.ndim
        index[a["axis"]] = slice(a["before"], a["before"] + n)
        out[tuple(index)] = inputs[0]

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        (x,), a = node.inputs, node.attrs
        return [slice_axis(grad, a["axis"], a["before"], a["before"] + x.shape[a["axis"]])]


CONCAT, SLICE, PAD = Concat(), SliceAxis(), PadAxis()


def concat(*xs: Node, axis: int = -1, name: str | None = None) -> Node:
    """Concatenate nodes along ``axis``."""
    return CONCAT(*xs, name=name, axis=axis)


def slice_axis(x: Node, axis: int, start: int, stop: int, name: str | None = None) -> Node:
    """Elements ``start:stop`` of ``x`` along ``axis``."""
    x = as_node(x, what="slice_axis: x")
    ax = _axes(x, check_int(axis, "slice_axis: axis", error=ShapeError))[0]
    return SLICE(x, name=name, axis=ax, start=check_int(start, "slice_axis: start", error=ShapeError),
                 stop=check_int(stop, "slice_axis: stop", error=ShapeError))


def pad_axis(x: Node, axis: int, before: int, after: int, name: str | None = None) -> Node:
    """``x`` with ``before`` and ``after`` zeros along ``axis``."""
    x = as_node(x, what="pad_axis: x")
    ax = _axes(x, check_int(axis, "pad_axis: axis", error=ShapeError))[0]
    return PAD(x, name=name, axis=ax, before=check_int(before, "pad_axis: before", 0, ShapeError),
               after=check_int(after, "pad_axis: after", 0, ShapeError))

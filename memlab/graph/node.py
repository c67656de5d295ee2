"""The op graph's two objects: an op (compute, shape, in-place, gradient) and a node (a value).

A :class:`Node` is one value of the graph: the output of an op applied to
input nodes (CSE599G1 lecture 7, p.5 "Recap: computation graph"). Shapes and
dtypes are inferred when a node is built, so a planner knows every value's
``nbytes`` before anything runs (p.17 "plan for reuse ahead of time").
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

import numpy as np

from ..errors import GraphError, ShapeError, UnknownOpError
from .scope import Scope, current_scope

_ids = itertools.count()
DEFAULT_DTYPE = np.dtype(np.float32)


class Op:
    """Base class of all ops. Subclasses override the four hooks below."""

    name = "op"
    computes = True  # False for placeholders and constants: given, not computed

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        """Output shape and dtype from ``node.inputs`` and ``node.attrs``; raise ShapeError."""
        raise NotImplementedError

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        """Write ``op(*inputs)`` into the preallocated array ``out`` (numpy ``out=``)."""
        raise NotImplementedError(f"op {self.name!r} has no numpy compute")

    def inplace(self, node: Node) -> tuple[int, ...]:
        """Positions of inputs whose memory the output may take (p.19 "inplace").

        The op must compute correctly when ``out`` *is* that input's array.
        """
        return ()

    def add_into(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        """Add ``op(*inputs)`` into ``out`` (a fused add-to: MXNet's ``kAddTo``, Torch's
        ``accGradParameters``). Ops that can set ``accumulates = True``; see
        :func:`memlab.graph.ops.accumulate`."""
        raise NotImplementedError(f"op {self.name!r} cannot add into its output")

    accumulates = False  # True when add_into is implemented

    def workspace(self, node: Node) -> int:
        """Bytes of scratch memory the op holds while it runs, and only then (cuDNN's and cuBLAS's
        ``workSpace``; :mod:`memlab.graph.workspace`): ``node.attrs["workspace"]``, default 0.
        Planners and executors count it alive during this op's step alone."""
        return node.attrs.get("workspace", 0)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        """Gradient nodes for each input, given the gradient ``grad`` of ``node``.

        ``None`` means "no gradient" (zero, or not differentiable, like labels).
        """
        raise NotImplementedError(f"op {self.name!r} has no gradient")

    def __call__(self, *inputs: Any, name: str | None = None, **attrs: Any) -> Node:
        like = next((x for x in inputs if isinstance(x, Node)), None)
        return Node(self, [x if isinstance(x, Node) else as_node(x, like, f"{self.name}: input {i}")
                           for i, x in enumerate(inputs)], name=name, attrs=attrs)

    def __repr__(self) -> str:
        return f"<Op {self.name}>"


class _Leaf(Op):
    computes = False

    def __init__(self, name: str) -> None:
        self.name = name

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:  # pragma: no cover
        raise ShapeError(f"a {self.name} needs an explicit shape and dtype")

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        return []


PLACEHOLDER = _Leaf("placeholder")
CONSTANT = _Leaf("constant")


class Node:
    """One value of a computational graph: ``op(*inputs, **attrs)``.

    Attributes: ``op`` (an :class:`~memlab.graph.node.Op`), ``inputs`` (nodes),
    ``attrs`` (op parameters), ``name``, ``shape``, ``dtype``, ``nbytes``, ``scope``
    (module and timestep, :mod:`.scope`; None outside any) and, for constants, ``value``. Python operators build new nodes, so
    ``exp(a * b + 3)`` is a graph of four ops (p.10); :mod:`memlab.graph.ops`
    binds them when it loads, so this module needs no op.
    """

    __array_priority__ = 100  # so numpy scalars defer to Node's operators
    # slots: a node is small and quick to read, which planners do for every node of big graphs
    __slots__ = ("id", "op", "inputs", "attrs", "value", "scope", "name", "shape", "dtype",
                 "nbytes", "__weakref__")

    def __init__(self, op: Op, inputs: Sequence["Node"] = (), name: str | None = None,
                 attrs: dict[str, Any] | None = None, shape: Sequence[int] | None = None,
                 dtype: Any = None, value: np.ndarray | None = None) -> None:
        self.id = next(_ids)
        self.op = op
        self.inputs = list(inputs)
        self.attrs = dict(attrs or {})
        self.value = value
        self.scope: Scope | None = current_scope()
        if name is not None and not isinstance(name, str):
            raise GraphError(f"a node's name must be a string or None, got {name!r}")
        self.name = name or f"{getattr(op, 'name', 'node')}_{self.id}"
        if not isinstance(op, Op):
            raise UnknownOpError(f"node {self.name!r}: {op!r} is not a memlab Op")
        for i, x in enumerate(self.inputs):
            if not isinstance(x, Node):
                raise GraphError(f"node {self.name!r}: input {i} is {type(x).__name__}, not a Node")
        if shape is None or dtype is None:
            try:
                s, d = op.infer(self)
            except ShapeError as e:
                raise ShapeError(f"node {self.name!r} ({op.name}): {e}") from None
            shape = s if shape is None else shape
            dtype = d if dtype is None else dtype
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        if any(n < 0 for n in self.shape):
            raise ShapeError(f"node {self.name!r}: negative dimension in shape {self.shape}")
        #: bytes needed to hold this value, fixed with the shape and dtype (planners read it per op)
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def is_leaf(self) -> bool:
        """Placeholders and constants: values that are given, not computed."""
        return not self.op.computes

    def __repr__(self) -> str:
        return f"<{self.name}: {self.op.name}{list(self.shape)} {self.dtype}>"


#: dtype kinds a value may have: booleans, integers, floating point
NUMERIC = "biuf"


def check_shape(shape: Any, what: str) -> tuple[int, ...]:
    """``shape`` as a tuple if it is a sequence of integers >= 0, else :class:`ShapeError`."""
    dims = shape if isinstance(shape, (tuple, list, range)) or \
        (isinstance(shape, np.ndarray) and shape.ndim == 1) else None
    if dims is not None and all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                                and n >= 0 for n in dims):
        return tuple(int(n) for n in dims)
    raise ShapeError(f"{what} must be a sequence of integers >= 0, got {shape!r}")


def check_dtype(dtype: Any, what: str) -> np.dtype:
    """``dtype`` as a numpy dtype of numbers (bool, int, uint, float), else :class:`GraphError`."""
    try:
        dt = np.dtype(dtype) if dtype is not None and not isinstance(dtype, (int, list)) else None
    except TypeError:
        dt = None
    if dt is None or dt.kind not in NUMERIC:
        raise GraphError(f"{what} must be a numpy dtype of numbers (bool, int, uint or float, "
                         f"e.g. 'float32'), got {dtype!r}")
    return dt


def placeholder(name: str, shape: Sequence[int] = (), dtype: Any = DEFAULT_DTYPE) -> Node:
    """An input value, fed at run time (``a`` and ``b`` on p.10)."""
    if not isinstance(name, str) or not name:
        raise GraphError(f"placeholder: name must be a non-empty string (the feed's key), "
                         f"got {name!r}")
    shape = check_shape(shape, f"placeholder {name!r}: shape")
    return Node(PLACEHOLDER, (), name=name, shape=shape,
                dtype=check_dtype(dtype, f"placeholder {name!r}: dtype"))


def constant(value: Any, name: str | None = None, dtype: Any = None) -> Node:
    """A constant value baked into the graph (the ``3`` of ``exp(a*b+3)``)."""
    if dtype is not None:
        dtype = check_dtype(dtype, "constant: dtype")
    arr = _numeric(value, "constant: value", dtype)
    if dtype is None and arr.dtype == np.float64 and not isinstance(value, np.ndarray):
        arr = arr.astype(DEFAULT_DTYPE)  # Python floats default to float32, like placeholders
    if name is None:
        name = f"{arr.item():g}" if arr.ndim == 0 and arr.dtype.kind in "fiu" else None
    return Node(CONSTANT, (), name=name, shape=arr.shape, dtype=arr.dtype, value=arr)


def _numeric(value: Any, what: str, dtype: np.dtype | None = None,
             allowed: str = "a number or an array of numbers") -> np.ndarray:
    """``value`` as an array of numbers, else :class:`GraphError` (None, strings, objects)."""
    try:
        arr = np.asarray(value)
        if arr.dtype.kind in NUMERIC and dtype is not None:
            arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.dtype.kind not in NUMERIC:
        raise GraphError(f"{what} must be {allowed}, got {type(value).__name__} {value!r:.60}")
    return arr


def as_node(x: Any, like: Node | None = None, what: str = "an operand") -> Node:
    """``x`` if it is a node, else a constant (with ``like``'s dtype for Python numbers); anything
    else (None, a string) is a :class:`GraphError` naming ``what``."""
    if isinstance(x, Node):
        return x
    _numeric(x, what, allowed="a Node, a number or an array of numbers")
    if like is not None and np.ndim(x) == 0 and like.dtype.kind == "f":
        return constant(x, dtype=like.dtype)
    return constant(x)




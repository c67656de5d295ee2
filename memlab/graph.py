"""Computational graphs: nodes, placeholders, constants and topological order.

A :class:`Node` is one value of the graph: the output of an op applied to
input nodes (CSE599G1 lecture 7, p.5 "Recap: computation graph"). Shapes and
dtypes are inferred when a node is built, so a planner knows every value's
``nbytes`` before anything runs (p.17 "plan for reuse ahead of time").
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from .errors import CycleError, GraphError, ShapeError, UnknownOpError

if TYPE_CHECKING:  # pragma: no cover
    from .ops.base import Op

_ids = itertools.count()
DEFAULT_DTYPE = np.dtype(np.float32)


class Node:
    """One value of a computational graph: ``op(*inputs, **attrs)``.

    Attributes: ``op`` (an :class:`~memlab.ops.Op`), ``inputs`` (nodes),
    ``attrs`` (op parameters), ``name``, ``shape``, ``dtype``, ``nbytes`` and,
    for constants, ``value``. Python operators build new nodes, so
    ``exp(a * b + 3)`` is a graph of four ops (p.10).
    """

    __array_priority__ = 100  # so numpy scalars defer to Node's operators

    def __init__(self, op: "Op", inputs: Sequence["Node"] = (), name: str | None = None,
                 attrs: dict[str, Any] | None = None, shape: Sequence[int] | None = None,
                 dtype: Any = None, value: np.ndarray | None = None) -> None:
        from .ops.base import Op

        self.id = next(_ids)
        self.op = op
        self.inputs = list(inputs)
        self.attrs = dict(attrs or {})
        self.value = value
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

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Bytes needed to hold this value."""
        return self.size * self.dtype.itemsize

    @property
    def is_leaf(self) -> bool:
        """Placeholders and constants: values that are given, not computed."""
        return not self.op.computes

    def __repr__(self) -> str:
        return f"<{self.name}: {self.op.name}{list(self.shape)} {self.dtype}>"

    # Operator overloads build new nodes (imported late to avoid a cycle).
    def __add__(self, other: Any) -> "Node":
        from . import ops
        return ops.add(self, other)

    def __radd__(self, other: Any) -> "Node":
        from . import ops
        return ops.add(other, self)

    def __sub__(self, other: Any) -> "Node":
        from . import ops
        return ops.sub(self, other)

    def __rsub__(self, other: Any) -> "Node":
        from . import ops
        return ops.sub(other, self)

    def __mul__(self, other: Any) -> "Node":
        from . import ops
        return ops.mul(self, other)

    def __rmul__(self, other: Any) -> "Node":
        from . import ops
        return ops.mul(other, self)

    def __truediv__(self, other: Any) -> "Node":
        from . import ops
        return ops.div(self, other)

    def __rtruediv__(self, other: Any) -> "Node":
        from . import ops
        return ops.div(other, self)

    def __neg__(self) -> "Node":
        from . import ops
        return ops.neg(self)

    def __matmul__(self, other: "Node") -> "Node":
        from . import ops
        return ops.matmul(self, other)


def placeholder(name: str, shape: Sequence[int] = (), dtype: Any = DEFAULT_DTYPE) -> Node:
    """An input value, fed at run time (``a`` and ``b`` on p.10)."""
    from .ops.base import PLACEHOLDER
    return Node(PLACEHOLDER, (), name=name, shape=tuple(shape), dtype=dtype)


def constant(value: Any, name: str | None = None, dtype: Any = None) -> Node:
    """A constant value baked into the graph (the ``3`` of ``exp(a*b+3)``)."""
    from .ops.base import CONSTANT
    arr = np.asarray(value, dtype=dtype)
    if dtype is None and arr.dtype == np.float64 and not isinstance(value, np.ndarray):
        arr = arr.astype(DEFAULT_DTYPE)  # Python floats default to float32, like placeholders
    if name is None:
        name = f"{arr.item():g}" if arr.ndim == 0 and arr.dtype.kind in "fiu" else None
    return Node(CONSTANT, (), name=name, shape=arr.shape, dtype=arr.dtype, value=arr)


def as_node(x: Any, like: Node | None = None) -> Node:
    """``x`` if it is a node, else a constant (with ``like``'s dtype for Python numbers)."""
    if isinstance(x, Node):
        return x
    if like is not None and np.ndim(x) == 0 and like.dtype.kind == "f":
        return constant(x, dtype=like.dtype)
    return constant(x)


def _as_list(outputs: Node | Iterable[Node]) -> list[Node]:
    if isinstance(outputs, Node):
        return [outputs]
    out = list(outputs)
    for i, x in enumerate(out):
        if not isinstance(x, Node):
            raise GraphError(f"output {i} is {type(x).__name__}, not a Node")
    return out


def topo_order(outputs: Node | Iterable[Node]) -> list[Node]:
    """Every node the outputs depend on, each after its inputs (p.12 "traverse by topo order").

    Depth-first post-order, iterative so deep graphs do not hit the recursion
    limit. Raises :class:`CycleError` naming a node on the cycle.
    """
    order: list[Node] = []
    state: dict[int, int] = {}  # 1 = on the stack, 2 = done
    for root in _as_list(outputs):
        if state.get(root.id) == 2:
            continue
        stack: list[tuple[Node, int]] = [(root, 0)]
        state[root.id] = 1
        while stack:
            node, i = stack[-1]
            if i < len(node.inputs):
                stack[-1] = (node, i + 1)
                child = node.inputs[i]
                s = state.get(child.id)
                if s == 1:
                    raise CycleError(f"the graph has a cycle through node {child.name!r}")
                if s is None:
                    state[child.id] = 1
                    stack.append((child, 0))
            else:
                stack.pop()
                state[node.id] = 2
                order.append(node)
    return order


def consumers(order: Sequence[Node]) -> dict[Node, list[Node]]:
    """For each node of ``order``, the nodes of ``order`` that read it (once per use)."""
    out: dict[Node, list[Node]] = {n: [] for n in order}
    for n in order:
        for x in n.inputs:
            if x in out:
                out[x].append(n)
    return out


def check_order(outputs: Node | Iterable[Node], order: Sequence[Node]) -> list[Node]:
    """Validate a user-given execution order: every needed node once, inputs first.

    Raises :class:`~memlab.errors.PlanError` naming the first offending node.
    """
    from .errors import PlanError

    needed = topo_order(outputs)
    need = set(needed)
    seen: set[Node] = set()
    result = []
    for n in order:
        if not isinstance(n, Node):
            raise PlanError(f"order contains {type(n).__name__}, not a Node")
        if n in seen:
            raise PlanError(f"order lists node {n.name!r} twice")
        if n not in need:
            raise PlanError(f"order lists node {n.name!r}, which the outputs do not need")
        for x in n.inputs:
            if x not in seen:
                raise PlanError(f"order is not topological: node {n.name!r} comes before its input {x.name!r}")
        seen.add(n)
        result.append(n)
    missing = [n.name for n in needed if n not in seen]
    if missing:
        raise PlanError(f"order is missing node(s) {', '.join(map(repr, missing[:5]))}")
    return result

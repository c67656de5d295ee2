"""A graph as plain data, and back: what crosses between two processes (the grader's judge and a
student's kernel) instead of the node objects themselves.

:func:`to_plain` writes every node the roots depend on as a record (its key, op, input keys, name,
shape, dtype, attrs, a constant's value and its scope), inputs before readers; nodes the other side
already holds are named by their key only.  :func:`from_plain` rebuilds the records with memlab's own
constructors: a computed node's shape and dtype are inferred again by its op and must match the
record.  The records hold only numbers, strings, tuples, lists, dicts and numpy arrays
(:mod:`memlab.grading.codec` carries them).

Ops are named by ``op.name`` (the ops memlab defines at module level), or by a family's spec for
ops made with parameters (:func:`register_op_family`, e.g. the shape-only ops of
:mod:`memlab.models.shape_only`).
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

import numpy as np

from ..plaindata import register_graph as _register_plain
from ..errors import GraphError, UnknownOpError
from .node import CONSTANT, PLACEHOLDER, Node, Op, check_dtype, constant
from .scope import Scope
from .traverse import as_list

#: op families made with parameters: kind -> (spec of an op, or None if not ours; op from a spec)
_FAMILIES: dict[str, tuple[Callable[[Op], Any], Callable[[Any], Op]]] = {}


def register_op_family(kind: str, spec: Callable[[Op], Any], make: Callable[[Any], Op]) -> None:
    """Ops that are made with parameters: *spec(op)* gives plain parameters (None: not of this
    family), *make(spec)* the op again."""
    _FAMILIES[kind] = (spec, make)


_OPS: dict[str, Op] = {}
_SCANNED: set[str] = set()


def _registry() -> dict[str, Op]:
    """Every op instance defined at module level in a loaded memlab module, by ``op.name``
    (modules loaded since the last call are scanned now)."""
    if not _OPS:
        _OPS.update(placeholder=PLACEHOLDER, constant=CONSTANT)
    for name, mod in list(sys.modules.items()):
        if name in _SCANNED or not name.startswith("memlab.") or name.startswith("memlab.grading") \
                or mod is None:
            continue
        _SCANNED.add(name)
        for v in list(vars(mod).values()):
            if isinstance(v, Op) and isinstance(getattr(v, "name", None), str):
                _OPS.setdefault(v.name, v)
    return _OPS


def _op_named(name: str) -> Op | None:
    return _OPS.get(name) or _registry().get(name)


def op_spec(op: Op) -> Any:
    """How a record names *op*: its name, or ``(family, parameters)``."""
    for kind, (spec, _) in _FAMILIES.items():
        s = spec(op)
        if s is not None:
            return (kind, s)
    if _op_named(op.name) is not op:
        raise UnknownOpError(f"op {op!r} is not one of memlab's ops, so it cannot be written as plain data")
    return op.name


def op_from_spec(spec: Any) -> Op:
    """The op a record names (:func:`op_spec`), or :class:`UnknownOpError`."""
    if isinstance(spec, str):
        op = _op_named(spec)
        if op is None:
            raise UnknownOpError(f"no memlab op is named {spec[:60]!r}")
        return op
    if isinstance(spec, tuple) and len(spec) == 2 and spec[0] in _FAMILIES:
        try:
            return _FAMILIES[spec[0]][1](spec[1])
        except (TypeError, ValueError) as e:
            raise UnknownOpError(f"bad parameters for a {spec[0]} op: {e}") from None
    raise UnknownOpError(f"not an op spec: {str(spec)[:80]}")


def _attr_out(v: Any, key: Callable[[Node], Hashable]) -> Any:
    if isinstance(v, Node):
        return ("node", key(v))
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    if isinstance(v, tuple):
        return ("tuple", [_attr_out(x, key) for x in v])
    if isinstance(v, list):
        return ("list", [_attr_out(x, key) for x in v])
    if isinstance(v, dict):
        return ("dict", [[k, _attr_out(x, key)] for k, x in v.items()])
    if v is None or isinstance(v, (bool, int, float, str, np.ndarray, np.generic)):
        return ("value", v)
    raise GraphError(f"an attribute of type {type(v).__name__} cannot be written as plain data")


def _attr_in(v: Any, node_of: Callable[[Hashable], Node]) -> Any:
    if not (isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str)):
        raise GraphError(f"not an attribute record: {str(v)[:80]}")
    kind, x = v
    if kind == "node":
        return node_of(x)
    if kind == "dtype":
        return check_dtype(x, "an attribute's dtype")
    if kind in ("tuple", "list") and isinstance(x, list):
        items = [_attr_in(i, node_of) for i in x]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict" and isinstance(x, list):
        return {k: _attr_in(i, node_of) for k, i in x}
    if kind == "value":
        return x
    raise GraphError(f"unknown attribute record {kind[:20]!r}")


def _deps(n: Node) -> list[Node]:
    """What a node needs first: its inputs and the nodes its attrs name."""
    out = list(n.inputs)

    def walk(v: Any) -> None:
        if isinstance(v, Node):
            out.append(v)
        elif isinstance(v, (tuple, list)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
    for v in n.attrs.values():
        walk(v)
    return out


def to_plain(roots: Node | Iterable[Node], known: Mapping[Node, Hashable] | None = None,
             new_key: Callable[[Node], Hashable] | None = None) -> tuple[list[dict], dict[Node, Hashable]]:
    """The records of every node *roots* depend on that *known* does not hold (inputs first), and
    the key of every node reached (*known*'s keys, else ``new_key(node)``, by default 0, 1, 2, ...)."""
    known = dict(known or {})
    keys: dict[Node, Hashable] = {}
    counter = iter(range(sys.maxsize))
    new_key = new_key or (lambda n: next(counter))
    records: list[dict] = []

    def key(n: Node) -> Hashable:
        return keys[n]

    stack = [(n, False) for n in reversed(as_list(roots))]
    while stack:
        n, ready = stack.pop()
        if n in keys:
            continue
        if n in known:
            keys[n] = known[n]
            continue
        if not ready:
            stack.append((n, True))
            stack.extend((d, False) for d in reversed(_deps(n)) if d not in keys)
            continue
        keys[n] = new_key(n)
        sc = n.scope
        records.append({
            "key": keys[n], "op": op_spec(n.op), "inputs": [key(x) for x in n.inputs], "name": n.name,
            "shape": tuple(n.shape), "dtype": n.dtype.str,
            "attrs": {str(k): _attr_out(v, key) for k, v in n.attrs.items()},
            "value": None if n.value is None else np.asarray(n.value),
            "scope": None if sc is None else (sc.module, sc.step, tuple(sc.role), bool(sc.backward))})
    return records, keys


def from_plain(records: Sequence[Mapping[str, Any]], known: Mapping[Hashable, Node] | None = None
               ) -> dict[Hashable, Node]:
    """Rebuild :func:`to_plain`'s records with memlab's constructors; returns every key's node
    (*known*'s too).  Raises :class:`GraphError` for a record that is not a valid node."""
    nodes: dict[Hashable, Node] = dict(known or {})

    def node_of(k: Hashable) -> Node:
        try:
            return nodes[k]
        except (KeyError, TypeError):
            raise GraphError(f"a record names node {str(k)[:40]}, which is not defined before it") from None

    for r in records:
        try:
            k, spec, inputs, name = r["key"], r["op"], r["inputs"], r["name"]
            shape, dtype, attrs, value, sc = r["shape"], r["dtype"], r["attrs"], r["value"], r["scope"]
        except (KeyError, TypeError):
            raise GraphError(f"not a node record: {str(r)[:100]}") from None
        try:
            hash(k)
        except TypeError:
            raise GraphError(f"a node's key must be hashable, not {type(k).__name__}") from None
        if k in nodes:
            raise GraphError(f"node key {str(k)[:40]} is defined twice")
        if not isinstance(name, str) or not isinstance(attrs, dict) or not isinstance(inputs, list):
            raise GraphError(f"node {str(k)[:40]}: malformed record")
        op = op_from_spec(spec)
        ins = [node_of(x) for x in inputs]
        at = {str(a): _attr_in(v, node_of) for a, v in attrs.items()}
        dt = check_dtype(dtype, f"node {name[:40]!r}: dtype")
        if op is CONSTANT:
            if not isinstance(value, np.ndarray):
                raise GraphError(f"constant {name[:40]!r}: its value must be an array")
            n = constant(value, name=name, dtype=dt)
        elif op is PLACEHOLDER:
            n = Node(PLACEHOLDER, (), name=name, shape=tuple(shape), dtype=dt)
        else:
            n = Node(op, ins, name=name, attrs=at)
            if n.shape != tuple(shape) or n.dtype != dt:
                raise GraphError(f"node {name[:40]!r} ({op.name}): the record says shape {tuple(shape)} "
                                 f"{dt}, its op makes {n.shape} {n.dtype}")
        if sc is not None:
            module, step, role, backward = sc
            n.scope = Scope(str(module), None if step is None else int(step), tuple(role), bool(backward))
        nodes[k] = n
    return nodes


_register_plain(Node, to_plain, from_plain)

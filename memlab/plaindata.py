"""Plain data: the registry of codecs through which memlab's structures cross between processes.

A structure that another process must rebuild (a tree, a task graph, a heterogeneous chain, a chain
action) registers a codec here as its module loads: its kind, its exact types, a function writing
it as plain data (numbers, strings, lists, tuples, dicts, numpy arrays) and one rebuilding it with
the structure's own constructors, which check what they are given.  The graph registers one more
codec of its own kind (:func:`register_graph`): nodes cross as records keyed across calls, since a
later call may name a node an earlier one sent (:mod:`memlab.graph.plain`).

Whoever carries the data (the grader's judge and the student's kernel, :mod:`memlab.grading`) asks
this registry and never names a structure's class or module; ``import memlab`` loads every
structure, so each process that holds one has them all registered.  Imports only
:mod:`memlab.errors`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .errors import MemlabError


class PlainDataError(MemlabError, ValueError):
    """A codec registered twice under one kind, or plain data of a kind no structure registered."""


@dataclass(frozen=True)
class Codec:
    """How one kind of structure crosses: its exact *types*, *to_plain(obj)* and
    *from_plain(data)*."""
    kind: str
    types: tuple[type, ...]
    to_plain: Callable[[Any], Any]
    from_plain: Callable[[Any], Any]


@dataclass(frozen=True)
class GraphCodec:
    """How graph nodes cross: *node_type*; ``to_records(roots, known, new_key)`` returning
    ``(records, keys)``; ``from_records(records, known)`` returning every key's node."""
    node_type: type
    to_records: Callable[..., tuple[list, dict]]
    from_records: Callable[..., dict]


_BY_KIND: dict[str, Codec] = {}
_BY_TYPE: dict[type, Codec] = {}
_GRAPH: list[GraphCodec] = []


def _same_class(a: type, b: type) -> bool:
    """One class, or the same class defined again (its module run again: ``importlib.reload``)."""
    return a is b or (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


def register(kind: str, types: type | tuple[type, ...], to_plain: Callable[[Any], Any],
             from_plain: Callable[[Any], Any]) -> None:
    """Register how objects of exactly *types* cross as plain data under *kind*.  A kind names one
    structure: registering it again for other classes raises :class:`PlainDataError` (the same
    classes defined again, by a module run twice, replace the old ones)."""
    types = types if isinstance(types, tuple) else (types,)
    if not isinstance(kind, str) or not kind:
        raise PlainDataError(f"register: kind must be a non-empty string, not {kind!r:.60}")
    if not types or not all(isinstance(t, type) for t in types):
        raise PlainDataError(f"register: types must be a class or a tuple of classes, "
                             f"not {types!r:.80}")
    if not callable(to_plain) or not callable(from_plain):
        raise PlainDataError("register: to_plain and from_plain must be functions")
    old = _BY_KIND.get(kind)
    if old is not None:
        if len(old.types) != len(types) or not all(map(_same_class, old.types, types)):
            raise PlainDataError(f"register: kind {kind!r} is already registered for "
                                 f"{[t.__qualname__ for t in old.types]}")
        for t in old.types:
            _BY_TYPE.pop(t, None)
    for t in types:
        other = _BY_TYPE.get(t)
        if other is not None and other.kind != kind:
            raise PlainDataError(f"register: {t.__qualname__} already crosses as {other.kind!r}")
    codec = Codec(kind, types, to_plain, from_plain)
    _BY_KIND[kind] = codec
    for t in types:
        _BY_TYPE[t] = codec


def to_plain(obj: Any) -> tuple[str, Any] | None:
    """``(kind, plain data)`` for an object of a registered type (exactly: a subclass is not the
    structure), else None."""
    codec = _BY_TYPE.get(type(obj))
    return None if codec is None else (codec.kind, codec.to_plain(obj))


def from_plain(kind: str, data: Any) -> Any:
    """The structure :func:`to_plain` wrote as ``(kind, data)``, rebuilt by its own codec;
    :class:`PlainDataError` for a kind nothing registered (the codec's own errors otherwise)."""
    codec = _BY_KIND.get(kind) if isinstance(kind, str) else None
    if codec is None:
        raise PlainDataError(f"no structure crosses as {str(kind)[:40]!r} "
                             f"(registered: {sorted(_BY_KIND)})")
    return codec.from_plain(data)


def kinds() -> tuple[str, ...]:
    """The kinds registered, sorted."""
    return tuple(sorted(_BY_KIND))


def register_graph(node_type: type, to_records: Callable[..., tuple[list, dict]],
                   from_records: Callable[..., dict]) -> None:
    """Register how graph nodes cross (see :class:`GraphCodec`); once (again for a class defined
    again)."""
    if not isinstance(node_type, type) or not callable(to_records) or not callable(from_records):
        raise PlainDataError("register_graph: needs the node class and two functions")
    if _GRAPH and not _same_class(_GRAPH[0].node_type, node_type):
        raise PlainDataError(f"register_graph: nodes already cross as "
                             f"{_GRAPH[0].node_type.__qualname__}")
    _GRAPH[:] = [GraphCodec(node_type, to_records, from_records)]


def graph() -> GraphCodec:
    """The graph's codec; :class:`PlainDataError` if no graph registered (memlab.graph not
    loaded)."""
    if not _GRAPH:
        raise PlainDataError("no graph codec is registered (import memlab first)")
    return _GRAPH[0]

"""Computing one node: the only place where a runner calls an op's numpy code.

:func:`check_feed` matches a feed to the graph's placeholders; :func:`compute_node` runs one op into
a preallocated output and turns numpy's complaints into a :class:`~memlab.errors.MemlabError`
naming the node. Every runner of :mod:`memlab.execute` uses both.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np

from ..errors import FeedError, MemlabError
from ..graph import PLACEHOLDER, Node


def check_feed(order: Sequence[Node], feed: Mapping[Any, Any]) -> dict[Node, np.ndarray]:
    """Match the feed to the graph's placeholders (by node or by name) and validate it.

    Python numbers and lists are converted to the placeholder's dtype; a numpy
    array must already have the right dtype and shape. A name that is no placeholder's of this
    graph is a :class:`FeedError` naming it (a typo is not ignored), and so is a key that is
    neither a name nor a placeholder; a placeholder node the graph does not need is skipped, so
    that one feed can serve several graphs built on the same inputs.
    """
    if not isinstance(feed, Mapping):
        raise FeedError(f"the feed must be a dict of placeholder (or name) -> value, "
                        f"got {type(feed).__name__} {feed!r:.60}")
    placeholders = [n for n in order if n.op is PLACEHOLDER]
    by_name, known_nodes = {n.name: n for n in placeholders}, set(placeholders)
    values: dict[Node, np.ndarray] = {}
    others: set[str] = set()              # names of other graphs' placeholders in the feed
    for key, value in feed.items():
        node = key if isinstance(key, Node) else by_name.get(key) if isinstance(key, str) else None
        if node not in known_nodes:
            if isinstance(node, Node) and node.op is PLACEHOLDER:
                others.add(node.name)
                continue                  # another graph's input: one feed may serve several
            known = ", ".join(map(repr, by_name)) or "none"
            what = f"{key.op.name} node {key.name!r}" if isinstance(key, Node) else repr(key)
            raise FeedError(f"the feed has key {what}, which is not a placeholder of this graph "
                            f"nor the name of one (its placeholders: {known})")
        if isinstance(value, (np.ndarray, np.generic)):
            arr = np.asarray(value)
            if arr.dtype != node.dtype:
                raise FeedError(f"placeholder {node.name!r} expects dtype {node.dtype}, fed {arr.dtype}")
        else:
            try:
                arr = np.asarray(value, dtype=node.dtype)
            except (TypeError, ValueError):
                raise FeedError(f"placeholder {node.name!r}: cannot convert {type(value).__name__} "
                                f"to {node.dtype}") from None
        if arr.shape != node.shape:
            raise FeedError(f"placeholder {node.name!r} expects shape {list(node.shape)}, fed {list(arr.shape)}")
        values[node] = arr
    for n in order:
        if n.op is PLACEHOLDER and n not in values:
            if n.name in others:
                raise FeedError(f"placeholder {n.name!r}: the feed's {n.name!r} belongs to another "
                                f"graph (an older one, built before this graph): re-run the cell "
                                f"that builds the feed")
            raise FeedError(f"placeholder {n.name!r} is missing from the feed")
    return values


def compute_node(node: Node, inputs: list[np.ndarray], out: np.ndarray) -> None:
    """Run one op into ``out``, turning numpy's complaints into a MemlabError naming the node."""
    try:
        with np.errstate(all="ignore"):
            node.op.compute(node, inputs, out)
    except MemlabError:
        raise
    except Exception as e:  # a bug or a value numpy cannot handle: say where
        raise MemlabError(f"node {node.name!r} ({node.op.name}) failed: {type(e).__name__}: {e}") from e

"""Executors: run a graph with numpy and measure the memory it takes.

The naive executor is the lecture's "how to build an executor for a given
graph" (CSE599G1 lecture 7, p.10-13): allocate a fresh array for every
intermediate, then traverse the graph in topological order. Its temporary
space is linear in the number of ops (p.13); the trace shows it growing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .errors import FeedError, MemlabError
from .graph import Node, _as_list, topo_order
from .ops import CONSTANT, PLACEHOLDER


@dataclass
class Step:
    """One executed node: bytes allocated for it and bytes held after it ran."""

    index: int
    node: Node
    allocated: int
    held: int


@dataclass
class RunStats:
    """What a run cost: bytes allocated for intermediates, peak bytes held, per-step trace."""

    allocated_bytes: int = 0
    peak_bytes: int = 0
    trace: list[Step] = field(default_factory=list)


def check_feed(order: Sequence[Node], feed: Mapping[Any, Any]) -> dict[Node, np.ndarray]:
    """Match the feed to the graph's placeholders (by node or by name) and validate it.

    Python numbers and lists are converted to the placeholder's dtype; a numpy
    array must already have the right dtype and shape.
    """
    by_name = {n.name: n for n in order if n.op is PLACEHOLDER}
    values: dict[Node, np.ndarray] = {}
    for key, value in feed.items():
        node = key if isinstance(key, Node) else by_name.get(key)
        if node is None:
            continue  # feeding more than this graph needs is allowed
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


class Executor:
    """Evaluate ``outputs`` given a feed of placeholder values.

    ``Executor(outputs).run(feed)`` is the naive executor: one fresh array per
    intermediate, never reused. After a run, ``stats`` holds the bytes
    allocated for intermediates, the peak held, and one :class:`Step` per op.

    ``Executor(outputs, plan=plan)`` computes inside a static memory plan
    (tags or offsets, p.17-22): one arena, every op writing into its view
    (:class:`memlab.arena.ArenaRunner`). ``Executor(outputs, memory="pool")``
    allocates from a caching pool node by node and frees after last use
    (p.14-16, :class:`memlab.arena.PoolRunner`).
    """

    def __init__(self, outputs: Node | Iterable[Node], plan: Any = None, memory: str = "naive") -> None:
        self.outputs = _as_list(outputs)
        self.stats = RunStats()
        self.runner: Any = None
        if memory not in ("naive", "pool"):
            raise MemlabError(f"memory must be 'naive' or 'pool', got {memory!r}")
        if plan is not None:
            from .arena import ArenaRunner
            self.runner = ArenaRunner(self.outputs, plan)
            self.order = self.runner.order
        else:
            self.order = topo_order(self.outputs)
            if memory == "pool":
                from .arena import PoolRunner
                self.runner = PoolRunner(self.outputs, self.order)

    def run(self, feed: Mapping[Any, Any] | None = None) -> list[np.ndarray]:
        """Compute every output; returns their values in order."""
        if self.runner is not None:
            result = self.runner.run(feed)
            self.stats = self.runner.stats
            return result
        values: dict[Node, np.ndarray] = check_feed(self.order, feed or {})
        stats = RunStats()
        for node in self.order:
            if node.op is CONSTANT:
                values[node] = node.value
            elif node.op is not PLACEHOLDER:
                out = np.empty(node.shape, node.dtype)
                compute_node(node, [values[x] for x in node.inputs], out)
                values[node] = out
                stats.allocated_bytes += node.nbytes
                stats.trace.append(Step(len(stats.trace), node, node.nbytes, stats.allocated_bytes))
        stats.peak_bytes = stats.allocated_bytes
        self.stats = stats
        return [values[o] for o in self.outputs]

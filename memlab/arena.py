"""Executors that compute inside a memory plan or a memory pool.

:class:`ArenaRunner` runs a static plan (p.17-22): it allocates **one arena**,
a numpy byte buffer of ``plan.total_bytes``, and computes every op with
``out=`` into a view at the node's offset (tag plans lay their storages out
one after another). Nothing else is allocated for intermediates, so a wrong
plan gives wrong numbers. Offsets are multiples of 64 bytes and numpy's
buffers are at least 16-byte aligned, so every view is aligned to its
dtype's itemsize. The arena is kept between runs; outputs are returned as
copies, so they stay right when the arena is overwritten.

:class:`PoolRunner` is dynamic allocation (p.14-16): node by node, a block
from a :class:`~memlab.mempool.MemoryPool`, freed when its last consumer has
run (outputs never freed); it reports the pool's peak reserved bytes.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .errors import PlanError
from .executor import RunStats, Step, check_feed, compute_node
from .graph import Node
from .ops import CONSTANT, PLACEHOLDER
from .mempool import MemoryPool


class ArenaRunner:
    """Run ``outputs`` inside ``plan`` (a tag or an offset plan): one arena, views at offsets."""

    def __init__(self, outputs: Sequence[Node], plan: Any) -> None:
        if list(plan.outputs) != list(outputs) and set(plan.outputs) != set(outputs):
            names = ", ".join(o.name for o in outputs)
            raise PlanError(f"the plan was made for other outputs than {names}")
        self.outputs = list(outputs)
        self.plan = plan
        self.order: list[Node] = list(plan.order)
        self.offset: dict[Node, int] = dict(plan.offset)
        self.total_bytes = int(plan.total_bytes)
        for n in self.order:
            if n.op.computes:
                o = self.offset.get(n)
                if o is None:
                    raise PlanError(f"node {n.name!r} has no place in the plan")
                if o < 0 or o % n.dtype.itemsize or o + n.nbytes > self.total_bytes:
                    raise PlanError(f"node {n.name!r} cannot be placed at offset {o} "
                                    f"of an arena of {self.total_bytes} bytes")
        self.arena: np.ndarray | None = None
        self._views: dict[Node, np.ndarray] = {}
        self._inputs = {n: tuple(n.inputs) for n in self.order}
        self.stats = RunStats()

    @property
    def arena_bytes(self) -> int:
        """Bytes of the arena actually allocated (0 before the first run)."""
        return 0 if self.arena is None else int(self.arena.nbytes)

    def _allocate(self) -> None:
        self.arena = arena = np.empty(self.total_bytes, np.uint8)
        self._views = {n: np.ndarray(n.shape, n.dtype, buffer=arena, offset=o)
                       for n, o in self.offset.items()}

    def run(self, feed: Mapping[Any, Any] | None = None) -> list[np.ndarray]:
        """Compute every output in the arena; returns copies of their values."""
        values: dict[Node, np.ndarray] = check_feed(self.order, feed or {})
        if self.arena is None:
            self._allocate()
        views, held = self._views, self.arena_bytes
        trace = []
        for node in self.order:
            if node.op is CONSTANT:
                values[node] = node.value
            elif node.op is not PLACEHOLDER:
                out = views[node]
                compute_node(node, [values[x] for x in self._inputs[node]], out)
                values[node] = out
                trace.append(Step(len(trace), node, 0, held))
        self.stats = RunStats(held, held, trace)
        return [values[o].copy() if o in views else values[o] for o in self.outputs]


class PoolRunner:
    """Run ``outputs`` imperatively through a fresh :class:`MemoryPool` per run (p.14-16)."""

    def __init__(self, outputs: Sequence[Node], order: Sequence[Node]) -> None:
        self.outputs = list(outputs)
        self.order = list(order)
        self.pool = MemoryPool()
        self.stats = RunStats()
        ref: dict[Node, int] = {}
        for n in self.order:
            for x in dict.fromkeys(n.inputs):
                ref[x] = ref.get(x, 0) + 1
        self._refcount = ref

    @property
    def peak_reserved_bytes(self) -> int:
        """Peak bytes the pool reserved during the last run."""
        return self.pool.stats.peak_reserved

    def run(self, feed: Mapping[Any, Any] | None = None) -> list[np.ndarray]:
        """Compute every output, allocating on demand and freeing after last use."""
        values: dict[Node, np.ndarray] = check_feed(self.order, feed or {})
        self.pool = pool = MemoryPool()
        ref = dict(self._refcount)
        keep = set(self.outputs)
        blocks: dict[Node, Any] = {}
        trace = []
        for node in self.order:
            if node.op is CONSTANT:
                values[node] = node.value
                continue
            if node.op is PLACEHOLDER:
                continue
            before = pool.stats.new_blocks
            block = pool.allocate(node.nbytes, node.name)
            out = block.view(node.shape, node.dtype)
            compute_node(node, [values[x] for x in node.inputs], out)
            values[node] = out
            blocks[node] = block
            new = pool.stats.new_blocks > before
            for x in dict.fromkeys(node.inputs):
                ref[x] -= 1
                if ref[x] == 0 and x in blocks and x not in keep:
                    pool.free(blocks.pop(x))
                    del values[x]
            trace.append(Step(len(trace), node, block.size if new else 0, pool.stats.bytes_reserved))
        self.stats = RunStats(pool.stats.bytes_requested, pool.stats.peak_reserved, trace)
        return [values[o] for o in self.outputs]

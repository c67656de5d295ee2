"""The run loop, written once, and the :class:`Runner` every executor is (lecture 7, p.10-16).

"Traverse the graph by topological order" (p.12): for each op, get memory for its output, compute
into it, then count down the reference counts of its inputs (p.22) and release those no later op
reads. What "get memory" and "release" mean is the runner's business (MiniTorch's backend idea):

* :class:`~memlab.execute.naive.NaiveRunner` -- a fresh array per value, never reused (p.10-13);
* :class:`~memlab.execute.pooled.PoolRunner` -- blocks from a caching pool, freed at last use
  (p.14-16);
* :class:`~memlab.execute.arena.ArenaRunner` -- views into one arena laid out by a static plan
  (p.17-22).

An op with a **workspace** (:mod:`memlab.graph.workspace`) gets it before it computes and gives it
back right after (:meth:`Runner.workspace`, :meth:`Runner.release_workspace`), before its dying
inputs; numpy needs no scratch, so the memory is obtained and counted, not written.

A runner reports :class:`RunStats` with one meaning everywhere: ``allocated_bytes`` is the memory
the run obtained for intermediate values and workspaces (fresh arrays, new pool blocks, or the
arena), ``peak_bytes`` the most bytes of such memory held at once (while an op runs, or after),
``trace`` one :class:`Step` per op.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..graph import CONSTANT, PLACEHOLDER, Node, as_list, check_order, topo_order, workspace_of
from ..memory.liveness import Liveness, distinct_inputs, reference_counts
from .compute import check_feed, compute_node


@dataclass
class Step:
    """One executed node: bytes newly obtained for it and bytes held after it ran."""

    index: int
    node: Node
    allocated: int
    held: int


@dataclass
class RunStats:
    """What a run cost: memory obtained for intermediates, the most held at once, one step per op."""

    allocated_bytes: int = 0
    peak_bytes: int = 0
    trace: list[Step] = field(default_factory=list)


class Runner:
    """Runs ``outputs`` in ``order``; subclasses say where values live by overriding the hooks.

    ``run(feed)`` returns the outputs' values (numpy arrays) and leaves :class:`RunStats` in
    ``stats``. Hooks: :meth:`allocate` (required), :meth:`release`, :meth:`held_bytes`
    (required), :meth:`start`, :meth:`load`, :meth:`compute` and :meth:`fetch` (a device runner
    moves values in and out there). ``liveness``: that of ``order``, when a plan kept it: its
    reference counts are then read, not counted again.
    """

    def __init__(self, outputs: Sequence[Node], order: Sequence[Node] | None = None,
                 liveness: Liveness | None = None) -> None:
        self.outputs = as_list(outputs)
        if liveness is not None:      # a plan's own order and counts, checked when it was made
            self.order = list(order if order is not None else liveness.order)
            self.refcount = liveness.refcounts
        else:  # a given order is checked (every needed node once, inputs first); None: topological
            self.order = topo_order(self.outputs) if order is None else check_order(self.outputs, order)
            self.refcount = reference_counts(self.order)
        self.stats = RunStats()

    # -- hooks ------------------------------------------------------------------------------
    def start(self) -> None:
        """Called once before the first op of every run."""

    def allocate(self, node: Node) -> tuple[Any, int]:
        """Memory for ``node``'s value, and how many bytes were newly obtained for it."""
        raise NotImplementedError

    def release(self, node: Node, value: Any) -> None:
        """``node``'s value is read by no later op (its reference count reached 0)."""

    def workspace(self, node: Node, nbytes: int) -> tuple[Any, int]:
        """Scratch memory of ``nbytes`` for ``node``'s op while it runs, and how many bytes were
        newly obtained for it (default: none, as for a runner whose plan placed it)."""
        return None, 0

    def release_workspace(self, node: Node, scratch: Any) -> None:
        """``node``'s op has run: its workspace may be reused."""

    def held_bytes(self) -> int:
        """Bytes of intermediate memory held right now."""
        raise NotImplementedError

    def load(self, node: Node, array: np.ndarray) -> Any:
        """A fed or constant value, in the form :meth:`compute` takes."""
        return array

    def compute(self, node: Node, inputs: list[Any], out: Any) -> None:
        """Compute ``node`` from its inputs' values into ``out``."""
        compute_node(node, inputs, out)

    def fetch(self, node: Node, value: Any) -> np.ndarray:
        """An output's value as a numpy array the caller may keep."""
        return value

    # -- the loop -----------------------------------------------------------------------------
    def run(self, feed: Mapping[Any, Any] | None = None) -> list[np.ndarray]:
        """Compute every output (p.12: traverse in topological order); returns their values."""
        feed = {} if feed is None else feed
        values = {n: self.load(n, a) for n, a in check_feed(self.order, feed).items()}
        self.start()
        refs, keep, stats = dict(self.refcount), set(self.outputs), RunStats()
        for node in self.order:
            if node.op is CONSTANT:
                values[node] = self.load(node, node.value)
                continue
            if node.op is PLACEHOLDER:
                continue
            out, new = self.allocate(node)
            w = workspace_of(node)
            scratch, extra = self.workspace(node, w) if w else (None, 0)
            self.compute(node, [values[x] for x in node.inputs], out)
            values[node] = out
            new += extra
            if w:
                stats.peak_bytes = max(stats.peak_bytes, self.held_bytes())
                self.release_workspace(node, scratch)
            for x in distinct_inputs(node):
                refs[x] -= 1
                if refs[x] == 0 and x.op.computes and x not in keep:
                    self.release(x, values.pop(x))
            stats.allocated_bytes += new
            held = self.held_bytes()
            stats.peak_bytes = max(stats.peak_bytes, held)
            stats.trace.append(Step(len(stats.trace), node, new, held))
        self.stats = stats
        return [self.fetch(o, values[o]) for o in self.outputs]

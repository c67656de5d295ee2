"""Event simulator of an in-tree on P processors (scheduling slides, "Model for parallel tree processing").

Model: ``P`` uniform processors share one memory; node ``i`` has work
``w[i]``. Each node is given a contiguous range of processors ``[lo, hi)``
and runs on all of them at once (node parallelism: it takes
``w[i] / (hi - lo) ** alpha``; ``alpha = 1`` is perfect speed-up, ``alpha < 1``
models the communication cost of node parallelism the slides warn about); nodes on disjoint ranges run at the same time (tree
parallelism). A node may start when its children (and any extra
predecessors, used to serialize subtrees) have ended and every processor of
its range is idle; among startable nodes the smallest priority rank goes
first (greedy list scheduling).

Memory convention: node ``i`` allocates ``m[i] + f[i]`` when it starts and
frees ``m[i]`` plus its children's outputs when it ends; at an instant where
nodes end and others start the frees come first, and the curve value at
``times[k]`` is the memory held on ``[times[k], times[k+1])``. A sequential
run (P = 1) therefore has the peak of :func:`memlab.scheduling.treebase.peak`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .timeline import step_curve

from ..errors import TreeError, check_numbers
from .listsched import run_list
from .treebase import Tree, check_tree

__all__ = ["TreeSchedule", "simulate", "check_node_work", "processor_peaks"]


@dataclass
class TreeSchedule:
    """A parallel tree schedule: per-node ``start``, ``end`` and processor
    range ``procs`` (lo, hi); ``makespan``; memory step curve ``times`` /
    ``memory`` and its ``peak`` (scheduling slides, "Model for parallel tree processing")."""

    start: list[float]
    end: list[float]
    procs: list[tuple[int, int]]
    makespan: float
    times: np.ndarray
    memory: np.ndarray
    peak: float
    P: int = 1
    label: str = ""
    extra: dict = field(default_factory=dict)

    def order(self) -> list[int]:
        """Nodes by start time (ties by end time, then index)."""
        return sorted(range(len(self.start)), key=lambda i: (self.start[i], self.end[i], i))


def check_node_work(tree: Tree, w: Sequence[float] | None) -> list[float]:
    """Node durations (work) as floats, ones by default; TreeError naming the node if bad."""
    check_tree(tree, "tree")
    if w is None:
        return [1.0] * tree.n
    w = check_numbers(w, "w (work per node)", error=TreeError)
    if len(w) != tree.n:
        raise TreeError(f"length mismatch: w has {len(w)} entries but the tree has {tree.n} nodes")
    for i, x in enumerate(w):
        if not np.isfinite(x) or x < 0:
            raise TreeError(f"node {i}: work w[{i}] = {x} must be finite and >= 0")
    return w


def simulate(tree: Tree, w: Sequence[float] | None, P: int, procs: Sequence[tuple[int, int]],
             rank: Sequence[float], after: dict[int, list[int]] | None = None,
             label: str = "", alpha: float = 1.0) -> TreeSchedule:
    """Run the greedy event simulation described in the module doc.

    ``procs[i] = (lo, hi)`` with 0 <= lo < hi <= P; ``rank[i]`` the priority
    (smaller first); ``after[i]`` extra nodes that must end before i starts;
    ``alpha`` the speed-up exponent (time = w / p**alpha).
    """
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0 < alpha <= 1:
        raise TreeError(f"alpha must be in (0, 1], got {alpha}")
    n = tree.n
    w = check_node_work(tree, w)
    if int(P) != P or P < 1:
        raise TreeError(f"P must be a positive integer, got {P}")
    for i, (lo, hi) in enumerate(procs):
        if not 0 <= lo < hi <= P:
            raise TreeError(f"node {i}: processor range [{lo}, {hi}) is not inside [0, {P})")
    preds = [list(tree.children[i]) + list((after or {}).get(i, ())) for i in range(n)]
    span = [hi - lo for lo, hi in procs]
    start, end, _ = run_list(n, preds, lambda i: w[i] / span[i] ** alpha, int(P), rank,
                             lanes=[tuple(p) for p in procs])
    f, m, children = tree.f, tree.m, tree.children
    events = [(start[i], 1, m[i] + f[i]) for i in range(n)]
    events += [(end[i], 0, -(m[i] + sum(f[c] for c in children[i]))) for i in range(n)]
    times, memory = step_curve(events)
    return TreeSchedule(start, end, [tuple(p) for p in procs], max(end), times,
                        memory, float(memory.max()), int(P), label)


def processor_peaks(tree: Tree, sched: TreeSchedule, spread: bool = True) -> list[float]:
    """Each processor's own peak memory in a schedule ``sched`` of ``tree``.

    ``spread=True`` (node parallelism with distributed data, as in a parallel multifrontal solver):
    a node on ``p`` processors puts ``(m + f) / p`` on each of them. ``spread=False``: all of it on
    the first processor of its range (where a Dask run puts the task). Either way ``m + f`` is held
    from the node's start, ``m`` until its end, ``f`` until its parent's end. The largest entry is
    the M_max(P) of the scheduling slides' "Proportional mapping": memory scales perfectly when
    P * M_max(P) equals the sequential peak, and badly when it is much larger.
    """
    check_tree(tree, "processor_peaks: tree")
    if not isinstance(sched, TreeSchedule) or len(sched.start) != tree.n:
        raise TreeError(f"processor_peaks: sched must be the TreeSchedule of a mapping of this "
                        f"tree (ml.mapping.proportional(tree, w, P)), got {sched!r:.60}")
    if not isinstance(spread, bool):
        raise TreeError(f"processor_peaks: spread must be True (data split over a node's "
                        f"processors) or False (on its first one), got {spread!r:.60}")
    events: list[list] = [[] for _ in range(sched.P)]
    for i in range(tree.n):
        lo, hi = sched.procs[i]
        procs = range(lo, hi) if spread else range(lo, lo + 1)
        share = 1.0 / len(procs)
        q = tree.parent[i]
        for p in procs:
            events[p].append((sched.start[i], 1, (tree.m[i] + tree.f[i]) * share))
            events[p].append((sched.end[i], 0, -tree.m[i] * share))
            if q >= 0:
                events[p].append((sched.end[q], 0, -tree.f[i] * share))
    return [float(step_curve(e)[1].max()) if e else 0.0 for e in events]

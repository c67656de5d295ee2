"""Beyond tags: byte offsets in one arena, and a lower bound on any plan.

A tag plan gives each storage its own slot; an **offset plan** places every
value at a byte offset of one arena, so a small value can sit in the hole a
big one left. :func:`plan_offsets` is the greedy-by-size, best-fit placement
of TensorFlow Lite's arena planner, written by us: values (after merging
in-place chains, p.19) are placed biggest first, each in the smallest gap
left by the already placed values whose lifetimes overlap its own, or after
all of them. :func:`live_bytes_lower_bound` is the most bytes alive at any
step of the order: no plan for that order can use less.

A value is alive from the step that computes it to the step of its last
consumer (graph outputs: to the end). Two values alive at the same step
must not overlap, except an in-place pair: an input whose last consumer
is the op may share exactly its memory with the op's output (p.20). An op's
workspace (:mod:`memlab.graph.workspace`) is a block of its own, alive at
the op's step only: it overlaps none of the op's inputs nor its output.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from heapq import heappop, heappush
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from ..errors import PlanError, check_bool
from ..graph import Node
from .liveness import Liveness, liveness_of
from .order import plan_liveness
from .plan import ALIGN, Plan, align, check_alignment, check_alignment_of, check_is_plan
from .planner import TagPlan


@dataclass
class OffsetPlan:
    """Byte offsets of every computed value in one arena of ``total_bytes``.

    ``clusters`` are the in-place chains placed as one block (each a list of
    nodes sharing one offset); ``offset[node]`` is aligned to ``alignment`` bytes (64 unless
    the planner was asked for more, e.g. 256 for a GPU). ``liveness`` is the
    :class:`~memlab.memory.liveness.Liveness` the plan was made from (as in ``TagPlan``).
    ``workspace_offset[node]``: where the workspace of op ``node`` lies while it runs (ops with a
    workspace only).
    """

    outputs: list[Node]
    order: list[Node]
    offset: dict[Node, int]
    total_bytes: int
    inplace: bool = True
    clusters: list[list[Node]] = field(default_factory=list)
    alignment: int = ALIGN
    liveness: Liveness | None = field(default=None, repr=False, compare=False)
    workspace_offset: dict[Node, int] = field(default_factory=dict)
    kind = "offsets"

    def __repr__(self) -> str:
        return f"<OffsetPlan {len(self.offset)} values, {self.total_bytes} bytes>"


#: above this many blocks to place, :func:`plan_offsets` switches from greedy-by-size to a scan
SCAN_ABOVE = 20_000


def plan_offsets(outputs: Node | Iterable[Node], order: Sequence[Node] | str | None = None,
                 inplace: bool = True, method: str = "auto", alignment: int = ALIGN) -> OffsetPlan:
    """Byte offsets for every value in one arena, over the values' lifetimes.

    ``method="greedy"``: TensorFlow Lite's greedy-by-size best fit (biggest first, each in the
    smallest gap left by the placed values alive at the same time); quadratic in the worst case.
    ``method="scan"``: the values in order of their first step (biggest first on a tie), each in the
    smallest free gap of the arena at that step, freed after its last step: near-linear.
    ``"auto"`` uses greedy up to :data:`SCAN_ABOVE` blocks. ``inplace`` merges an op's output with
    an input it may overwrite when the op is that input's last consumer (p.19-20). Every offset
    is a multiple of ``alignment`` bytes (256 for a GPU). ``order``: an execution order, a method
    of :func:`~memlab.memory.order.memory_order` (``"dfs"``: depth-first) or None for its default.
    """
    check_alignment(alignment)
    if method not in ("auto", "greedy", "scan"):
        raise PlanError(f"method must be 'auto', 'greedy' or 'scan', got {method!r}")
    check_bool(inplace, "plan_offsets: inplace", PlanError)
    liveness = plan_liveness(outputs, order)
    outs, order = liveness.outputs, liveness.order
    liveness.check_sizes()
    graph = liveness.graph
    nodes = graph.nodes
    check_alignment_of(alignment, liveness.computed, "plan_offsets")
    first, last, size, clusters, work = _blocks(liveness, inplace, alignment)
    if method == "scan" or (method == "auto" and len(size) > SCAN_ABOVE):
        off, total = _scan(first, last, size)
    else:
        off, total = _greedy_by_size(first, last, size)
    offset = {nodes[v]: off[k] for k, c in enumerate(clusters) for v in c}
    workspace = {nodes[i]: off[len(clusters) + k] for k, i in enumerate(work)}
    return OffsetPlan(outs, order, offset, total, inplace, [[nodes[v] for v in c] for c in clusters],
                      alignment, liveness, workspace)


def _blocks(liveness: Liveness, inplace: bool, alignment: int
            ) -> tuple[list[int], list[int], list[int], list[list[int]], list[int]]:
    """The blocks to place: each in-place chain (:meth:`~.liveness.Liveness.clusters`) from its
    first value's step to its last value's last step, of its biggest value's aligned bytes, then
    each workspace at its op's step. Returns ``(first, last, size, chains, ops with a workspace)``."""
    graph = liveness.graph
    gfirst, glast, gsize, gwork = liveness.first, liveness.last_step, graph.size, graph.work
    clusters = liveness.clusters(inplace)
    first = [gfirst[c[0]] for c in clusters]
    last = [glast[c[-1]] for c in clusters]
    size = [align(gsize[c[0]] if len(c) == 1 else max(gsize[v] for v in c), alignment)
            for c in clusters]
    work = [i for i in liveness.indices if gwork[i] > 0]
    first += [gfirst[i] for i in work]
    last += [gfirst[i] for i in work]
    size += [align(gwork[i], alignment) for i in work]
    return first, last, size, clusters, work


def _greedy_by_size(first: list[int], last: list[int], size: list[int]) -> tuple[list[int], int]:
    """Biggest first; each block in the smallest gap among the placed blocks alive with it.

    The placed blocks are kept in order of offset (ties: in the order they were placed), as rows
    ``(first, last, offset, end)`` of one array, so a block finds those alive with it in one mask
    and the gaps between them with one running maximum of their ends: the gap before each is its
    offset less the highest end below it; the smallest gap of at least the block's size wins (ties:
    the lowest), else the block goes on top of them all."""
    m = len(size)
    rank = sorted(range(m), key=lambda k: (-size[k], first[k], k))
    rows = np.empty((4, m), np.int64)
    p_first, p_last, p_off, p_end = rows
    offsets: list[int] = []                # the placed offsets, sorted (rows' order)
    off = [0] * m
    total = 0
    top = np.iinfo(np.int64).max
    for j, k in enumerate(rank):
        a, b, s = first[k], last[k], size[k]
        pos = 0
        if j:
            alive = np.flatnonzero((p_first[:j] <= b) & (p_last[:j] >= a))
            if len(alive):
                prev = np.maximum.accumulate(p_end[alive])
                gaps = p_off[alive]
                gaps[1:] -= prev[:-1]
                i = int(np.where(gaps >= s, gaps, top).argmin())
                if gaps[i] >= s:
                    pos = int(prev[i - 1]) if i else 0
                else:
                    pos = int(prev[-1])
        off[k] = pos
        at = bisect_right(offsets, pos)
        offsets.insert(at, pos)
        if at < j:
            rows[:, at + 1:j + 1] = rows[:, at:j]
        rows[:, at] = (a, b, pos, pos + s)
        if pos + s > total:
            total = pos + s
    return off, total


def _scan(first: list[int], last: list[int], size: list[int]) -> tuple[list[int], int]:
    """Blocks in order of first step; each takes the smallest free gap, freed after its last step."""
    gaps: list[tuple[int, int]] = []       # free gaps below the top, as (length, offset), sorted
    gap_at: dict[int, int] = {}            # offset -> length of a free gap
    gap_end: dict[int, int] = {}           # end offset -> offset of a free gap
    alive: list[tuple[int, int]] = []      # heap of (last step, block)
    off = [0] * len(size)
    top = total = 0

    def release(o: int, n: int) -> None:
        nonlocal top
        if o + n in gap_at:                # merge with the gap after it
            m = gap_at.pop(o + n)
            del gap_end[o + n + m]
            gaps.pop(bisect_left(gaps, (m, o + n)))
            n += m
        if o in gap_end:                   # and the gap before it
            p = gap_end.pop(o)
            m = gap_at.pop(p)
            gaps.pop(bisect_left(gaps, (m, p)))
            o, n = p, n + m
        if o + n == top:                   # a gap at the top lowers the top
            top = o
            return
        gap_at[o], gap_end[o + n] = n, o
        insort(gaps, (n, o))

    for k in sorted(range(len(size)), key=lambda k: (first[k], -size[k], k)):
        while alive and alive[0][0] < first[k]:
            _, j = heappop(alive)
            release(off[j], size[j])
        s = size[k]
        i = bisect_left(gaps, (s, -1))
        if i < len(gaps):                  # the smallest gap that fits
            n, o = gaps.pop(i)
            del gap_at[o], gap_end[o + n]
            if n > s:
                gap_at[o + s], gap_end[o + n] = n - s, o + s
                insort(gaps, (n - s, o + s))
        else:
            o, top = top, top + s
            total = max(total, top)
        off[k] = o
        heappush(alive, (last[k], k))
    return off, total


def live_bytes_lower_bound(plan: Plan) -> int:
    """The most bytes alive at any step of ``plan.order`` (a lower bound on ``plan.total_bytes``).

    At each step it sums the computed values alive there, and the op's workspace; when the plan
    allows in-place (``plan.inplace``), an input that dies at the step and
    that the op may overwrite is counted once with the op's output, since
    they may share memory (p.20). Placeholders and constants are not counted.
    """
    check_is_plan(plan, "live_bytes_lower_bound: plan")
    liveness = liveness_of(plan)                 # the plan's own, when its planner kept it
    return liveness.peak(bool(getattr(plan, "inplace", True)))


def plan_tags_by_size(outputs: Node | Iterable[Node], order: Sequence[Node] | str | None = None,
                      inplace: bool = True, alignment: int = ALIGN) -> TagPlan:
    """Tags chosen with the whole graph in view: greedy by size over lifetimes.

    Beyond the lecture: the tag planner of p.22 decides online, op by op, so
    a tag it grows for one value stays big. Knowing every lifetime ahead of
    time, we can instead take the in-place chains biggest first and put each
    into the first tag none of whose chains is alive at the same time (a new
    tag if none), as TensorFlow Lite does for its shared objects. Same
    :class:`~memlab.memory.planner.TagPlan` as :func:`plan_memory` (no ``steps``); ``order`` as
    there.
    """
    check_alignment(alignment)
    check_bool(inplace, "plan_tags_by_size: inplace", PlanError)
    liveness = plan_liveness(outputs, order)
    outs, order = liveness.outputs, liveness.order
    liveness.check_sizes()
    graph = liveness.graph
    nodes = graph.nodes
    check_alignment_of(alignment, liveness.computed, "plan_tags_by_size")
    first, last, need, ichains, iwork = _blocks(liveness, inplace, 1)
    span = list(zip(first, last))
    clusters = [[nodes[v] for v in c] for c in ichains]
    users = clusters + [[nodes[i]] for i in iwork]
    wstorage: dict[Node, int] = {}
    busy: list[list[tuple[int, int]]] = []  # per tag: sorted, disjoint (first, last) intervals
    storage: dict[Node, int] = {}
    sbytes: dict[int, int] = {}
    for k in sorted(range(len(users)), key=lambda k: (-need[k], span[k][0], k)):
        a, b = span[k]
        for sid, intervals in enumerate(busy):
            j = bisect_left(intervals, (a, b))
            if (j == 0 or intervals[j - 1][1] < a) and (j == len(intervals) or intervals[j][0] > b):
                intervals.insert(j, (a, b))
                break
        else:
            sid = len(busy)
            busy.append([(a, b)])
            sbytes[sid] = need[k]
        for v in users[k]:
            (storage if k < len(clusters) else wstorage)[v] = sid
    pairs = [(c[i], c[i + 1]) for c in clusters for i in range(len(c) - 1)]
    return TagPlan(outs, order, storage, sbytes, inplace=inplace, share=True, inplace_pairs=pairs,
                      alignment=check_alignment(alignment), liveness=liveness,
                      workspace_storage=wstorage)

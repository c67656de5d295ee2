"""Parallel mappings of in-trees: all-to-all, proportional, memory-aware (scheduling slides,
"Model for parallel tree processing" to "Memory-aware mappings").

Two sources of parallelism (scheduling slides, "Model for parallel tree processing"):
*node parallelism* (several processors on one node; no extra memory) and
*tree parallelism* (independent subtrees at once; their data coexist).

* :func:`all_to_all` — best post-order, every processor on every node: node i
  takes ``w_i / P``; same peak as the sequential run, no tree parallelism
  (scheduling slides, "All-to-all mapping").
* :func:`proportional` — the root gets all P processors; each node's
  processors are split among its children's subtrees in proportion to their
  work ``W_T`` (scheduling slides, "Proportional mapping"; Pothen and Sun), rounded to
  whole processors (:func:`split_range`): children with a share of one
  processor or more get disjoint contiguous ranges, smaller ones time-share
  single processors (processors of their own when their shares add up to
  one); a subtree on one processor runs in best post-order. On a complete
  tree whose splits divide P the load is perfectly balanced (the makespan is
  all-to-all's with alpha = 1); elsewhere whole processors leave some idle
  while a parent waits for its slowest child.
* :func:`memory_aware` — after Agullo, Guermouche and L'Excellent, "Reducing the I/O volume in
  sparse out-of-core multifrontal methods", SIAM J. Sci. Comput., 2010: try the
  proportional split, giving each child a memory share in proportion to its
  processors; if some child's minimum peak does not fit its share, serialize
  the children (one after another, each with all the processors, budget
  lowered by the outputs already held); if even that does not fit, run the
  whole subtree sequentially in Liu's optimal order. Every subtree's memory
  stays within its budget, so the peak is at most ``M_B``. Bounds below the
  sequential minimum raise :class:`~memlab.errors.BudgetError`.
"""
from __future__ import annotations

import bisect
import math
from typing import Sequence

from ..errors import BudgetError, TreeError, check_int, check_number
from .liu import optimal_traversal, subtree_optimal_peaks
from .postorder import best_postorder
from .treebase import Tree, check_tree
from .treesim import TreeSchedule, check_node_work, processor_peaks, simulate

__all__ = ["all_to_all", "proportional", "memory_aware", "sequential_minimum",
           "tradeoff_points", "pareto_front", "subtree_work", "split_range", "processor_peaks"]


def subtree_work(tree: Tree, w: Sequence[float]) -> list[float]:
    """W_T for every subtree: the total work of its nodes (scheduling slides, "Proportional mapping")."""
    W = list(w)
    for i in tree.bottom_up():
        p = tree.parent[i]
        if p >= 0:
            W[p] += W[i]
    return W


def split_range(lo: int, hi: int, shares: Sequence[float]) -> list[tuple[int, int]]:
    """Whole processors ``[lo, hi)`` for children of work ``shares`` (p_i = P * W_i / W,
    scheduling slides, "Proportional mapping", rounded to whole processors).

    A child whose ideal share p_i is at least one processor is *big*; the others are *small*.
    The big children, and the small ones together as one group if their shares add up to a
    processor or more, get disjoint contiguous ranges covering ``[lo, hi)``, sized by largest
    remainder in proportion to their shares. Small children get one processor each, which they
    **time-share** (the subtrees on one processor run one after the other): in non-increasing order
    of work, each takes the least-loaded processor of the group's range (as in LPT), or, when the
    group has less than one processor's share, the least-loaded processor of ``[lo, hi)`` (a big
    child's share spread over its range). So tiny subtrees never take processors from a big
    sibling, and with more children than processors, all small, every child time-shares."""
    p, k = hi - lo, len(shares)
    if k == 0:
        return []
    tot = float(sum(shares))
    ideal = [p * s / tot if tot > 0 else p / k for s in shares]
    small = [i for i in range(k) if ideal[i] < 1 - 1e-9]
    group = sum(ideal[i] for i in small)
    owners: list = [i for i in range(k) if ideal[i] >= 1 - 1e-9]
    if small and group >= 1 - 1e-9:
        owners.append("small")
    share = {o: (group if o == "small" else ideal[o]) for o in owners}
    out: list[tuple[int, int]] = [(lo, lo + 1)] * k
    load = [0.0] * p
    span = {}
    if owners:
        scale = p / sum(share.values())
        want = {o: share[o] * scale for o in owners}
        size = {o: int(math.floor(want[o] + 1e-9)) for o in owners}
        extra = p - sum(size.values())
        for o in sorted(owners, key=lambda o: (-(want[o] - size[o]), owners.index(o)))[:extra]:
            size[o] += 1   # largest remainder: the extra processors to the most under-served
        a = 0
        for o in owners:
            span[o] = (a, a + size[o])
            if o != "small":
                out[o] = (lo + a, lo + a + size[o])
                for q in range(a, a + size[o]):
                    load[q] = ideal[o] / size[o]
            a += size[o]
    first, last = span.get("small", (0, p))
    for i in sorted(small, key=lambda i: (-ideal[i], i)):
        q = min(range(first, last), key=lambda q: (load[q], q))
        load[q] += ideal[i]
        out[i] = (lo + q, lo + q + 1)
    return out


def _check_P(P: int) -> int:
    return check_int(P, "P", 1, TreeError)


def all_to_all(tree: Tree, w: Sequence[float] | None = None, P: int = 1,
               alpha: float = 1.0) -> TreeSchedule:
    """All-to-all mapping (scheduling slides, "All-to-all mapping"): best post-order, all P processors on each
    node, which takes w_i / P**alpha (w_i / P by default)."""
    P = _check_P(P)
    check_node_work(tree, w)
    order, _ = best_postorder(tree)
    rank = [0] * tree.n
    for k, v in enumerate(order):
        rank[v] = k
    return simulate(tree, w, P, [(0, P)] * tree.n, rank, label="all-to-all", alpha=alpha)


def sequential_minimum(tree: Tree) -> float:
    """The least peak of any sequential traversal (Liu 1987): no mapping can do better."""
    return optimal_traversal(tree)[1]


def _postorder_rank(tree: Tree) -> list[int]:
    """Each node's position in the best post-order: the simulator's priority (smaller first)."""
    order, _ = best_postorder(tree)
    rank = [0] * tree.n
    for k, v in enumerate(order):
        rank[v] = k
    return rank


def _subtree_nodes(tree: Tree, v: int) -> list[int]:
    """The nodes of the subtree rooted at ``v``, breadth first (``tree.subtree(v)``'s numbering)."""
    nodes = [v]
    j = 0
    while j < len(nodes):
        nodes.extend(tree.children[nodes[j]])
        j += 1
    return nodes


class _Leaves:
    """The leaves of any subtree, found by bisection on a pre-order numbering."""

    def __init__(self, tree: Tree) -> None:
        self.pre, self.size = [0] * tree.n, tree.subtree_sizes()
        self.pre_of_leaf: list[int] = []
        self.leaves: list[int] = []
        stack, k = [tree.root], 0
        while stack:
            v = stack.pop()
            self.pre[v], k = k, k + 1
            if not tree.children[v]:
                self.pre_of_leaf.append(self.pre[v])
                self.leaves.append(v)
            stack.extend(reversed(tree.children[v]))

    def under(self, v: int) -> list[int]:
        a = bisect.bisect_left(self.pre_of_leaf, self.pre[v])
        b = bisect.bisect_left(self.pre_of_leaf, self.pre[v] + self.size[v])
        return self.leaves[a:b]


def _run_sequentially(tree: Tree, v: int, rng: tuple[int, int], procs: list[tuple[int, int]],
                      rank: list[int], liu: bool) -> None:
    """Put the whole subtree of ``v`` on the range ``rng``; with ``liu``, re-rank its nodes in
    Liu's optimal order, in the rank slots they held (the subtree's least sequential peak)."""
    nodes = _subtree_nodes(tree, v)
    for x in nodes:
        procs[x] = rng
    if liu and len(nodes) > 1:
        liu_order, _ = optimal_traversal(tree.subtree(v))   # sub node j is nodes[j]
        slots = sorted(rank[x] for x in nodes)
        for s, j in zip(slots, liu_order):
            rank[nodes[j]] = s


def _serial_order(tree: Tree, kids: Sequence[int], opt: Sequence[float], B: float
                  ) -> list[int] | None:
    """The children one after another, by non-increasing (least peak - output), if each fits
    ``B`` less the outputs of those before it; None if one does not."""
    seq = sorted(kids, key=lambda c: tree.f[c] - opt[c])
    held = 0.0
    for c in seq:
        if held + opt[c] > B:
            return None
        held += tree.f[c]
    return seq


def _mapping(tree: Tree, w: list[float], P: int, budget: float | None
             ) -> tuple[list[tuple[int, int]], list[int], dict[int, list[int]], dict]:
    """Processor ranges, priorities, extra predecessors and the decisions' trace of the
    proportional mapping (``budget`` None) or of the memory-aware one (a bound)."""
    W = subtree_work(tree, w)
    rank = _postorder_rank(tree)
    procs: list[tuple[int, int]] = [(0, P)] * tree.n
    after: dict[int, list[int]] = {}
    decision: dict[int, str] = {}  # node -> how its children were mapped (the trace)
    opt = subtree_optimal_peaks(tree) if budget is not None else None
    leaves = _Leaves(tree)
    work = [(tree.root, 0, P, budget)]
    while work:
        v, lo, hi, B = work.pop()
        kids = tree.children[v]
        procs[v] = (lo, hi)
        if hi - lo == 1 or not kids:        # one processor, or a leaf: the subtree in order
            _run_sequentially(tree, v, (lo, hi), procs, rank, liu=budget is not None)
            if budget is not None and kids:
                decision[v] = "sequential"
            continue
        ranges = split_range(lo, hi, [W[c] for c in kids])
        if B is None:                       # proportional: split, recurse
            decision[v] = "parallel"
            work.extend((c, a, b, None) for c, (a, b) in zip(kids, ranges))
            continue
        assert opt is not None
        widths = [b - a for a, b in ranges]
        shares = [B * x / sum(widths) for x in widths]
        if all(opt[c] <= s for c, s in zip(kids, shares)):   # each child fits its memory share
            decision[v] = "parallel"
            work.extend((c, a, b, s) for c, (a, b), s in zip(kids, ranges, shares))
            continue
        seq = _serial_order(tree, kids, opt, B)
        if seq is not None:                 # one child after another, all the processors each
            decision[v] = "serialized"
            held = 0.0
            for prev, c in zip([None] + seq[:-1], seq):
                work.append((c, lo, hi, B - held))
                held += tree.f[c]
                if prev is not None:
                    for leaf in leaves.under(c):
                        after.setdefault(leaf, []).append(prev)
            continue
        decision[v] = "sequential"          # nothing fits: Liu's optimal order on all of them
        _run_sequentially(tree, v, (lo, hi), procs, rank, liu=True)
    stats: dict = {x: sum(d == x for d in decision.values())
                   for x in ("parallel", "serialized", "sequential")}
    stats["decisions"] = decision
    return procs, rank, after, stats


def proportional(tree: Tree, w: Sequence[float] | None = None, P: int = 1,
                 alpha: float = 1.0) -> TreeSchedule:
    """Proportional mapping (scheduling slides, "Proportional mapping"): subtree T_i gets p_i = p * W_Ti / W of its
    parent's p processors (W summed over the siblings), recursively."""
    P = _check_P(P)
    w = check_node_work(tree, w)
    procs, rank, after, stats = _mapping(tree, w, P, None)
    sched = simulate(tree, w, P, procs, rank, after, label="proportional", alpha=alpha)
    sched.extra.update(stats)
    return sched


def memory_aware(tree: Tree, w: Sequence[float] | None = None, P: int = 1,
                 M_B: float | None = None, alpha: float = 1.0) -> TreeSchedule:
    """Memory-aware mapping enforcing the bound ``M_B`` (after Agullo et al.;
    scheduling slides, "Memory-aware mappings"). Raises BudgetError stating the
    sequential minimum when ``M_B`` is below it; ``M_B=None`` uses that minimum."""
    P = _check_P(P)
    w = check_node_work(tree, w)
    minimum = sequential_minimum(tree)
    if M_B is None:
        M_B = minimum
    check_number(M_B, "memory_aware: M_B (a memory bound, or None)", error=BudgetError)
    if M_B < minimum * (1 - 1e-12):
        raise BudgetError(f"memory bound M_B={M_B:g} is below the sequential minimum "
                          f"{minimum:g} (Liu's optimal traversal): no schedule fits")
    procs, rank, after, stats = _mapping(tree, w, P, float(M_B))
    sched = simulate(tree, w, P, procs, rank, after, label="memory-aware", alpha=alpha)
    sched.extra.update(stats, bound=float(M_B), minimum=minimum)
    return sched


def tradeoff_points(tree: Tree, w: Sequence[float] | None = None,
                    Ps: Sequence[int] = (1, 2, 4, 8, 16),
                    bound_factors: Sequence[float] = (1.0, 1.5, 2.0, 4.0),
                    alpha: float = 1.0) -> list[dict]:
    """Makespan-vs-peak points (scheduling slides, "Trade-off time vs. memory"): for each
    P, all-to-all, proportional, and memory-aware with M_B = factor x the
    sequential minimum; ``alpha`` is the node speed-up exponent. Each point
    is a dict with keys mapping, P, bound, makespan, peak."""
    w = check_node_work(tree, w)
    minimum = sequential_minimum(tree)
    pts = []
    for P in Ps:
        for name, fn in (("all-to-all", all_to_all), ("proportional", proportional)):
            s = fn(tree, w, P, alpha=alpha)
            pts.append({"mapping": name, "P": P, "bound": None, "makespan": s.makespan, "peak": s.peak})
        for fac in bound_factors:
            s = memory_aware(tree, w, P, fac * minimum, alpha=alpha)
            pts.append({"mapping": "memory-aware", "P": P, "bound": fac * minimum,
                        "makespan": s.makespan, "peak": s.peak})
    return pts


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points (makespan, peak) no other point beats on both, by makespan.

    The two ends of the returned front are the schedules at the two ends of
    the time/memory trade-off (scheduling slides, "Complexity results": no schedule is
    best at both). Ties keep the first index.
    """
    front: list[int] = []
    best_peak = math.inf
    for k in sorted(range(len(points)), key=lambda k: (points[k][0], points[k][1], k)):
        if points[k][1] < best_peak:
            front.append(k)
            best_peak = points[k][1]
    return front

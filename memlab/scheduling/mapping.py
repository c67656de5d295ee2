"""Parallel mappings of in-trees: all-to-all, proportional, memory-aware (seed 002).

Two sources of parallelism (seed 002, "Model for parallel tree processing"):
*node parallelism* (several processors on one node; no extra memory) and
*tree parallelism* (independent subtrees at once; their data coexist).

* :func:`all_to_all` — best post-order, every processor on every node: node i
  takes ``w_i / P``; same peak as the sequential run, no tree parallelism
  (seed 002, "All-to-all mapping").
* :func:`proportional` — the root gets all P processors; each node's
  processors are split among its children's subtrees in proportion to their
  work ``W_T`` (seed 002, "Proportional mapping"; Pothen and Sun), rounded to
  whole processors (:func:`split_range`): disjoint contiguous ranges, or, with
  more children than processors, children time-sharing single processors;
  a subtree on one processor runs in best post-order.
* :func:`memory_aware` — after Agullo et al. (seed 002 ref. [3]): try the
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
from .treesim import TreeSchedule, check_work, simulate

__all__ = ["all_to_all", "proportional", "memory_aware", "sequential_minimum",
           "tradeoff_points", "pareto_front", "subtree_work", "split_range"]


def subtree_work(tree: Tree, w: Sequence[float]) -> list[float]:
    """W_T for every subtree: the total work of its nodes (seed 002, "Proportional mapping")."""
    W = list(w)
    for i in tree.bottom_up():
        p = tree.parent[i]
        if p >= 0:
            W[p] += W[i]
    return W


def split_range(lo: int, hi: int, shares: Sequence[float]) -> list[tuple[int, int]]:
    """Whole processors ``[lo, hi)`` for children of work ``shares`` (p_i = P * W_i / W,
    seed 002 "Proportional mapping", rounded to whole processors).

    With at least as many processors as children, each child gets a contiguous
    range of at least one processor, sizes by largest remainder (the ranges
    are disjoint and cover ``[lo, hi)``). With fewer processors than children
    the children **time-share**: each gets one processor, the children taking
    the least-loaded processor in non-increasing order of work (LPT), and the
    children on one processor run one after the other."""
    p, k = hi - lo, len(shares)
    tot = float(sum(shares))
    ideal = [p * s / tot if tot > 0 else p / k for s in shares] if k else []
    if k > p:
        load = [0.0] * p
        out: list[tuple[int, int]] = [(lo, lo + 1)] * k
        for i in sorted(range(k), key=lambda i: (-ideal[i], i)):
            q = min(range(p), key=lambda q: (load[q], q))
            load[q] += ideal[i]
            out[i] = (lo + q, lo + q + 1)
        return out
    size = [max(1, int(math.floor(x + 1e-9))) for x in ideal]
    while sum(size) > p:  # too many: take from the most over-served child
        i = max((i for i in range(k) if size[i] > 1), key=lambda i: (size[i] - ideal[i], -i))
        size[i] -= 1
    while sum(size) < p:  # too few: give to the most under-served child
        i = max(range(k), key=lambda i: (ideal[i] - size[i], -i))
        size[i] += 1
    out, a = [], lo
    for n in size:
        out.append((a, a + n))
        a += n
    return out


def _check_P(P: int) -> int:
    return check_int(P, "P", 1, TreeError)


def all_to_all(tree: Tree, w: Sequence[float] | None = None, P: int = 1,
               alpha: float = 1.0) -> TreeSchedule:
    """All-to-all mapping (seed 002): best post-order, all P processors on each
    node, which takes w_i / P**alpha (w_i / P by default)."""
    P = _check_P(P)
    check_work(tree, w)
    order, _ = best_postorder(tree)
    rank = [0] * tree.n
    for k, v in enumerate(order):
        rank[v] = k
    return simulate(tree, w, P, [(0, P)] * tree.n, rank, label="all-to-all", alpha=alpha)


def sequential_minimum(tree: Tree) -> float:
    """The least peak of any sequential traversal (Liu 1987): no mapping can do better."""
    return optimal_traversal(tree)[1]


def _mapping(tree: Tree, w: list[float], P: int, budget: float | None
             ) -> tuple[list[tuple[int, int]], list[int], dict[int, list[int]], dict]:
    n = tree.n
    W = subtree_work(tree, w)
    order, _ = best_postorder(tree)
    rank = [0] * n
    for k, v in enumerate(order):
        rank[v] = k
    procs: list[tuple[int, int]] = [(0, P)] * n
    after: dict[int, list[int]] = {}
    stats: dict = {"parallel": 0, "serialized": 0, "sequential": 0}
    decision: dict[int, str] = {}  # node -> how its children were mapped (the trace)
    stats["decisions"] = decision
    opt = subtree_optimal_peaks(tree) if budget is not None else None
    # leaves in pre-order, to find the leaves of any subtree by bisection
    pre = [0] * n
    size = tree.subtree_sizes()
    leaves_pre: list[int] = []
    leaves: list[int] = []
    stack = [tree.root]
    k = 0
    while stack:
        v = stack.pop()
        pre[v] = k
        k += 1
        if not tree.children[v]:
            leaves_pre.append(pre[v])
            leaves.append(v)
        stack.extend(reversed(tree.children[v]))

    def assign_all(v: int, rng: tuple[int, int]) -> list[int]:
        nodes = [v]
        j = 0
        while j < len(nodes):
            procs[nodes[j]] = rng
            nodes.extend(tree.children[nodes[j]])
            j += 1
        return nodes

    work = [(tree.root, 0, P, budget)]
    while work:
        v, lo, hi, B = work.pop()
        kids = tree.children[v]
        procs[v] = (lo, hi)
        if hi - lo == 1 or not kids:
            nodes = assign_all(v, (lo, hi))
            if budget is not None and len(nodes) > 1:
                stats["sequential"] += 1
                decision[v] = "sequential"
                sub = tree.subtree(v)  # BFS renumbering: sub node j is nodes[j]
                liu_order, _ = optimal_traversal(sub)
                slots = sorted(rank[x] for x in nodes)
                for s, j in zip(slots, liu_order):
                    rank[nodes[j]] = s
            continue
        ranges = split_range(lo, hi, [W[c] for c in kids])
        if B is None:
            stats["parallel"] += 1
            decision[v] = "parallel"
            work.extend((c, a, b, None) for c, (a, b) in zip(kids, ranges))
            continue
        assert opt is not None
        widths = [b - a for a, b in ranges]
        shares = [B * x / sum(widths) for x in widths]
        if all(opt[c] <= s for c, s in zip(kids, shares)):
            stats["parallel"] += 1
            decision[v] = "parallel"
            work.extend((c, a, b, s) for c, (a, b), s in zip(kids, ranges, shares))
            continue
        seq = sorted(kids, key=lambda c: tree.f[c] - opt[c])  # non-increasing opt - f
        held = 0.0
        fits = True
        for c in seq:
            if held + opt[c] > B:
                fits = False
                break
            held += tree.f[c]
        if fits:
            stats["serialized"] += 1
            decision[v] = "serialized"
            held = 0.0
            for prev, c in zip([None] + seq[:-1], seq):
                work.append((c, lo, hi, B - held))
                held += tree.f[c]
                if prev is not None:
                    a = bisect.bisect_left(leaves_pre, pre[c])
                    b = bisect.bisect_left(leaves_pre, pre[c] + size[c])
                    for leaf in leaves[a:b]:
                        after.setdefault(leaf, []).append(prev)
            continue
        stats["sequential"] += 1
        decision[v] = "sequential"
        nodes = assign_all(v, (lo, hi))
        sub = tree.subtree(v)
        liu_order, _ = optimal_traversal(sub)
        slots = sorted(rank[x] for x in nodes)
        for s, j in zip(slots, liu_order):
            rank[nodes[j]] = s
    return procs, rank, after, stats


def proportional(tree: Tree, w: Sequence[float] | None = None, P: int = 1,
                 alpha: float = 1.0) -> TreeSchedule:
    """Proportional mapping (seed 002): subtree T_i gets p_i = p * W_Ti / W of its
    parent's p processors (W summed over the siblings), recursively."""
    P = _check_P(P)
    w = check_work(tree, w)
    procs, rank, after, stats = _mapping(tree, w, P, None)
    sched = simulate(tree, w, P, procs, rank, after, label="proportional", alpha=alpha)
    sched.extra.update(stats)
    return sched


def memory_aware(tree: Tree, w: Sequence[float] | None = None, P: int = 1,
                 M_B: float | None = None, alpha: float = 1.0) -> TreeSchedule:
    """Memory-aware mapping enforcing the bound ``M_B`` (after Agullo et al.;
    seed 002, "Memory-aware mappings"). Raises BudgetError stating the
    sequential minimum when ``M_B`` is below it; ``M_B=None`` uses that minimum."""
    P = _check_P(P)
    w = check_work(tree, w)
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
    """Makespan-vs-peak points (seed 002, "Trade-off time vs. memory"): for each
    P, all-to-all, proportional, and memory-aware with M_B = factor x the
    sequential minimum; ``alpha`` is the node speed-up exponent. Each point
    is a dict with keys mapping, P, bound, makespan, peak."""
    w = check_work(tree, w)
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
    the time/memory trade-off (seed 002, "Complexity results": no schedule is
    best at both). Ties keep the first index.
    """
    front: list[int] = []
    best_peak = math.inf
    for k in sorted(range(len(points)), key=lambda k: (points[k][0], points[k][1], k)):
        if points[k][1] < best_peak:
            front.append(k)
            best_peak = points[k][1]
    return front

"""Plain reference implementations of the two tree traversals of the scheduling slides (J. Herrmann,
"Memory-aware scheduling", ENSEEIHT 2023, "Post-order traversals for tree" to "Post-order is not
optimal"; Liu 1986 and 1987, cited in memlab/scheduling/__init__.py), written as a reader would from
the slides, independently of memlab (no shared code): the benchmark's baseline
(bench/trees.py, table 4) and the test's second route (tests/scheduling/test_tree_reference.py).

An in-tree: ``parent[i]`` (-1 for the root), ``f[i]`` the output of node ``i``, ``m[i]`` its
execution data. Processing node ``i`` needs its children's outputs, ``m[i]`` and ``f[i]`` at once,
then leaves ``f[i]``.

* :func:`best_postorder`: Liu 1986. The peak of a post-order at node ``R`` whose children are done
  in the order ``1..k`` is ``max(max_j (P_j + sum_{i<j} f_i), sum_i f_i + m_R + f_R)``; the best
  order sorts the children by non-increasing ``P_i - f_i``.
* :func:`optimal_traversal`: Liu 1987. The memory profile of a subtree's best traversal, cut into
  hill-valley segments (the hill ``H_1`` is the peak, the valley ``V_1`` the lowest point after it,
  ``H_2`` the highest point after ``V_1``...). A node merges its children's segments by
  non-increasing ``H - V``, appends itself, and cuts the new profile into segments again.
"""
from __future__ import annotations

import sys


def _children(parent: list[int]) -> tuple[list[list[int]], int]:
    kids: list[list[int]] = [[] for _ in parent]
    root = -1
    for i, p in enumerate(parent):
        if p < 0:
            root = i
        else:
            kids[p].append(i)
    return kids, root


def best_postorder(parent: list[int], f: list[float], m: list[float]) -> tuple[list[int], float]:
    """The best post-order and its peak (Liu 1986), by recursion over the tree."""
    kids, root = _children(parent)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(parent) + 100))
    order: list[int] = []

    sorted_kids: dict[int, list[int]] = {}

    def solve(v: int) -> float:
        results = {c: solve(c) for c in kids[v]}
        ranked = sorted(kids[v], key=lambda c: -(results[c] - f[c]))
        sorted_kids[v] = ranked
        held, best = 0.0, 0.0
        for c in ranked:
            best = max(best, held + results[c])
            held += f[c]
        return max(best, held + m[v] + f[v])

    def emit(v: int) -> None:
        for c in sorted_kids[v]:
            emit(c)
        order.append(v)

    total = solve(root)
    emit(root)
    return order, total


def _cut(profile: list[tuple[float, float, list[int]]]) -> list[tuple[float, float, list[int]]]:
    """Cut a profile (absolute (highest, after, nodes) steps, in order) into hill-valley segments:
    each hill the highest point of what is left (the last, on a tie), its valley the lowest point
    after it (the last, on a tie), so hills strictly fall and valleys strictly rise."""
    out: list[tuple[float, float, list[int]]] = []
    start = 0
    while start < len(profile):
        hill = max(range(start, len(profile)), key=lambda k: (profile[k][0], k))
        valley = min(range(hill, len(profile)), key=lambda k: (profile[k][1], -k))
        nodes = [v for k in range(start, valley + 1) for v in profile[k][2]]
        out.append((profile[hill][0], profile[valley][1], nodes))
        start = valley + 1
    return out


def optimal_traversal(parent: list[int], f: list[float], m: list[float]
                      ) -> tuple[list[int], float]:
    """The minimum-peak traversal and its peak (Liu 1987), by recursion over the tree: each
    subtree's segments as absolute (hill, valley, nodes) from a start at 0."""
    kids, root = _children(parent)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(parent) + 100))

    def segments(v: int) -> list[tuple[float, float, list[int]]]:
        pieces = []                      # (key, child, rise, net, nodes) relative to the start
        for c in kids[v]:
            before = 0.0
            for hill, valley, nodes in segments(c):
                pieces.append((hill - valley, hill - before, valley - before, nodes))
                before = valley
        pieces.sort(key=lambda s: -s[0])  # stable: a child's own segments keep their order
        profile, base = [], 0.0
        for _, rise, net, nodes in pieces:
            profile.append((base + rise, base + net, nodes))
            base += net
        profile.append((base + m[v] + f[v], f[v], [v]))   # the children's outputs are consumed
        return _cut(profile)

    segs = segments(root)
    return [v for _, _, nodes in segs for v in nodes], segs[0][0]

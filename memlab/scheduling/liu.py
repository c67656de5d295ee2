"""Liu's exact minimum-memory traversal of an in-tree (Liu 1987; seed 002).

The best post-order can be arbitrarily worse than the best traversal (seed
002, "Post-order is not optimal"). Liu's 1987 algorithm ("An application of
generalized tree pebbling to sparse matrix factorization") finds an optimal
traversal without search, by describing the memory profile of a subtree's
optimal traversal as a sequence of *hill-valley segments*:

* the hill ``H_1`` is the peak of the whole traversal, the valley ``V_1`` the
  lowest memory after it; ``H_2`` is the highest point after ``V_1``, ``V_2``
  the lowest after ``H_2``, and so on. Hills strictly decrease and valleys
  strictly increase; the last valley is the subtree's output ``f``.
* the children's segment sequences are merged in non-increasing order of
  ``H - V`` (each child's own segments are already in that order), the node
  itself is appended as a last segment, and adjacent segments that break the
  hill/valley monotonicity are fused into one.

Implementation notes. A segment (:class:`Segment`) is stored *relative to the valley before
it* as ``(a, d, head, tail)``: ``a = H - V_prev`` (rise), ``d = V - V_prev`` (net
change), and the first/last node of its run in a linked list of nodes. Both
the merge key ``a - d`` and the fusion test (``a_1 <= d_1 + a_2`` for hills,
``d_2 <= 0`` for valleys) do not depend on where the sequence starts, so a
child's segments are merged without being shifted, and fusing two runs of
nodes is O(1). Everything is iterative; a node with one child reuses its
child's list, so chains cost O(1) per node amortized.
"""
from __future__ import annotations

from operator import itemgetter
from typing import NamedTuple

from .treebase import Tree, check_tree

__all__ = ["optimal_traversal", "segments", "subtree_optimal_peaks"]


class Segment(NamedTuple):
    """One hill-valley segment, relative to the valley before it: ``rise = H - V_prev``,
    ``net = V - V_prev``; ``head`` and ``tail`` are the first and last nodes of its run
    (linked by ``nxt``)."""

    rise: float
    net: float
    head: int
    tail: int


def _push(stack: list[tuple[float, float, float, int, int]], rise: float, net: float, head: int,
          tail: int, nxt: list[int]) -> None:
    """Append the segment ``(rise, net, head, tail)`` and fuse while hills do not decrease or
    valleys do not increase. Entries are plain tuples ``(net - rise, rise, net, head, tail)``:
    the merge key first."""
    while stack:
        _, r, d, h, t = stack[-1]
        if r <= d + rise or net <= 0:
            nxt[t] = head
            if d + rise > r:
                r = d + rise
            rise, net, head = r, d + net, h
            stack.pop()
        else:
            break
    stack.append((net - rise, rise, net, head, tail))


def _segment_lists(tree: Tree) -> tuple[list[Segment], list[int], list[float]]:
    """The root's segments, the node links ``nxt`` of their runs, and every subtree's least
    peak (the first hill of its segments), from one bottom-up pass."""
    n = tree.n
    f, m, children, parent = tree.f, tree.m, tree.children, tree.parent
    nxt = [-1] * n
    peaks = [0.0] * n
    fin = [0.0] * n  # sum of the children's outputs
    for i in range(n):
        if parent[i] >= 0:
            fin[parent[i]] += f[i]
    segs: list = [None] * n
    key = itemgetter(0)
    for v in reversed(tree.bfs):
        kids = children[v]
        if not kids:  # a leaf is one segment: rise m + f, residual f
            p = m[v] + f[v]
            segs[v] = [(f[v] - p, p, f[v], v, v)]
            peaks[v] = p
            continue
        if len(kids) == 1:
            stack = segs[kids[0]]
            segs[kids[0]] = None
        else:
            merged: list = []
            for c in kids:
                merged.extend(segs[c])
                segs[c] = None
            merged.sort(key=key)  # non-increasing rise - net, stable
            stack = []
            for _, rise, net, head, tail in merged:
                _push(stack, rise, net, head, tail, nxt)
        _push(stack, m[v] + f[v], f[v] - fin[v], v, v, nxt)
        segs[v] = stack
        peaks[v] = stack[0][1]  # hills strictly decrease: the first is the peak
    root_segs = [Segment(r, d, h, t) for _, r, d, h, t in segs[tree.root]]
    return root_segs, nxt, peaks


def subtree_optimal_peaks(tree: Tree) -> list[float]:
    """Minimum peak of every subtree, from one bottom-up pass of Liu's 1987 algorithm."""
    return _segment_lists(tree)[2]


def segments(tree: Tree) -> list[tuple[float, float]]:
    """Absolute (hill, valley) pairs of the optimal traversal's profile (Liu 1987)."""
    check_tree(tree, "segments: tree")
    root_segs = _segment_lists(tree)[0]
    out = []
    base = 0.0
    for s in root_segs:
        out.append((base + s.rise, base + s.net))
        base += s.net
    return out


def optimal_traversal(tree: Tree) -> tuple[list[int], float]:
    """Minimum-peak traversal ``(order, peak)`` by Liu's 1987 hill-valley
    segment merging (exact, polynomial; seed 002, "Post-order is not optimal")."""
    check_tree(tree, "optimal_traversal: tree")
    root_segs, nxt, _ = _segment_lists(tree)
    for s, t in zip(root_segs, root_segs[1:]):
        nxt[s.tail] = t.head
    order = []
    v = root_segs[0].head
    while v != -1:
        order.append(v)
        v = nxt[v]
    peak = 0.0
    base = 0.0
    for s in root_segs:
        peak = max(peak, base + s.rise)
        base += s.net
    return order, peak

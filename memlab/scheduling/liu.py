"""Liu's exact minimum-memory traversal of an in-tree (Liu 1987).

The best post-order can be arbitrarily worse than the best traversal (scheduling slides, "Post-order
is not optimal"). Liu's 1987 algorithm (J. W. H. Liu, "An application of generalized tree pebbling
to sparse matrix factorization", SIAM J. Algebraic Discrete Methods 8(3), 1987) finds an optimal
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
child's list, so chains cost O(1) per node amortized. The pass runs over breadth-first positions
(:func:`~memlab.scheduling.treebase.breadth_first`), where a node's children are neighbours.
"""
from __future__ import annotations

from operator import itemgetter
from typing import NamedTuple

import numpy as np

from .treebase import BreadthFirst, Tree, breadth_first, check_tree

__all__ = ["optimal_traversal", "segments", "subtree_optimal_peaks"]


class Segment(NamedTuple):
    """One hill-valley segment, relative to the valley before it: ``rise = H - V_prev``,
    ``net = V - V_prev``; ``head`` and ``tail`` are the first and last nodes of its run
    (linked by ``nxt``), as breadth-first positions."""

    rise: float
    net: float
    head: int
    tail: int


def _segment_lists(tree: Tree, want_peaks: bool = False
                   ) -> tuple[list[Segment], list[int], list[float], BreadthFirst]:
    """The root's segments and the links ``nxt`` of their runs, in breadth-first positions
    (:func:`~memlab.scheduling.treebase.breadth_first`, returned last), and (``want_peaks``)
    every subtree's least peak (the first hill of its segments), from one bottom-up pass.

    A segment is the plain tuple ``(net - rise, rise, net, head, tail)``, the merge key first.
    Pushing one after a sequence fuses it with the sequence's last segment while hills do not
    decrease (``rise_last <= net_last + rise``) or valleys do not increase (``net <= 0``); a
    segment that fuses with nothing is appended as it is."""
    bf = breadth_first(tree)
    first, count, f, m = bf.first, bf.count, bf.f, bf.m
    n = tree.n
    nxt = [-1] * n
    peaks = [0.0] * n if want_peaks else []
    segs: list = [None] * n
    key = itemgetter(0)
    for v in range(n - 1, -1, -1):
        deg = count[v]
        fv = f[v]
        rise = m[v] + fv
        if not deg:                        # a leaf is one segment: rise m + f, net f
            segs[v] = [(fv - rise, rise, fv, v, v)]
            if want_peaks:
                peaks[v] = rise
            continue
        c = first[v]
        if deg == 1:
            stack = segs[c]
            segs[c] = None
            net = fv - f[c]
        else:
            merged: list = []
            fin = 0.0                    # the children's outputs
            for c in range(c, c + deg):
                merged += segs[c]
                segs[c] = None
                fin += f[c]
            net = fv - fin
            merged.sort(key=key)         # non-increasing rise - net, stable
            stack = [merged[0]]
            push, pop = stack.append, stack.pop
            for seg in merged[1:]:
                _, r, d, h, t = stack[-1]
                _, sr, sd, sh, st = seg
                if r <= d + sr or sd <= 0:
                    while True:          # fuse the last segment with this one
                        nxt[t] = sh
                        if d + sr > r:
                            r = d + sr
                        sr, sd, sh = r, d + sd, h
                        pop()
                        if not stack:
                            break
                        _, r, d, h, t = stack[-1]
                        if r > d + sr and sd > 0:
                            break
                    seg = (sd - sr, sr, sd, sh, st)
                push(seg)
        head = v                         # the node: rise m + f, net f - its inputs
        while stack:
            _, r, d, h, t = stack[-1]
            if r > d + rise and net > 0:
                break
            nxt[t] = head
            if d + rise > r:
                r = d + rise
            rise, net, head = r, d + net, h
            stack.pop()
        stack.append((net - rise, rise, net, head, v))
        segs[v] = stack
        if want_peaks:
            peaks[v] = stack[0][1]       # hills strictly decrease: the first is the peak
    root_segs = [Segment(r, d, h, t) for _, r, d, h, t in segs[0]]
    return root_segs, nxt, peaks, bf


def subtree_optimal_peaks(tree: Tree) -> list[float]:
    """Minimum peak of every subtree, from one bottom-up pass of Liu's 1987 algorithm."""
    _, _, peaks, bf = _segment_lists(tree, want_peaks=True)
    out = np.empty(tree.n)
    out[bf.node] = peaks
    return out.tolist()


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
    segment merging (exact, polynomial; scheduling slides, "Post-order is not optimal")."""
    check_tree(tree, "optimal_traversal: tree")
    root_segs, nxt, _, bf = _segment_lists(tree)
    for s, t in zip(root_segs, root_segs[1:]):
        nxt[s.tail] = t.head
    walk = []                            # breadth-first positions, in the traversal's order
    append = walk.append
    v = root_segs[0].head
    while v != -1:
        append(v)
        v = nxt[v]
    order = bf.nodes(walk)
    peak = 0.0
    base = 0.0
    for s in root_segs:
        peak = max(peak, base + s.rise)
        base += s.net
    return order, peak

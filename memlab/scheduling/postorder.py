"""Post-order traversals of in-trees and Liu's best post-order (Liu 1986).

A post-order processes the children's subtrees one after another, each one
entirely (depth-first). With ``P_j`` the peak and ``f_j`` the residual of the
j-th subtree, the peak of node R is (scheduling slides, "Post-order traversals for
tree")

    max( max_j (P_j + sum_{i<j} f_i),  sum_i f_i + m_R + f_R ).

Liu (J. W. H. Liu, "On the storage requirement in the out-of-core multifrontal method for sparse
factorization", ACM TOMS 12(3), 1986) showed the best post-order sorts the children by
non-increasing ``P_i - f_i`` (scheduling slides, "Liu's best post-order traversals for trees").
Everything here is iterative (no recursion), so deep trees are fine.
"""
from __future__ import annotations

from operator import add, sub
from typing import Sequence

import numpy as np

from ..errors import TreeError
from .treebase import BreadthFirst, Tree, breadth_first, check_tree

__all__ = ["postorder_peak", "best_postorder", "postorder_from_children",
           "subtree_postorder_peaks", "best_child_order", "postorder_terms"]


def _combine(tree: Tree, v: int, kids: Sequence[int], P: list[float]) -> float:
    f = tree.f
    acc = 0.0
    best = 0.0
    for c in kids:
        best = max(best, acc + P[c])
        acc += f[c]
    return max(best, acc + tree.m[v] + f[v])


def _check_child_order(tree: Tree, child_order: dict[int, Sequence[int]] | Sequence[Sequence[int]]
                       ) -> list[list[int]]:
    out = [list(ch) for ch in tree.children]
    items = child_order.items() if isinstance(child_order, dict) else enumerate(child_order)
    for v, kids in items:
        kids = [int(c) for c in kids]
        if not 0 <= v < tree.n:
            raise TreeError(f"child_order names node {v}, out of range 0..{tree.n - 1}")
        if sorted(kids) != sorted(tree.children[v]):
            raise TreeError(f"node {v}: child_order {kids} is not a permutation of its "
                            f"children {tree.children[v]}")
        out[v] = kids
    return out


def subtree_postorder_peaks(tree: Tree, children: Sequence[Sequence[int]]) -> list[float]:
    """Peak ``P_i`` of each subtree when every node processes its children in
    the given order (scheduling slides' post-order formula, applied bottom-up)."""
    P = [0.0] * tree.n
    for v in tree.bottom_up():
        P[v] = _combine(tree, v, children[v], P)
    return P


def postorder_peak(tree: Tree, child_order: dict[int, Sequence[int]] | Sequence[Sequence[int]] | None = None
                   ) -> float:
    """Peak of the post-order where node v visits its children in ``child_order[v]``
    (default: the order of ``tree.children``), by the slides' recursive formula
    max(max_j (P_j + sum_{i<j} f_i), sum_i f_i + m_R + f_R) (scheduling slides, "Post-order traversals").
    """
    check_tree(tree, "postorder_peak: tree")
    children = tree.children if child_order is None else _check_child_order(tree, child_order)
    return subtree_postorder_peaks(tree, children)[tree.root]


def postorder_from_children(tree: Tree, children: Sequence[Sequence[int]]) -> list[int]:
    """The post-order node sequence visiting children in the given order: the reverse of the
    pre-order that visits them last to first (one stack, no recursion)."""
    out: list[int] = []
    append, stack = out.append, [tree.root]
    pop, extend = stack.pop, stack.extend
    while stack:
        v = pop()
        append(v)
        extend(children[v])
    out.reverse()
    return out


def _best_postorder_walk(bf: BreadthFirst) -> tuple[list[int], list[float]]:
    """Liu's rule in breadth-first positions, in one bottom-up pass of plain loops (the
    post-order formula of :func:`_combine`, inlined): the best post-order as positions, and every
    subtree's peak by position.

    Children are ranked by non-increasing P_i - f_i (a stable sort: ties keep the tree's order),
    and the post-order is kept as links: ``head[v]`` is the first position of v's subtree in its
    post-order (v itself is the last), ``nxt[c]`` what follows c, so ranking a node's children
    links each child to the next child's head and the last child to the node."""
    first, count, f, m = bf.first, bf.count, bf.f, bf.m
    n = len(f)
    P = list(map(add, m, f))                           # m + f: a leaf's peak
    key = list(map(sub, f, P))                         # f_i - P_i: ascending is Liu's order
    nxt = [-1] * (n + 1)                               # nxt[n]: the first child's head
    head = list(range(n))
    by_key = key.__getitem__
    for v in bf.inner:
        deg = count[v]
        c = first[v]
        if deg == 1:
            best = P[c]
            p = f[c] + m[v] + f[v]
            head[v] = head[c]
            nxt[c] = v
        else:
            if deg == 2:                               # as sorted(): a tie keeps c first
                kids = (c + 1, c) if key[c + 1] < key[c] else (c, c + 1)
            else:
                kids = sorted(range(c, c + deg), key=by_key)
            acc = best = 0.0
            prev = n
            for c in kids:
                t = acc + P[c]
                if t > best:
                    best = t
                acc += f[c]
                nxt[prev] = head[c]
                prev = c
            nxt[prev] = v
            head[v] = nxt[n]
            p = acc + m[v] + f[v]
        if best > p:
            p = best
        P[v] = p
        key[v] = f[v] - p
    walk: list[int] = []
    append = walk.append
    v = head[0]
    while v:                                           # the root, position 0, comes last
        append(v)
        v = nxt[v]
    append(0)
    return walk, P


def best_child_order(tree: Tree) -> tuple[list[list[int]], list[float]]:
    """Liu's rule: each node's children sorted by non-increasing P_i - f_i, and
    the resulting subtree peaks (Liu 1986; scheduling slides, "Liu's best post-order"): the
    children in the order the best post-order visits them."""
    bf = breadth_first(tree)
    walk, P = _best_postorder_walk(bf)
    when = [0] * tree.n
    for k, v in enumerate(bf.nodes(walk)):
        when[v] = k
    children = [sorted(kids, key=when.__getitem__) if len(kids) > 1 else kids
                for kids in tree.children]
    peaks = np.empty(tree.n)
    peaks[bf.node] = P
    return children, peaks.tolist()


def best_postorder(tree: Tree) -> tuple[list[int], float]:
    """Best post-order traversal ``(order, peak)`` (Liu 1986: subtrees in
    non-increasing P_i - f_i; scheduling slides, "Liu's best post-order traversals")."""
    check_tree(tree, "best_postorder: tree")
    bf = breadth_first(tree)
    walk, P = _best_postorder_walk(bf)
    return bf.nodes(walk), P[0]


def postorder_terms(tree: Tree, v: int | None = None,
                    child_order: Sequence[int] | None = None) -> list[tuple[int, float, float, float]]:
    """The slides' post-order formula at node ``v`` (default the root), term by term
    (scheduling slides, "Post-order traversals for tree"): one ``(child, P_j, held, term)``
    per child in ``child_order`` (default the stored order), with ``held`` =
    sum_{i<j} f_i and ``term = P_j + held``, then ``(v, m_v + f_v, held,
    term)`` for the node itself. Children's P_j are their subtrees' post-order
    peaks (stored child orders below). The peak is the largest term."""
    v = tree.root if v is None else int(v)
    if not 0 <= v < tree.n:
        raise TreeError(f"postorder_terms: node {v} is out of range 0..{tree.n - 1}")
    kids = list(tree.children[v]) if child_order is None else [int(c) for c in child_order]
    if sorted(kids) != sorted(tree.children[v]):
        raise TreeError(f"node {v}: child_order {kids} is not a permutation of its "
                        f"children {tree.children[v]}")
    P = subtree_postorder_peaks(tree, tree.children)
    out, held = [], 0.0
    for c in kids:
        out.append((c, P[c], held, P[c] + held))
        held += tree.f[c]
    own = tree.m[v] + tree.f[v]
    out.append((v, own, held, own + held))
    return out

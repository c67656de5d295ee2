"""Assembly trees of sparse matrices, built with numpy only (scheduling slides, "Motivation").

In the multifrontal method the order in which the variables of a sparse
symmetric matrix are eliminated is captured by the *elimination tree*; its
nodes (or supernodes) become tasks that assemble a frontal matrix from their
children's contribution blocks (scheduling slides, "Motivation"). We build these trees
for the standard model problems, Laplacians of 2-D (5-point) and 3-D
(7-point) grids, under two fill-reducing orderings:

* ``"nd"`` nested dissection: recursively cut the box along its longest side
  by a one-cell-thick separator, order both halves, then the separator;
* ``"md"`` minimum degree: repeatedly eliminate a variable of smallest degree
  in the elimination graph (explicit graph, ties broken at random when a seed
  is given, otherwise by index).

Then (i) the elimination tree of the permuted pattern by Liu's algorithm
with path compression, (ii) the column counts ``c_j`` of the Cholesky factor
(number of nonzeros of column j of L, diagonal included) by walking each row
subtree, (iii) optionally, fundamental supernodes (a node that is the only
child of its parent and has exactly one more nonzero than it is merged into
it).

Memory model (documented choice). Storage is the lower triangle of symmetric
matrices, so an s x s symmetric block costs s(s+1)/2 entries. A (super)node
with ``np`` pivot columns whose first column has count ``c`` has a frontal
matrix of order ``c`` and a contribution block of order ``c - np``:
``m_i = c(c+1)/2`` (the frontal matrix, execution data) and
``f_i = (c-np)(c-np+1)/2`` (the contribution block, output). While node i
runs, its children's contribution blocks, its front and its own contribution
block (copied out of the front before the front is freed) coexist, which is
exactly MemReq(i) = sum f_children + m_i + f_i.
"""
from __future__ import annotations

import heapq
from typing import Callable

import numpy as np

from ..errors import TreeError
from .treebase import Tree

__all__ = ["grid_adjacency", "nested_dissection", "minimum_degree", "elimination_tree",
           "column_counts", "assembly_tree", "grid_assembly_tree", "ordered_assembly_tree"]


def grid_adjacency(dims: tuple[int, ...]) -> list[list[int]]:
    """Neighbour lists of the 5-point (2-D) or 7-point (3-D) grid Laplacian;
    node index = x + nx*(y + ny*z)."""
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise TreeError(f"grid dims must be 1 to 3 positive sizes, got {dims}")
    n = int(np.prod(dims))
    idx = np.arange(n).reshape(tuple(reversed(dims)))  # [z][y][x]
    adj: list[list[int]] = [[] for _ in range(n)]
    for axis in range(idx.ndim):
        a = np.moveaxis(idx, axis, 0)
        u, v = a[:-1].ravel().tolist(), a[1:].ravel().tolist()
        for x, y in zip(u, v):
            adj[x].append(y)
            adj[y].append(x)
    return adj


def nested_dissection(dims: tuple[int, ...], leaf: int = 2) -> list[int]:
    """Geometric nested-dissection order of a grid (George 1973): returns
    ``perm`` with perm[k] the grid node eliminated k-th."""
    dims = tuple(int(d) for d in dims)
    idx = np.arange(int(np.prod(dims))).reshape(tuple(reversed(dims)))
    out: list[int] = []

    def rec(box: np.ndarray) -> None:
        if box.size == 0:
            return
        if max(box.shape) <= leaf:
            out.extend(box.ravel().tolist())
            return
        ax = int(np.argmax(box.shape))
        mid = box.shape[ax] // 2
        b = np.moveaxis(box, ax, 0)
        rec(np.moveaxis(b[:mid], 0, ax))
        rec(np.moveaxis(b[mid + 1:], 0, ax))
        out.extend(b[mid].ravel().tolist())

    rec(idx)
    return out


def minimum_degree(adj: list[list[int]], seed: int | None = None) -> list[int]:
    """Minimum-degree order on the explicit elimination graph (Tinney-Walker
    / Rose): eliminate a node of least current degree, make its neighbours a
    clique. Ties broken by index, or at random with ``seed``."""
    n = len(adj)
    rng = np.random.default_rng(seed)
    tie = rng.permutation(n).tolist() if seed is not None else list(range(n))
    g = [set(a) for a in adj]
    heap = [(len(g[v]), tie[v], v) for v in range(n)]
    heapq.heapify(heap)
    done = [False] * n
    perm: list[int] = []
    while heap:
        d, _, v = heapq.heappop(heap)
        if done[v] or d != len(g[v]):
            continue
        done[v] = True
        perm.append(v)
        nb = g[v]
        for u in nb:
            gu = g[u]
            gu.discard(v)
            gu |= nb
            gu.discard(u)
            heapq.heappush(heap, (len(gu), tie[u], u))
        g[v] = set()
    return perm


def elimination_tree(adj: list[list[int]], perm: list[int]) -> tuple[list[int], list[int]]:
    """Elimination tree of the matrix with pattern ``adj`` permuted by ``perm``
    (Liu 1986, with path compression). Returns ``(parent, iperm)`` in the new
    numbering (column k is grid node perm[k]); -1 marks roots."""
    n = len(adj)
    if sorted(perm) != list(range(n)):
        raise TreeError("perm is not a permutation of the matrix's nodes")
    iperm = [0] * n
    for k, v in enumerate(perm):
        iperm[v] = k
    parent = [-1] * n
    anc = [-1] * n
    for j in range(n):
        for u in adj[perm[j]]:
            r = iperm[u]
            if r >= j:
                continue
            while anc[r] != -1 and anc[r] != j:
                t = anc[r]
                anc[r] = j
                r = t
            if anc[r] == -1:
                anc[r] = j
                parent[r] = j
    return parent, iperm


def column_counts(adj: list[list[int]], perm: list[int], parent: list[int],
                  iperm: list[int]) -> list[int]:
    """Nonzeros of each column of the Cholesky factor, diagonal included:
    row i of L is the union of the etree paths from each k < i with a_ik != 0
    up to i (the row subtree); count it column by column. O(nnz(L))."""
    n = len(adj)
    count = [1] * n
    mark = [-1] * n
    for i in range(n):
        mark[i] = i
        for u in adj[perm[i]]:
            k = iperm[u]
            while k < i and mark[k] != i:
                count[k] += 1
                mark[k] = i
                k = parent[k]
    return count


def assembly_tree(parent: list[int], counts: list[int], amalgamate: bool = True) -> Tree:
    """The assembly tree with m = front size, f = contribution block (module doc).

    Roots of a forest (reducible matrix) are joined under a virtual root of
    size 0. With ``amalgamate``, fundamental supernodes are merged first.
    """
    n = len(parent)
    nkids = [0] * n
    for p in parent:
        if p >= 0:
            nkids[p] += 1
    # group[j] = representative (bottom column) of j's supernode; columns in increasing order
    rep = list(range(n))
    npiv = [1] * n
    if amalgamate:
        for j in range(n):  # children have smaller indices than parents
            p = parent[j]
            if p >= 0 and nkids[p] == 1 and counts[j] == counts[p] + 1:
                rep[p] = rep[j]
                npiv[rep[j]] += 1
    reps = [j for j in range(n) if rep[j] == j]
    new = {r: k for k, r in enumerate(reps)}
    top = {}  # topmost column of each supernode
    for j in range(n):
        top[rep[j]] = j
    par, f, m = [], [], []
    for r in reps:
        c, np_ = counts[r], npiv[r]
        p = parent[top[r]]
        par.append(new[rep[p]] if p >= 0 else -1)
        m.append(c * (c + 1) / 2)
        f.append((c - np_) * (c - np_ + 1) / 2)
    roots = [k for k, p in enumerate(par) if p == -1]
    if len(roots) > 1:
        vr = len(par)
        for k in roots:
            par[k] = vr
        par.append(-1)
        f.append(0.0)
        m.append(0.0)
    return Tree(par, f, m)


def grid_assembly_tree(dims: tuple[int, ...], ordering: str = "nd", amalgamate: bool = True,
                       seed: int | None = None) -> Tree:
    """Assembly tree of the grid Laplacian of shape ``dims`` (2-D or 3-D) under
    ``ordering`` "nd" (nested dissection) or "md" (minimum degree); see the
    module doc for the memory model (scheduling slides, "Motivation": multifrontal method)."""
    adj = grid_adjacency(tuple(dims))
    return ordered_assembly_tree(adj, ordering, lambda: nested_dissection(tuple(dims)),
                                 amalgamate, seed)


def ordered_assembly_tree(adj: list[list[int]], ordering: str, nested: Callable[[], list[int]],
                          amalgamate: bool = True, seed: int | None = None) -> Tree:
    """Assembly tree of the matrix whose graph is ``adj``, eliminated in the order
    ``ordering`` gives: "nd" (nested dissection, the permutation ``nested()``
    returns) or "md" (:func:`minimum_degree`); grids and meshes both go through it."""
    if ordering == "nd":
        perm = nested()
    elif ordering == "md":
        perm = minimum_degree(adj, seed)
    else:
        raise TreeError(f"unknown ordering {ordering!r}; expected 'nd' or 'md'")
    parent, iperm = elimination_tree(adj, perm)
    counts = column_counts(adj, perm, parent, iperm)
    return assembly_tree(parent, counts, amalgamate)

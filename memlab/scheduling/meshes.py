"""Assembly trees of unstructured meshes (scheduling slides, "Motivation" and the post-order table).

The slides' table ("Post-order is not optimal": 4.2% of actual assembly trees
have a non-optimal best post-order, up to 18% above the optimum) comes from
real sparse matrices, whose elimination trees are far less regular than
those of grid Laplacians (:mod:`memlab.scheduling.assembly`). To get closer,
this module builds the sparsity pattern of an *unstructured* 2-D mesh:

* :func:`delaunay_adjacency` — random points in the unit square joined by
  their Delaunay triangulation (a P1 finite-element stiffness pattern);
* :func:`geometric_adjacency` — a random geometric graph: random points, an
  edge between any two closer than a radius;

and orders it with a general-graph fill-reducing order:

* :func:`graph_nested_dissection` — George and Liu's automatic nested
  dissection: from a pseudo-peripheral node, the middle level of the
  breadth-first level structure is the separator; recurse on the parts;
* :func:`~memlab.scheduling.assembly.minimum_degree` — minimum degree on the
  explicit elimination graph.

:func:`mesh_assembly_tree` then builds the elimination tree, the column
counts and the (amalgamated) assembly tree exactly as for grids, with the
same memory model (front ``m = c(c+1)/2``, contribution block ``f``).
scipy is imported inside the functions that need it, so importing memlab
does not import scipy.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import TreeError
from .assembly import minimum_degree, ordered_assembly_tree
from .treebase import Tree

__all__ = ["delaunay_adjacency", "geometric_adjacency", "graph_nested_dissection",
           "mesh_assembly_tree", "irregular_family", "MESHES", "ORDERINGS"]

#: mesh kinds understood by :func:`mesh_assembly_tree`
MESHES = ("delaunay", "geometric")
#: fill-reducing orderings understood by :func:`mesh_assembly_tree`
ORDERINGS = ("nd", "md")


def _check_n(n: int) -> int:
    if int(n) != n or n < 3:
        raise TreeError(f"a mesh needs at least 3 points (an integer), got n={n}")
    return int(n)


def _adjacency(n: int, pairs: np.ndarray) -> list[list[int]]:
    """Neighbour lists from an array of (i, j) pairs (duplicates removed)."""
    pairs = np.sort(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), axis=1)
    pairs = np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0)
    adj: list[list[int]] = [[] for _ in range(n)]
    for i, j in pairs.tolist():
        adj[i].append(j)
        adj[j].append(i)
    return adj


def delaunay_adjacency(n: int, seed: int | None = None) -> list[list[int]]:
    """Pattern of a P1 finite-element matrix on the Delaunay triangulation of
    ``n`` uniform random points of the unit square (``scipy.spatial.Delaunay``)."""
    from scipy.spatial import Delaunay

    n = _check_n(n)
    pts = np.random.default_rng(seed).random((n, 2))
    tri = Delaunay(pts).simplices
    pairs = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    return _adjacency(n, pairs)


def geometric_adjacency(n: int, degree: float = 8.0, seed: int | None = None) -> list[list[int]]:
    """Random geometric graph: ``n`` uniform points of the unit square, an edge
    between points closer than r, with r chosen for a mean degree of about
    ``degree`` (pi r^2 n = degree). Isolated points keep no edge."""
    from scipy.spatial import cKDTree

    n = _check_n(n)
    if not degree > 0:
        raise TreeError(f"geometric_adjacency: degree must be > 0, got {degree}")
    pts = np.random.default_rng(seed).random((n, 2))
    r = float(np.sqrt(degree / (np.pi * n)))
    pairs = cKDTree(pts).query_pairs(r, output_type="ndarray")
    return _adjacency(n, pairs)


def _levels(adj: Sequence[Sequence[int]], start: int, inside: np.ndarray,
            stamp: np.ndarray, mark: int) -> list[list[int]]:
    """Breadth-first level structure of the component of ``start`` among the
    nodes with ``inside`` True (``stamp`` records visits with ``mark``)."""
    stamp[start] = mark
    levels = [[start]]
    while True:
        nxt = []
        for v in levels[-1]:
            for u in adj[v]:
                if inside[u] and stamp[u] != mark:
                    stamp[u] = mark
                    nxt.append(u)
        if not nxt:
            return levels
        levels.append(nxt)


def graph_nested_dissection(adj: Sequence[Sequence[int]], leaf: int = 8) -> list[int]:
    """Automatic nested dissection (George and Liu 1978): returns ``perm``, the
    node eliminated k-th at ``perm[k]``. Each connected part bigger than
    ``leaf`` is split by the middle level of a breadth-first level structure
    rooted at a pseudo-peripheral node; both sides come first, the separator
    last. Parts of at most ``leaf`` nodes are ordered by index."""
    n = len(adj)
    inside = np.zeros(n, dtype=bool)
    stamp = np.full(n, -1, dtype=np.int64)
    mark = 0
    out: list[int] = []
    # explicit stack of parts; a part's separator is emitted after both halves
    stack: list[tuple[str, list[int]]] = [("split", list(range(n)))]
    while stack:
        what, nodes = stack.pop()
        if what == "emit" or len(nodes) <= leaf:
            out.extend(sorted(nodes))
            continue
        inside[nodes] = True
        mark += 1
        levels = _levels(adj, nodes[0], inside, stamp, mark)
        comp = [v for lev in levels for v in lev]
        if len(comp) < len(nodes):  # disconnected: handle the component and the rest apart
            rest = [v for v in nodes if stamp[v] != mark]
            inside[nodes] = False
            stack.append(("split", rest))
            stack.append(("split", comp))
            continue
        for _ in range(4):  # pseudo-peripheral node: restart from the last level while it deepens
            mark += 1
            cand = min(levels[-1], key=lambda v: len(adj[v]))
            new = _levels(adj, cand, inside, stamp, mark)
            if len(new) <= len(levels):
                break
            levels = new
        inside[nodes] = False
        if len(levels) < 3:
            out.extend(sorted(nodes))
            continue
        mid = len(levels) // 2
        # children of a part are pushed so that they pop before its separator
        stack.append(("emit", levels[mid]))
        stack.append(("split", [v for lev in levels[mid + 1:] for v in lev]))
        stack.append(("split", [v for lev in levels[:mid] for v in lev]))
    return out


def mesh_assembly_tree(n: int, mesh: str = "delaunay", ordering: str = "nd",
                       amalgamate: bool = True, seed: int | None = None) -> Tree:
    """Assembly tree of an unstructured mesh of ``n`` unknowns (``mesh`` in
    :data:`MESHES`, ``ordering`` "nd" or "md"), with the memory model of
    :mod:`memlab.scheduling.assembly` (scheduling slides, "Motivation")."""
    if mesh == "delaunay":
        adj = delaunay_adjacency(n, seed)
    elif mesh == "geometric":
        adj = geometric_adjacency(n, seed=seed)
    else:
        raise TreeError(f"unknown mesh {mesh!r}; expected one of {MESHES}")
    return ordered_assembly_tree(adj, ordering, lambda: graph_nested_dissection(adj),
                                 amalgamate, seed)


def irregular_family(count: int = 20, seed: int = 0, n_range: tuple[int, int] = (300, 1500),
                     amalgamate: bool | None = None) -> list[Tree]:
    """``count`` assembly trees of unstructured meshes: sizes log-uniform in
    ``n_range``, Delaunay or geometric mesh, nested dissection or minimum
    degree, amalgamated or not (``None``: each at random)."""
    lo, hi = n_range
    if not 3 <= lo <= hi:
        raise TreeError(f"irregular_family: need 3 <= n_range[0] <= n_range[1], got {n_range}")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n = int(round(np.exp(rng.uniform(np.log(lo), np.log(hi)))))
        amal = bool(rng.random() < 0.5) if amalgamate is None else amalgamate
        out.append(mesh_assembly_tree(n, MESHES[int(rng.integers(2))], ORDERINGS[int(rng.integers(2))],
                                      amal, seed=int(rng.integers(1 << 30))))
    return out

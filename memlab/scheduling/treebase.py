"""In-trees of tasks with execution and output data (scheduling slides, "Notations").

Node ``i`` of an in-tree has execution data ``m[i]`` and output data ``f[i]``;
leaves have no input. A node may run once every child has run. While node
``i`` runs, memory holds every output produced and not yet consumed (this
includes the outputs of ``i``'s children) plus ``m[i] + f[i]``; hence

    MemReq(i) = sum_{j in children(i)} f[j] + m[i] + f[i].

Afterwards the children's outputs and ``m[i]`` are freed and ``f[i]`` stays
until the parent runs (the root's output stays to the end).

This module holds the model, its validation and the reference simulator
(:func:`peak`, :func:`memory_profile`, :func:`outtree_peak`). It is written
without recursion so trees of 10^5 nodes and more are fine.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

import numbers

import numpy as np

from ..plaindata import register as _register_plain
from ..errors import TreeError, check_int, check_list

__all__ = ["Tree", "BreadthFirst", "breadth_first", "peak", "memory_profile", "outtree_peak",
           "check_traversal", "check_tree"]


class Tree:
    """An in-tree given by a parent array (scheduling slides, "Notations").

    ``parent[i]`` is the index of ``i``'s parent, ``-1`` marks the root (there
    must be exactly one); ``f[i]`` is the output size and ``m[i]`` the
    execution data size (zeros when ``m`` is omitted). Sizes must be finite
    and non-negative. Raises :class:`~memlab.errors.TreeError` naming the node
    at fault otherwise.
    """

    def __init__(self, parent: Sequence[int], f: Sequence[float],
                 m: Sequence[float] | None = None) -> None:
        par = _ints(parent, "Tree: parent")
        n = len(par)
        if n == 0:
            raise TreeError("a tree needs at least one node (parent is empty)")
        fl = _sizes(f, n, "f")
        ml = [0.0] * n if m is None else _sizes(m, n, "m")
        roots = [i for i, p in enumerate(par) if p == -1]
        for i, p in enumerate(par):
            if p != -1 and not 0 <= p < n:
                raise TreeError(f"node {i}: parent index {p} is out of range 0..{n - 1}")
            if p == i:
                raise TreeError(f"node {i}: is its own parent (a cycle)")
        if not roots:
            raise TreeError("no root: no node has parent -1 (so the parents form a cycle)")
        if len(roots) > 1:
            raise TreeError(f"two roots: nodes {roots[0]} and {roots[1]} both have parent -1")
        children: list[list[int]] = [[] for _ in range(n)]
        for i, p in enumerate(par):
            if p >= 0:
                children[p].append(i)
        # every node must reach the root: a BFS from the root must see all nodes
        root = roots[0]
        seen = [False] * n
        seen[root] = True
        bfs = [root]
        k = 0
        while k < len(bfs):
            for c in children[bfs[k]]:
                seen[c] = True
                bfs.append(c)
            k += 1
        if len(bfs) != n:
            bad = next(i for i in range(n) if not seen[i])
            raise TreeError(f"node {bad}: its chain of parents never reaches the root "
                            f"{root} (a cycle)")
        self.parent: list[int] = par
        self.f: list[float] = fl
        self.m: list[float] = ml
        self.n: int = n
        self.root: int = root
        self.children: list[list[int]] = children
        #: nodes in breadth-first order from the root (parents before children)
        self.bfs: list[int] = bfs

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"Tree(n={self.n}, root={self.root})"

    def to_plain(self) -> dict:
        """The tree as plain data (lists of numbers), for another process; :meth:`from_plain` rebuilds it."""
        return {"parent": list(self.parent), "f": list(self.f), "m": list(self.m)}

    @classmethod
    def from_plain(cls, data: dict) -> "Tree":
        """The tree :meth:`to_plain` wrote, rebuilt (and checked) by the constructor."""
        if not isinstance(data, dict) or set(data) != {"parent", "f", "m"}:
            raise TreeError(f"a plain tree is a dict with 'parent', 'f' and 'm', not {str(data)[:80]}")
        return cls(data["parent"], data["f"], data["m"])

    def memreq(self, i: int) -> float:
        """MemReq(i) = sum of children's f + m_i + f_i (scheduling slides, "Notations")."""
        return sum(self.f[c] for c in self.children[i]) + self.m[i] + self.f[i]

    def bottom_up(self) -> list[int]:
        """Every node after all its descendants (reversed BFS order)."""
        return self.bfs[::-1]

    def subtree_sizes(self) -> list[int]:
        """Number of nodes of each node's subtree."""
        size = [1] * self.n
        for i in reversed(self.bfs):
            p = self.parent[i]
            if p >= 0:
                size[p] += size[i]
        return size

    def depths(self) -> list[int]:
        """Each node's number of edges to the root (the root's is 0)."""
        d = [0] * self.n
        for i in self.bfs:
            p = self.parent[i]
            if p >= 0:
                d[i] = d[p] + 1
        return d

    def depth(self) -> int:
        """Number of nodes on the longest root-to-leaf path."""
        return max(self.depths()) + 1

    def reversed_order(self, order: Sequence[int]) -> list[int]:
        """The reverse of ``order``: a schedule of the out-tree (scheduling slides, "From in-trees
        to out-trees")."""
        return list(order)[::-1]

    def subtree(self, r: int) -> "Tree":
        """The subtree rooted at ``r`` as a new tree (nodes renumbered in BFS order)."""
        nodes = [r]
        k = 0
        while k < len(nodes):
            nodes.extend(self.children[nodes[k]])
            k += 1
        idx = {v: j for j, v in enumerate(nodes)}
        par = [-1 if v == r else idx[self.parent[v]] for v in nodes]
        return Tree(par, [self.f[v] for v in nodes], [self.m[v] for v in nodes])


class BreadthFirst(NamedTuple):
    """The tree renumbered by breadth-first position (the root is 0): position ``k`` holds node
    ``node[k]``, its children are the positions ``first[k] .. first[k] + count[k] - 1`` in the
    order of ``tree.children``, and ``f[k]``, ``m[k]`` are its sizes; ``inner`` lists the
    positions that have children from the last to the first. Bottom-up passes then run over
    ``k = n-1 .. 0`` and read their children from neighbouring positions (memory locality: on trees
    of 10^6 nodes, reading lists in BFS order costs several times a sequential read)."""

    node: np.ndarray
    first: list[int]
    count: list[int]
    f: list[float]
    m: list[float]
    inner: list[int]

    def nodes(self, positions: list[int]) -> list[int]:
        """The nodes at ``positions``, in that order."""
        return self.node[np.fromiter(positions, np.int64, len(positions))].tolist()


def breadth_first(tree: Tree) -> BreadthFirst:
    """The breadth-first numbering of ``tree`` (:class:`BreadthFirst`), built with numpy."""
    n = tree.n
    node = np.fromiter(tree.bfs, np.int64, n)
    parent = np.fromiter(tree.parent, np.int64, n)
    count = np.bincount(parent[parent >= 0], minlength=n)[node]
    first = np.cumsum(count) - count + 1      # BFS lists each node's children together, in order
    return BreadthFirst(node, first.tolist(), count.tolist(),
                        np.fromiter(tree.f, np.float64, n)[node].tolist(),
                        np.fromiter(tree.m, np.float64, n)[node].tolist(),
                        np.flatnonzero(count)[::-1].tolist())


def check_tree(tree: object, what: str) -> Tree:
    """``tree`` if it is a :class:`Tree`, else a :class:`TreeError` naming ``what``."""
    if not isinstance(tree, Tree):
        raise TreeError(f"{what} must be a Tree (e.g. Tree(parent, f)), got "
                        f"{type(tree).__name__} {tree!r:.60}")
    return tree


def _ints(values: object, what: str) -> list[int]:
    """A list of node indices (integers), else :class:`TreeError`."""
    return [check_int(v, f"{what}[{i}]", error=TreeError)
            for i, v in enumerate(check_list(values, what, TreeError))]


def _sizes(values: Iterable[float], n: int, name: str) -> list[float]:
    vals = check_list(values, f"Tree: {name}", TreeError)
    for i, v in enumerate(vals):
        if not isinstance(v, numbers.Real) or isinstance(v, bool):
            raise TreeError(f"node {i}: size {name}[{i}] must be a number, got {v!r}")
    vals = [float(v) for v in vals]
    if len(vals) != n:
        raise TreeError(f"length mismatch: {name} has {len(vals)} entries but parent has {n}")
    for i, v in enumerate(vals):
        if not np.isfinite(v):
            raise TreeError(f"node {i}: size {name}[{i}] = {v} is not finite")
        if v < 0:
            raise TreeError(f"node {i}: negative size {name}[{i}] = {v}")
    return vals


def check_traversal(tree: Tree, order: Sequence[int]) -> list[int]:
    """Check that ``order`` is a traversal of the in-tree: a permutation of the
    nodes where every node comes after all its children (scheduling slides, "Notations").

    Returns the order as a list of ints; raises TreeError naming the node.
    """
    check_tree(tree, "tree")
    order = _ints(order, "order")
    n = tree.n
    if len(order) != n:
        raise TreeError(f"order has {len(order)} nodes but the tree has {n}: "
                        "not a permutation of the nodes")
    pos = [-1] * n
    for k, v in enumerate(order):
        if not 0 <= v < n:
            raise TreeError(f"node {v} in the order is out of range 0..{n - 1}")
        if pos[v] >= 0:
            raise TreeError(f"node {v} appears twice in the order: not a permutation")
        pos[v] = k
    for v in order:
        p = tree.parent[v]
        if p >= 0 and pos[p] < pos[v]:
            raise TreeError(f"node {p} comes before its child {v}: not a traversal "
                            "(a node needs all its children done)")
    return order


def random_traversal(tree: Tree, seed: int | np.random.Generator | None = None) -> list[int]:
    """A uniformly chosen next step at every step: any node whose children are all done.

    Any such order is a valid traversal (scheduling slides, "Notations": a node needs
    all its children's outputs), not only a post-order.
    """
    rng = np.random.default_rng(seed)
    missing = [len(c) for c in tree.children]
    ready = [i for i in range(tree.n) if missing[i] == 0]
    order: list[int] = []
    while ready:
        v = ready.pop(int(rng.integers(len(ready))))
        order.append(v)
        p = tree.parent[v]
        if p >= 0:
            missing[p] -= 1
            if missing[p] == 0:
                ready.append(p)
    return order


def memory_profile(tree: Tree, order: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Memory while and after each step of a sequential traversal (scheduling slides, "Notations").

    Returns ``(during, after)``: ``during[k]`` is the memory while ``order[k]``
    runs (held outputs + m + f of the running node), ``after[k]`` once it is
    done. Meant for step plots of the memory over a traversal.
    """
    order = check_traversal(tree, order)
    f, m, ch = tree.f, tree.m, tree.children
    during = np.empty(len(order))
    after = np.empty(len(order))
    held = 0.0
    for k, v in enumerate(order):
        during[k] = held + m[v] + f[v]
        held += f[v] - sum(f[c] for c in ch[v])
        after[k] = held
    return during, after


def peak(tree: Tree, order: Sequence[int]) -> float:
    """Peak memory of a sequential traversal of the in-tree (scheduling slides, "Notations").

    ``order`` must list every node once, each after its children; otherwise
    TreeError names the offending node.
    """
    during, _ = memory_profile(tree, order)
    return float(during.max())


def outtree_peak(tree: Tree, order: Sequence[int]) -> float:
    """Peak memory of ``order`` run on the out-tree (all edges of ``tree`` reversed).

    In the out-tree a node runs after its in-tree parent. Node ``i`` reads
    its input ``f[i]`` (written by its out-tree parent; the root's input is
    present from the start), needs ``m[i]``, and writes one datum ``f[c]`` for
    each out-tree child ``c`` (its in-tree children); then ``f[i]`` and
    ``m[i]`` are freed. This mirrors the in-tree model step by step, so by the
    slides' theorem ("From in-trees to out-trees")
    ``outtree_peak(tree, order[::-1]) == peak(tree, order)``. ``order`` must
    be a traversal of the out-tree (every node after its in-tree parent).
    """
    check_tree(tree, "outtree_peak: tree")
    order = _ints(order, "outtree_peak: order")
    check_traversal(tree, order[::-1])
    f, m, ch = tree.f, tree.m, tree.children
    best = 0.0
    held = f[tree.root]  # the root's input is there before anything runs
    for v in order:
        outs = sum(f[c] for c in ch[v])
        best = max(best, held + m[v] + outs)
        held += outs - f[v]
    return best


_register_plain("tree", Tree, Tree.to_plain, Tree.from_plain)

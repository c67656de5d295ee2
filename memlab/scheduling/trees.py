"""Memory-aware traversals of tree-shaped task graphs (seed 002, "Tree-shaped task graphs").

This is the public face of the tree part of memlab:

* :class:`Tree` — an in-tree with output sizes ``f`` and execution sizes ``m``;
* :func:`peak`, :func:`memory_profile`, :func:`outtree_peak` — simulators;
* :func:`postorder_peak`, :func:`best_postorder` — post-orders (Liu 1986);
* :func:`optimal_traversal` — Liu's 1987 exact hill-valley algorithm;
* :func:`brute_force` — exact search over sets of processed nodes (small trees);
* :func:`postorder_counterexample`, :func:`counterexample_peaks` — the family
  on which the best post-order is arbitrarily bad;
* generators in :mod:`memlab.treegen` and :mod:`memlab.scheduling.assembly`, parallel
  mappings in :mod:`memlab.scheduling.mapping`.
"""
from __future__ import annotations

from ..errors import TreeError
from .liu import optimal_traversal, segments
from .postorder import best_postorder, postorder_from_children, postorder_peak
from .treebase import Tree, check_traversal, memory_profile, outtree_peak, peak, random_traversal
from .treegen import counterexample_peaks, postorder_counterexample, random_tree

__all__ = ["Tree", "peak", "memory_profile", "outtree_peak", "check_traversal", "random_traversal",
           "postorder_peak", "best_postorder", "postorder_from_children",
           "optimal_traversal", "segments", "brute_force", "BruteForceResult",
           "brute_force_stats", "postorder_counterexample", "counterexample_peaks",
           "random_tree", "MAX_BRUTE_NODES"]

#: largest tree :func:`brute_force` accepts by default
MAX_BRUTE_NODES = 24


class BruteForceResult(tuple):
    """``(order, peak)`` plus ``states``: the number of processed-node sets explored."""

    states: int

    def __new__(cls, order: list[int], peak: float, states: int) -> "BruteForceResult":
        obj = super().__new__(cls, (order, peak))
        obj.states = states
        return obj


def brute_force_stats(tree: Tree, max_nodes: int = MAX_BRUTE_NODES) -> BruteForceResult:
    """Exact minimum peak by dynamic programming over down-closed sets of
    processed nodes (the "sequential problem" of seed 002, solved by search).

    A state is the set S of processed nodes (closed under children); memory
    held in S is the sum of f over nodes of S whose parent is not in S. From S
    one may run any node whose children are all in S, which costs
    held(S) + m_i + f_i. Layer k holds all sets of size k with the smallest
    peak needed to reach them. Exponential: refuses trees above ``max_nodes``.
    """
    n = tree.n
    if n > max_nodes:
        raise TreeError(f"brute_force: the tree has {n} nodes, above the limit of "
                        f"{max_nodes} (the search is exponential); use optimal_traversal")
    f, m = tree.f, tree.m
    need = [0] * n
    for i in range(n):
        for c in tree.children[i]:
            need[i] |= 1 << c
    # layer: mask -> (best peak, held memory, predecessor mask, last node)
    layer: dict[int, tuple[float, float]] = {0: (0.0, 0.0)}
    back: list[dict[int, tuple[int, int]]] = []
    states = 1
    for _ in range(n):
        nxt_layer: dict[int, tuple[float, float]] = {}
        links: dict[int, tuple[int, int]] = {}
        for mask, (pk, held) in layer.items():
            for i in range(n):
                bit = 1 << i
                if mask & bit or (need[i] & mask) != need[i]:
                    continue
                step = held + m[i] + f[i]
                cand = pk if pk > step else step
                new = mask | bit
                old = nxt_layer.get(new)
                if old is None or cand < old[0]:
                    freed = sum(f[c] for c in tree.children[i])
                    nxt_layer[new] = (cand, held + f[i] - freed)
                    links[new] = (mask, i)
        states += len(nxt_layer)
        back.append(links)
        layer = nxt_layer
    full = (1 << n) - 1
    best = layer[full][0]
    order = []
    mask = full
    for links in reversed(back):
        prev, i = links[mask]
        order.append(i)
        mask = prev
    order.reverse()
    return BruteForceResult(order, best, states)


def brute_force(tree: Tree, max_nodes: int = MAX_BRUTE_NODES) -> tuple[list[int], float]:
    """Exact minimum-peak traversal ``(order, peak)`` by search over sets of
    processed nodes (seed 002, "sequential problem"); small trees only."""
    order, pk = brute_force_stats(tree, max_nodes)
    return order, pk

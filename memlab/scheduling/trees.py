"""Memory-aware traversals of tree-shaped task graphs (scheduling slides, "Tree-shaped task graphs").

This is the public face of the tree part of memlab:

* :class:`Tree` — an in-tree with output sizes ``f`` and execution sizes ``m``;
* :func:`peak`, :func:`memory_profile`, :func:`outtree_peak` — simulators;
* :func:`postorder_peak`, :func:`best_postorder` — post-orders (Liu 1986);
* :func:`optimal_traversal` — Liu's 1987 exact hill-valley algorithm;
* :func:`brute_force` — exact search over sets of processed nodes (small trees);
* :func:`postorder_counterexample`, :func:`counterexample_peaks` — the family
  on which the best post-order is arbitrarily bad;
* generators in :mod:`memlab.scheduling.treegen` and :mod:`memlab.scheduling.assembly`, parallel
  mappings in :mod:`memlab.scheduling.mapping`.
"""
from __future__ import annotations

from ..errors import TreeError, check_int
from .liu import optimal_traversal, segments
from .postorder import best_postorder, postorder_from_children, postorder_peak
from .treebase import Tree, check_tree, check_traversal, memory_profile, outtree_peak, peak, random_traversal
from .treegen import counterexample_peaks, postorder_counterexample, random_tree
from .subsets import ExactResult, min_peak_search

__all__ = ["Tree", "peak", "memory_profile", "outtree_peak", "check_traversal", "random_traversal",
           "postorder_peak", "best_postorder", "postorder_from_children",
           "optimal_traversal", "segments", "brute_force", "BruteForceResult",
           "brute_force_stats", "postorder_counterexample", "counterexample_peaks",
           "random_tree", "MAX_BRUTE_NODES"]

#: largest tree :func:`brute_force` accepts by default
MAX_BRUTE_NODES = 24


#: the result of :func:`brute_force_stats` (the one exact search's result type)
BruteForceResult = ExactResult


def brute_force_stats(tree: Tree, max_nodes: int = MAX_BRUTE_NODES) -> ExactResult:
    """Exact minimum peak by dynamic programming over down-closed sets of processed nodes (the
    "sequential problem" of the scheduling slides, solved by search; :mod:`memlab.scheduling.subsets`).

    Running node ``i`` needs ``m_i + f_i`` on top of what is held; afterwards its children's
    outputs are freed and its own ``f_i`` is held. Exponential: refuses trees above ``max_nodes``.
    """
    n = check_tree(tree, "brute_force: tree").n
    if n > check_int(max_nodes, "brute_force: max_nodes", 1, TreeError):
        raise TreeError(f"brute_force: the tree has {n} nodes, above the limit of "
                        f"{max_nodes} (the search is exponential); use optimal_traversal")
    needs = [sum(1 << c for c in tree.children[i]) for i in range(n)]
    cost = [tree.m[i] + tree.f[i] for i in range(n)]
    delta = [tree.f[i] - sum(tree.f[c] for c in tree.children[i]) for i in range(n)]
    return min_peak_search(needs, cost, delta)


def brute_force(tree: Tree, max_nodes: int = MAX_BRUTE_NODES) -> tuple[list[int], float]:
    """Exact minimum-peak traversal ``(order, peak)`` by search over sets of
    processed nodes (scheduling slides, "sequential problem"); small trees only."""
    order, pk = brute_force_stats(tree, max_nodes)
    return order, pk

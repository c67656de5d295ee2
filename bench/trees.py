"""Benchmark of the tree traversal algorithms (seed 002, "Tree-shaped task graphs").

Prints three tables:

1. time of Liu's optimal traversal (1987, hill-valley merging) and of the
   best post-order (1986) on random recursive trees, deep trees (parent among
   the 3 previous nodes) and assembly trees of 2-D grid Laplacians (nested
   dissection, no amalgamation) of about 1e3, 1e4 and 1e5 nodes;
2. brute-force search over sets of processed nodes against Liu, on growing
   random trees, until the search gets too slow;
3. the seed's post-order table on irregular assembly trees: unstructured
   2-D meshes (Delaunay triangulations and random geometric graphs of 1e3,
   1e4 and 1e5 unknowns) ordered by nested dissection and minimum degree,
   amalgamated into supernodes: share of trees whose best post-order is not
   optimal, max and mean increase over the optimum, next to the paper's
   4.2% / 18% / 1% for actual assembly trees.

Run: ``python bench/trees.py`` (``--quick`` skips the 1e5 sizes; ``--irregular``
prints the third table only).
"""
from __future__ import annotations

import sys
import time
from typing import Callable

from _progress import row, sweep

from memlab.scheduling.assembly import grid_assembly_tree
from memlab.scheduling.liu import optimal_traversal
from memlab.scheduling.meshes import MESHES, ORDERINGS, mesh_assembly_tree
from memlab.scheduling.postorder import best_postorder
from memlab.scheduling.treebase import Tree
from memlab.scheduling.treegen import random_tree
from memlab.scheduling.trees import brute_force_stats
from memlab.scheduling.trees_table import PAPER_TABLE, compare_postorder


def timed(fn: Callable, *args, repeat: int = 3) -> tuple[float, object]:
    """Best wall time of ``repeat`` calls, and the last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best, out


def make(family: str, size: int) -> Tree:
    """A tree of the family with about ``size`` nodes."""
    if family == "assembly-2d-nd":
        side = int(round(size ** 0.5))
        return grid_assembly_tree((side, side), "nd", amalgamate=False)
    return random_tree(size, family, seed=size, f_range=(1, 100), m_range=(0, 100))


def irregular_table(sizes: tuple[int, ...], trees_per_size: dict[int, int]) -> None:
    """Table 3: best post-order vs optimal on unstructured-mesh assembly trees."""
    share, mx, mean = PAPER_TABLE["assembly"]
    row(f"post-order vs optimal on irregular assembly trees "
        f"(paper, actual assembly trees: {share:.1%} non-optimal, max +{mx:.0%}, mean +{mean:.0%})")
    row(f"{'mesh':<10}{'order':>6}{'unknowns':>9}{'trees':>6}{'nodes':>8}{'non-opt':>9}"
        f"{'max inc':>9}{'mean inc':>9}{'build s':>9}")
    for n, mesh, ordering in sweep([(n, m, o) for n in sizes for m in MESHES for o in ORDERINGS],
                                   "assembly trees"):
        t0 = time.perf_counter()
        fam = [mesh_assembly_tree(n, mesh, ordering, amalgamate=True, seed=s)
               for s in range(trees_per_size[n])]
        build = (time.perf_counter() - t0) / len(fam)
        stats = compare_postorder(fam)
        nodes = sum(t.n for t in fam) / len(fam)
        row(f"{mesh:<10}{ordering:>6}{n:>9}{stats.count:>6}{nodes:>8.0f}"
            f"{stats.nonoptimal_share:>9.1%}{stats.max_increase:>9.2%}"
            f"{stats.mean_increase:>9.2%}{build:>9.2f}")


def main(quick: bool = False) -> None:
    """Print the three tables."""
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    row(f"{'family':<16}{'nodes':>8}{'depth':>8}{'Liu 1987 s':>12}{'best PO s':>11}"
        f"{'optimal':>12}{'best PO':>12}{'PO/opt':>8}")
    for family, size in sweep([(f, n) for f in ("recursive", "deep", "assembly-2d-nd") for n in sizes],
                              "families"):
        tree = make(family, size)
        rep = 1 if tree.n >= 50_000 else 3
        t_liu, (_, opt) = timed(optimal_traversal, tree, repeat=rep)
        t_po, (_, bpo) = timed(best_postorder, tree, repeat=rep)
        row(f"{family:<16}{tree.n:>8}{tree.depth():>8}{t_liu:>12.3f}{t_po:>11.3f}"
            f"{opt:>12.0f}{bpo:>12.0f}{bpo / opt:>8.3f}")
    row()
    row("brute force vs Liu (random recursive trees, sizes 1..100)")
    row(f"{'nodes':>6}{'states':>10}{'brute s':>10}{'Liu s':>10}{'equal':>7}")
    for n in sweep(range(6, 61, 3), "brute force"):
        tree = random_tree(n, "recursive", seed=n, f_range=(1, 100), m_range=(0, 100))
        t_bf, res = timed(brute_force_stats, tree, 64, repeat=1)
        t_liu, (_, opt) = timed(optimal_traversal, tree)
        row(f"{n:>6}{res.states:>10}{t_bf:>10.3f}{t_liu:>10.5f}{str(abs(res[1] - opt) < 1e-9):>7}")
        if t_bf > 3:
            row(f"(stopping: brute force took {t_bf:.1f} s at {n} nodes)")
            break


    row()
    mesh_sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    irregular_table(mesh_sizes, {1_000: 40, 10_000: 10, 100_000: 3})


if __name__ == "__main__":
    if "--irregular" in sys.argv:
        quick = "--quick" in sys.argv
        irregular_table((1_000, 10_000) if quick else (1_000, 10_000, 100_000),
                        {1_000: 40, 10_000: 10, 100_000: 3})
    else:
        main(quick="--quick" in sys.argv)

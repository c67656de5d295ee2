"""Benchmark of the tree traversal algorithms (scheduling slides, "Tree-shaped task graphs").

Prints three tables:

1. time of Liu's optimal traversal (1987, hill-valley merging) and of the
   best post-order (1986) on random recursive trees, deep trees (parent among
   the 3 previous nodes) and assembly trees of 2-D grid Laplacians (nested
   dissection, no amalgamation) of about 1e3, 1e4 and 1e5 nodes;
2. brute-force search over sets of processed nodes against Liu, on growing
   random trees, until the search gets too slow;
3. the slides' post-order table on irregular assembly trees: unstructured
   2-D meshes (Delaunay triangulations and random geometric graphs of 1e3,
   1e4 and 1e5 unknowns) ordered by nested dissection and minimum degree,
   amalgamated into supernodes: share of trees whose best post-order is not
   optimal, max and mean increase over the optimum, next to the paper's
   4.2% / 18% / 1% for actual assembly trees.

4. memlab's Liu traversal and best post-order against the plain reference of
   ``bench/tree_reference.py`` (written from the slides, no shared code) on random recursive
   trees of 1e4, 1e5 and 1e6 nodes: best of 3 rounds that run each in turn (1 at 1e6), the
   ratios memlab / reference, and the peaks, which must be equal.

Run: ``python bench/trees.py`` (``--quick`` skips the 1e5 sizes; ``--irregular``
prints the third table only; ``--reference`` the fourth only).
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


def reference_table(sizes: tuple[int, ...] = (10_000, 100_000, 1_000_000)) -> None:
    """Table 4: memlab against the plain reference on random recursive trees."""
    import gc

    import tree_reference as ref
    row("memlab vs a plain reference implementation (random recursive trees; seconds, best of 3 "
        "interleaved rounds, 1 at 1e6)")
    row(f"{'nodes':>9}{'Liu':>9}{'ref':>9}{'ratio':>7}{'post-order':>12}{'ref':>9}{'ratio':>7}"
        f"{'same peaks':>12}")
    for n in sweep(sizes, "reference"):
        tree = random_tree(n, "recursive", seed=n, f_range=(1, 100), m_range=(0, 100))
        par, f, m = tree.parent, tree.f, tree.m
        fns = {"liu": lambda: optimal_traversal(tree), "liu_ref": lambda: ref.optimal_traversal(par, f, m),
               "po": lambda: best_postorder(tree), "po_ref": lambda: ref.best_postorder(par, f, m)}
        best, out = {k: float("inf") for k in fns}, {}
        for _ in range(1 if n >= 500_000 else 3):
            for k, fn in fns.items():
                gc.collect()
                gc.disable()
                t0 = time.perf_counter()
                out[k] = fn()
                best[k] = min(best[k], time.perf_counter() - t0)
                gc.enable()
        same = abs(out["liu"][1] - out["liu_ref"][1]) < 1e-6 and abs(out["po"][1] - out["po_ref"][1]) < 1e-6
        row(f"{n:>9}{best['liu']:>9.3f}{best['liu_ref']:>9.3f}{best['liu'] / best['liu_ref']:>7.2f}"
            f"{best['po']:>12.3f}{best['po_ref']:>9.3f}{best['po'] / best['po_ref']:>7.2f}{str(same):>12}")


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
    row()
    reference_table((10_000,) if quick else (10_000, 100_000, 1_000_000))


if __name__ == "__main__":
    if "--reference" in sys.argv:
        reference_table()
    elif "--irregular" in sys.argv:
        quick = "--quick" in sys.argv
        irregular_table((1_000, 10_000) if quick else (1_000, 10_000, 100_000),
                        {1_000: 40, 10_000: 10, 100_000: 3})
    else:
        main(quick="--quick" in sys.argv)

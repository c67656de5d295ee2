"""Dask's static order against memlab's memory-aware orders, in the model and on Dask.

For each family of trees (random recursive, bushy and deep trees, the seed's model with output
sizes f in 1..100 and execution sizes m in 0..100; assembly trees of Delaunay and random geometric
meshes of 1,000 unknowns, nested dissection and minimum degree), prints:

1. the model: ``ml.trees.peak`` of ``dask.order``'s order over Liu's optimum (min / median / max
   over the family's trees, and on how many it is above); of the order Dask really follows when
   given Liu's order as priorities (:func:`followed_order`, Dask's rule: its worst ratio and on
   how many trees it is above the optimum); and the time to compute each order:
   ``dask.order.order`` on the Dask graph, Liu's optimal traversal, the best post-order;
2. runs on a one-thread Dask worker (``LocalCluster``, the first tree of each family): the
   measured peak of live bytes over Liu's optimum under Dask's own order, Liu's order and the
   best post-order as priorities, whether the run followed the order given, and its wall time.

Run: ``python bench/dask_orders.py`` (``--quick``: three trees per family, runs of trees up to
2,000 nodes only).
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Callable

from _progress import row, sweep

from memlab.scheduling import dask as md
from memlab.scheduling.liu import optimal_traversal
from memlab.scheduling.meshes import mesh_assembly_tree
from memlab.scheduling.postorder import best_postorder
from memlab.scheduling.treebase import Tree, peak
from memlab.scheduling.treegen import random_tree

QUICK = "--quick" in sys.argv
PER_FAMILY = 3 if QUICK else 8
RUN_LIMIT = 2000 if QUICK else 10 ** 6


def family(name: str, size: int) -> Callable[[int], Tree]:
    """The k-th tree of a family."""
    if name in ("delaunay", "geometric"):
        return lambda k: mesh_assembly_tree(size, name, ("nd", "md")[k % 2], seed=k)
    return lambda k: random_tree(size, name, seed=1000 * size + k, f_range=(1, 100),
                                 m_range=(0, 100))


FAMILIES = [("recursive", 100), ("recursive", 10_000), ("bushy", 1_000), ("bushy", 10_000),
            ("deep", 10_000), ("delaunay", 1_000), ("geometric", 1_000)]


def timed(fn: Callable, *args) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def dask_order_time(tree: Tree) -> tuple[float, list[int]]:
    """Time of ``dask.order.order`` alone on the tree's Dask graph, and its order."""
    import dask.order

    from memlab.scheduling.dasktasks import drop_meter

    g = md.to_dask(tree)
    t, prio = timed(dask.order.order, g.dsk)
    drop_meter(g.meter)
    return t, sorted(range(tree.n), key=lambda i: prio[g.keys[i]])


def spread(xs: list[float]) -> str:
    return f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f}"


def model_table() -> list[tuple[str, Tree]]:
    row("1. The model: peaks over Liu's optimum (min / median / max), time to compute the orders")
    row(f"{'trees':<22}{'n':>7}  {'dask.order / opt':<20}{'above opt':>10}  {'Liu run by Dask':<17}"
        f"{'t dask.order':>13}{'t Liu':>9}{'t best PO':>10}{'dask/Liu':>9}")
    firsts = []
    for name, size in FAMILIES:
        make = family(name, size)
        ratios, rule, td, tl, tp, ns = [], [], [], [], [], []
        for k in sweep(range(PER_FAMILY), f"{name} {size}"):
            tree = make(k)
            if k == 0:
                firsts.append((f"{name} {size:,}", tree))
            t_d, d_order = dask_order_time(tree)
            t_l, (l_order, opt) = timed(optimal_traversal, tree)
            t_p, _ = timed(best_postorder, tree)
            ratios.append(peak(tree, d_order) / opt)
            rule.append(peak(tree, md.followed_order(tree, l_order)) / opt)
            td.append(t_d)
            tl.append(t_l)
            tp.append(t_p)
            ns.append(tree.n)
        n = f"{min(ns)}" if min(ns) == max(ns) else f"~{round(statistics.median(ns))}"
        above = sum(x > 1 + 1e-12 for x in ratios)
        worse = sum(x > 1 + 1e-12 for x in rule)
        row(f"{name + ' ' + format(size, ','):<22}{n:>7}  {spread(ratios):<20}"
            f"{f'{above}/{len(ratios)}':>10}  {f'{max(rule):.3f} ({worse}/{len(rule)} worse)':<17}"
            f"{statistics.median(td) * 1e3:>10.1f} ms{statistics.median(tl) * 1e3:>6.1f} ms"
            f"{statistics.median(tp) * 1e3:>7.1f} ms"
            f"{statistics.median(td) / statistics.median(tl):>8.0f}x")
    return firsts


def run_table(firsts: list[tuple[str, Tree]]) -> None:
    row()
    row("2. Measured on a one-thread Dask worker: peak of live bytes / Liu's optimum "
        "(followed the order given?), wall time")
    row(f"{'tree':<22}{'n':>7}  {'Dask by itself':<24}{'Liu as priorities':<24}"
        f"{'best post-order':<24}{'model = measured':>17}")
    with md.LocalDask(1) as cluster:
        for label, tree in firsts:
            if tree.n > RUN_LIMIT:
                row(f"{label:<22}{tree.n:>7}  (skipped with --quick)")
                continue
            opt = optimal_traversal(tree)[1]
            cells, exact = [], True
            for order in (None, "liu", "best_postorder"):
                r = md.run(tree, order, cluster=cluster)
                exact &= r.peak == r.model_peak == peak(tree, r.followed)
                same = "yes" if r.followed == r.given else "no"
                cells.append(f"{r.peak / opt:.2f} ({same}) {r.wall:.1f} s")
            row(f"{label:<22}{tree.n:>7}  " + "".join(f"{c:<24}" for c in cells)
                + f"{'yes' if exact else 'NO':>17}")


if __name__ == "__main__":
    run_table(model_table())

"""Pictures of runs on Dask (:mod:`memlab.scheduling.dask`; the scheduling slides, lessons 11-13).

Plumbing only: every number comes from :mod:`memlab.scheduling`.

* :func:`run_figure` — a run's Gantt chart (one lane per worker) beside its measured memory and
  the model's memory of the order Dask followed;
* :func:`mapping_pair` — lesson 13: the simulated mapping above the same mapping run on Dask
  workers, on one time scale in seconds, with both memory curves;
* :func:`order_table`, :func:`order_explorer` — lesson 12: ``dask.order`` against Liu's optimum
  and the best post-order on random trees, as a table and a slider over the tree size.
"""
from __future__ import annotations

import html as _html
from typing import Any, Mapping, Sequence

import ipywidgets as widgets
import numpy as np

from ..scheduling import dask as sdask
from ..scheduling.liu import optimal_traversal
from ..scheduling.postorder import best_postorder
from ..scheduling import taskgraph
from ..scheduling.treebase import Tree, memory_profile, peak
from ..scheduling.treegen import random_tree
from ..scheduling.treesim import TreeSchedule
from .explorer import Explorer
from .palette import color

__all__ = ["run_figure", "mapping_pair", "order_rows", "order_table", "order_explorer"]


def _model_curve(obj: Any, run: Any) -> tuple[list[float], list[float]]:
    """The model's memory of the followed order, stepped at the measured start and end times."""
    if isinstance(obj, Tree):
        during, after = memory_profile(obj, run.followed)
        index = list(range(obj.n))
    else:
        during, after = taskgraph.memory_profile(obj, run.followed)
        index = {t: i for i, t in enumerate(obj.tasks)}
    times, mem = [0.0], [0.0]
    for k, v in enumerate(run.followed):
        times += [run.start[index[v]], run.end[index[v]]]
        mem += [during[k], after[k]]
    return times, mem


def run_figure(obj: Any, run: Any, title: str, colors: Mapping[int, str] | None = None) -> Any:
    """A run of a tree or task graph on Dask: Gantt chart (lanes = workers) and the live bytes
    the tasks measured, over the model's memory of the order Dask followed (scheduling slides)."""
    import matplotlib.pyplot as plt

    from .trees import tree_gantt

    fig, axes = plt.subplots(1, 2, figsize=(10, 2.4), gridspec_kw={"width_ratios": [3, 2]})
    sched = run.schedule()
    names = None if isinstance(obj, Tree) else [str(t) for t in obj.tasks]
    tree_gantt(sched, names=names, ax=axes[0], colors=colors,
               title=f"{title}: makespan {run.makespan * 1e3:.0f} ms (measured)")
    axes[0].set_yticklabels([f"W{k}" for k in range(sched.P)])
    axes[0].set_xlabel("seconds")
    t, m = _model_curve(obj, run)
    axes[1].step(t, m, where="post", color="#999999", lw=3, label="model of the order followed")
    axes[1].step(run.times, run.memory, where="post", color=color(3), lw=1.2,
                 label="measured by the tasks")
    axes[1].set_title(f"live memory, peak {run.peak:g} (model {run.model_peak:g})", fontsize=10)
    axes[1].set_xlabel("seconds")
    axes[1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def mapping_pair(run: Any, sched: TreeSchedule, title: str,
                 colors: Mapping[int, str] | None = None) -> Any:
    """Lesson 13: the simulated mapping (top) and its run on Dask workers (bottom), one time
    scale in seconds (``run.extra['seconds']`` per unit of work), and both memory curves."""
    import matplotlib.pyplot as plt

    from .trees import tree_gantt

    sec = run.extra["seconds"]
    sim = TreeSchedule([x * sec for x in sched.start], [x * sec for x in sched.end],
                       sched.procs, sched.makespan * sec, sched.times * sec, sched.memory,
                       sched.peak, sched.P, sched.label)
    span = max(sim.makespan, run.makespan) * 1.02
    fig, axes = plt.subplots(2, 2, figsize=(10, 4.2), sharex=True,
                             gridspec_kw={"width_ratios": [3, 2]})
    tree_gantt(sim, ax=axes[0, 0], colors=colors, xmax=span,
               title=f"{title} simulated: makespan {sim.makespan:.2f} s")
    meas = run.schedule()
    meas.P = sched.P
    tree_gantt(meas, ax=axes[1, 0], colors=colors, xmax=span,
               title=f"run on {sched.P} Dask workers: makespan {run.makespan:.2f} s")
    axes[1, 0].set_xlabel("seconds")
    axes[0, 1].step(sim.times, sim.memory, where="post", color="#999999", lw=2)
    axes[0, 1].set_title(f"simulated memory, peak {sched.peak:g}", fontsize=10)
    axes[1, 1].step(run.times, run.memory, where="post", color=color(3), lw=1.2)
    axes[1, 1].set_title(f"measured live memory, peak {run.peak:g}", fontsize=10)
    axes[1, 1].set_xlabel("seconds")
    for ax in axes[:, 0]:
        ax.set_xlim(0, span)
    fig.tight_layout()
    return fig


def order_rows(n: int, shapes: Sequence[str] = ("recursive", "bushy", "deep"),
               seeds: Sequence[int] = range(5)) -> list[dict]:
    """For random trees of ``n`` nodes (the scheduling slides' model, f in 1..100, m in 0..100): the peak of
    ``dask.order``'s order, of the order Dask follows given Liu's, and of the best post-order,
    over Liu's optimum, the median over ``seeds``, per shape."""
    out = []
    for shape in shapes:
        r_dask, r_rule, r_po = [], [], []
        for s in seeds:
            tree = random_tree(n, shape, seed=1000 * n + s, f_range=(1, 100), m_range=(0, 100))
            order, opt = optimal_traversal(tree)
            r_dask.append(peak(tree, sdask.dask_order(tree)) / opt)
            r_rule.append(peak(tree, sdask.followed_order(tree, order)) / opt)
            r_po.append(best_postorder(tree)[1] / opt)
        out.append({"shape": shape, "n": n, "dask.order": float(np.median(r_dask)),
                    "worst dask.order": max(r_dask), "Liu run by Dask": float(np.median(r_rule)),
                    "best post-order": float(np.median(r_po))})
    return out


def order_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """HTML table of :func:`order_rows` (peaks over Liu's optimum)."""
    keys = ["shape", "n", "dask.order", "worst dask.order", "Liu run by Dask", "best post-order"]
    head = "".join(f"<th>{_html.escape(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(
        f"<td>{r[k]:.2f}</td>" if isinstance(r[k], float) else f"<td>{_html.escape(str(r[k]))}</td>"
        for k in keys) + "</tr>" for r in rows)
    return (f"<table><tr>{head}</tr>{body}</table><p style='font-size:85%'>peak / Liu's optimum, "
            "median over 5 trees (worst: the largest)</p>")


def order_explorer(sizes: Sequence[int] = (20, 50, 100, 200, 500, 1000)) -> Explorer:
    """A slider over the tree size redrawing :func:`order_table` (lesson 12)."""
    return Explorer(lambda nodes: order_table(order_rows(nodes)), {
        "nodes": widgets.SelectionSlider(options=list(sizes), value=sizes[len(sizes) // 2],
                                         description="nodes")})

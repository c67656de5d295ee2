"""Steppers and sliders of the scheduling lessons (scheduling slides, lessons 11-13).

Plumbing only: every number shown comes from :mod:`memlab.scheduling`.

* :func:`taskgraph_stepper`, :func:`tree_stepper` — a sequential traversal
  frame by frame (scheduling slides, "Example"; "Post-order is not optimal");
* :func:`formula_frames` — the post-order formula term by term (scheduling slides,
  "Post-order traversals for tree");
* :func:`counterexample_explorer` — sliders for b, K, M, eps of T_K;
* :func:`svg_gantt`, :func:`mapping_frames`, :func:`mapping_explorer` — the
  parallel mappings over time, and sliders for P, alpha and M_B (scheduling slides,
  "All-to-all / Proportional / Memory-aware mappings"). The Gantt charts are
  plain SVG strings, so a slider redraws in milliseconds;
* :func:`pareto_points`, :func:`tradeoff_plot` — schedules as makespan/peak
  points and their Pareto front (scheduling slides, "Complexity results").
"""
from __future__ import annotations

import html as _html
from typing import Any, Mapping, Sequence

import ipywidgets as widgets

from ..scheduling import mapping, taskgraph, treebase, treegen
from ..scheduling.liu import optimal_traversal
from ..scheduling.postorder import best_postorder, postorder_terms
from .palette import color
from .explorer import Explorer
from .stepper import Frame, Stepper
from .trees import draw_taskgraph, draw_tree, side_by_side, traversal_frames

__all__ = ["taskgraph_stepper", "tree_stepper", "formula_frames", "counterexample_text",
           "counterexample_explorer", "svg_gantt", "mapping_frames", "mapping_html",
           "mapping_explorer", "subtree_colors", "schedule_figure",
           "mapping_figure", "pareto_points", "tradeoff_plot", "MARKERS"]

#: marker of each mapping in the makespan/peak plots
MARKERS = {"all-to-all": "o", "proportional": "s", "memory-aware": "^"}


def taskgraph_stepper(graph: Any, order: Sequence[Any], title: str, size: str = "2.2,2.6") -> Stepper:
    """Stepper through a sequential order of a task graph, from its memory profile."""
    def draw(done, running):
        return draw_taskgraph(graph, done=done, running=running, size=size)
    profile = taskgraph.memory_profile(graph, order)
    return Stepper(traversal_frames(draw, order, *profile, title), title=title)


def tree_stepper(tree: Any, order: Sequence[int], title: str,
                 names: Sequence[str] | None = None) -> Stepper:
    """Stepper through a traversal of an in-tree, from its memory profile."""
    def draw(done, running):
        return draw_tree(tree, names=names, done=done, running=running, size="3,3")
    labels = [names[v] if names else str(v) for v in order]
    frames = traversal_frames(draw, order, *treebase.memory_profile(tree, order), title,
                              labels=labels, bars_size=(4.2, 2.3))
    return Stepper(frames, title=title)


def _subtree(tree: Any, v: int) -> list[int]:
    nodes = [v]
    for x in nodes:
        nodes.extend(tree.children[x])
    return nodes


def formula_frames(tree: Any, v: int | None = None, child_order: Sequence[int] | None = None,
                   names: Sequence[str] | None = None) -> list[Frame]:
    """Frames of the seed's post-order formula at node ``v``, one term per frame
    (:func:`memlab.scheduling.postorder.postorder_terms`): the subtree of the
    term is outlined, the outputs already held are coloured."""
    terms = postorder_terms(tree, v, child_order)
    root = terms[-1][0]
    frames, shown, held_nodes = [], [], []
    for k, (c, p, held, term) in enumerate(terms):
        shown.append(term)
        last = k == len(terms) - 1
        fills = {h: color(0) for h in held_nodes}
        hi = [root] if last else _subtree(tree, c)
        if last:
            text = f"root {c}: sum f_i + m_R + f_R = {held:g} + {p:g} = {term:g}"
        else:
            text = f"term {k + 1}: P_{c} + sum of the f_i before = {p:g} + {held:g} = {term:g}"
        sofar = "max{" + "; ".join(f"{t:g}" for t in shown) + ("}" if last else "; ...}")
        cap = f"{text}   |   {sofar}" + (f" = {max(shown):g}" if last else "")
        frames.append(Frame(draw_tree(tree, names=names, highlight=hi, fills=fills, size="5,3"), cap))
        held_nodes.append(c)
    return frames


def counterexample_text(b: int, K: int, M: float, eps: float) -> str:
    """HTML: best post-order and optimal peaks of T_K computed by the algorithms,
    next to the seed's formulas BPO_K and BT_K."""
    t = treegen.postorder_counterexample(b, K, M, eps)
    bpo, bt = best_postorder(t)[1], optimal_traversal(t)[1]
    f_bpo, f_bt = treegen.counterexample_peaks(b, K, M, eps)
    verdict = "&gt; K" if bpo / bt > K else "&le; K"
    return (f"<pre>T_K with b={b}, K={K}, M={M:g}, eps={eps:g}: {t.n} nodes\n"
            f"best post-order {bpo:10.4g}   formula M + eps + K(b-1)M/b  = {f_bpo:.4g}\n"
            f"optimal         {bt:10.4g}   formula M + eps + K(b-1)eps  = {f_bt:.4g}\n"
            f"ratio BPO/BT = {bpo / bt:.3f} {verdict}</pre>")


def counterexample_explorer(b: int = 3, K: int = 1, M: float = 12.0, eps: float = 1.0) -> Explorer:
    """Sliders for b, K, M, eps of the slides' T_K ("Post-order is not optimal");
    each change recomputes both peaks (a few ms up to b=5, K=3).

    The family needs M > eps > 0 and b * eps <= M; the sliders hold only such values
    (eps at most 10**0.25 < 1.8, so b * eps < 9 < 10 <= M), so every frame is a tree."""
    return Explorer(counterexample_text, {
        "b": widgets.IntSlider(value=b, min=2, max=5, description="b"),
        "K": widgets.IntSlider(value=K, min=1, max=3, description="K"),
        "M": widgets.FloatSlider(value=M, min=10.0, max=100.0, step=1.0, description="M"),
        "eps": widgets.FloatLogSlider(value=eps, base=10, min=-3, max=0.25, step=0.25,
                                      description="eps")})


def subtree_colors(tree: Any) -> dict[int, str]:
    """One palette colour per subtree of the root (the root grey), to see tree parallelism."""
    top = {}
    for i in tree.bfs:
        top[i] = i if tree.parent[i] == tree.root else top.get(tree.parent[i], i)
    kids = tree.children[tree.root]
    return {i: color(kids.index(top[i])) if i != tree.root else "#dddddd" for i in range(tree.n)}


def svg_gantt(schedule: Any, colors: Mapping[int, str] | None = None, t: float | None = None,
              width: int = 460, lane: int = 18, xmax: float | None = None,
              title: str | None = None) -> str:
    """A parallel tree schedule as an SVG Gantt chart: one lane per processor,
    node i a bar on each processor of its whole range ``procs[i]``. With ``t``,
    a cursor at time t, nodes not started yet faded, running ones outlined red."""
    P = schedule.P
    span = xmax or schedule.makespan or 1.0
    x0, top = 30, 18 if title else 4
    sx = (width - x0 - 6) / span
    h = top + lane * P + 16
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
           f'font-family="sans-serif" font-size="9">']
    if title:
        out.append(f'<text x="{x0}" y="12" font-size="11">{_html.escape(title)}</text>')
    for p in range(P):
        out.append(f'<text x="2" y="{top + lane * p + lane * 0.65:.1f}">P{p}</text>')
    for i, (s, e) in enumerate(zip(schedule.start, schedule.end)):
        lo, hi = schedule.procs[i]
        fill = (colors or {}).get(i, color(i))
        later = t is not None and s > t + 1e-12
        run = t is not None and s <= t + 1e-12 < e
        stroke = ' stroke="#c0392b" stroke-width="2"' if run else ' stroke="#333" stroke-width="0.5"'
        op = ' fill-opacity="0.25"' if later else ""
        for p in range(lo, hi):
            y = top + lane * p + 2
            out.append(f'<rect x="{x0 + s * sx:.1f}" y="{y}" width="{max((e - s) * sx, 0.5):.1f}" '
                       f'height="{lane - 4}" fill="{fill}"{op}{stroke}/>')
            if (e - s) * sx > 12:
                out.append(f'<text x="{x0 + (s + e) / 2 * sx:.1f}" y="{y + lane * 0.55:.1f}" '
                           f'text-anchor="middle">{i}</text>')
    if t is not None:
        out.append(f'<line x1="{x0 + t * sx:.1f}" x2="{x0 + t * sx:.1f}" y1="{top}" '
                   f'y2="{top + lane * P}" stroke="#c0392b"/>')
    out.append(f'<text x="{x0}" y="{h - 3}">0</text><text x="{width - 6}" y="{h - 3}" '
               f'text-anchor="end">time {span:.3g}</text></svg>')
    return "".join(out)


def _memory_at(schedule: Any, t: float) -> float:
    k = max(j for j, x in enumerate(schedule.times) if x <= t + 1e-12)
    return float(schedule.memory[k])


def mapping_frames(schedule: Any, colors: Mapping[int, str] | None = None) -> list[Frame]:
    """Stepper frames of a parallel schedule over time: one frame per start or
    end time, showing which nodes run on which processors and the memory held."""
    times = sorted(set(schedule.start) | set(schedule.end))
    frames = []
    for t in times:
        running = [i for i in range(len(schedule.start)) if schedule.start[i] <= t < schedule.end[i]]
        cap = (f"{schedule.label}, t = {t:.3g}: running {running or 'nothing'}; "
               f"memory held {_memory_at(schedule, t):g} (peak {schedule.peak:g})")
        frames.append(Frame(svg_gantt(schedule, colors, t=t), cap))
    return frames


def mapping_html(tree: Any, w: Sequence[float], P: int, alpha: float, factor: float,
                 colors: Mapping[int, str] | None = None) -> str:
    """The three mappings of ``tree`` side by side as SVG Gantt charts, on one time scale."""
    bound = factor * mapping.sequential_minimum(tree)
    scheds = [mapping.all_to_all(tree, w, P, alpha=alpha), mapping.proportional(tree, w, P, alpha=alpha),
              mapping.memory_aware(tree, w, P, bound, alpha=alpha)]
    xmax = max(s.makespan for s in scheds)
    pics = [svg_gantt(s, colors, xmax=xmax, width=330, lane=14,
                      title=f"{s.label}: makespan {s.makespan:.3g}, peak {s.peak:g}") for s in scheds]
    return side_by_side(*pics) + f"<p>memory-aware bound M_B = {factor:g} x {bound / factor:g}</p>"


def mapping_explorer(tree: Any, w: Sequence[float], colors: Mapping[int, str] | None = None,
                     P: int = 4, alpha: float = 0.5, factor: float = 1.5) -> Explorer:
    """Sliders for P, alpha and the memory bound (as a multiple of the sequential
    minimum) redrawing the three mappings' Gantt charts (the slides' parallel traversals)."""
    return Explorer(lambda P, alpha, factor: mapping_html(tree, w, P, alpha, factor, colors), {
        "P": widgets.IntSlider(value=P, min=1, max=8, description="P"),
        "alpha": widgets.FloatSlider(value=alpha, min=0.3, max=1.0, step=0.05, description="alpha"),
        "factor": widgets.FloatSlider(value=factor, min=1.0, max=4.0, step=0.25,
                                      description="M_B / min")})


def schedule_figure(graph: Any, s: Any, title: str, axes: Any = None) -> Any:
    """A list schedule of a task graph (:func:`memlab.scheduling.listsched.list_schedule`):
    its Gantt chart beside the memory held over time (scheduling slides, "Task graph
    scheduling and memory"). Same task, same colour."""
    import matplotlib.pyplot as plt

    from .plots import gantt, memory_plot

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(9, 2.3))
    rows = [(t, s.proc[t], s.start[t], s.end[t]) for t in graph.tasks]
    gantt(rows, ax=axes[0], title=f"{title}: makespan {s.makespan:g}")
    memory_plot(list(s.memory), times=list(s.times), ax=axes[1], unit="memory",
                title=f"{title}: memory held")
    axes[1].set_xlim(0, s.makespan + 0.5)
    return axes[0].figure


def mapping_figure(s: Any, title: str, colors: Mapping[int, str] | None = None) -> Any:
    """A parallel tree schedule: Gantt chart (whole processors) beside its memory curve."""
    import matplotlib.pyplot as plt

    from .plots import memory_plot
    from .trees import tree_gantt

    fig, axes = plt.subplots(1, 2, figsize=(10, 2.4), gridspec_kw={"width_ratios": [3, 2]})
    tree_gantt(s, ax=axes[0], title=f"{title}: makespan {s.makespan:.3g}", colors=colors)
    memory_plot(list(s.memory), times=list(s.times), ax=axes[1], unit="memory",
                title=f"{title}: memory, peak {s.peak:g}")
    axes[1].set_xlim(0, s.makespan * 1.02)
    fig.tight_layout()
    return fig


def pareto_points(points: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The points of :func:`memlab.scheduling.mapping.tradeoff_points` that no other
    beats on both makespan and peak (:func:`~memlab.scheduling.mapping.pareto_front`),
    fastest first: the two ends are the two ends of the time/memory trade-off."""
    front = mapping.pareto_front([(p["makespan"], p["peak"]) for p in points])
    return [points[k] for k in front]


def tradeoff_plot(points: Sequence[Mapping[str, Any]], ax: Any = None, title: str = "",
                  front: bool = True, legend: bool = True) -> list[Mapping[str, Any]]:
    """Schedules as makespan/peak points (marker = mapping, colour = P), with their
    Pareto front as a red staircase when ``front``; returns :func:`pareto_points`."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.2))
    Ps = sorted({p["P"] for p in points})
    for p in points:
        ax.plot(p["makespan"], p["peak"], MARKERS[p["mapping"]], color=color(Ps.index(p["P"])),
                ms=6, alpha=0.6)
    best = pareto_points(points)
    if front:
        ax.step([p["makespan"] for p in best], [p["peak"] for p in best], "-", where="post",
                color="#c0392b")
        for p in best:
            ax.annotate(f"{p['mapping']}, P={p['P']}", (p["makespan"], p["peak"]), xytext=(6, 4),
                        textcoords="offset points", fontsize=7, color="#c0392b")
    if legend:
        handles = [plt.Line2D([], [], marker=m, ls="", color="#555", label=k)
                   for k, m in MARKERS.items()]
        handles += [plt.Line2D([], [], marker="o", ls="", color=color(i), label=f"P={P}")
                    for i, P in enumerate(Ps)]
        ax.legend(handles=handles, fontsize=7, loc="upper right", ncol=2)
    ax.set_xlabel("makespan")
    ax.set_ylabel("peak memory")
    ax.set_title(title, fontsize=9)
    return best

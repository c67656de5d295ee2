"""Graphviz drawings of in-trees and task graphs, and traversal bar plots (scheduling slides).

Drawing only: the states drawn (which nodes are done, which one runs) come
from the caller, who takes them from the algorithm's own trace (an order, a
memory profile). The one rule applied here is the model's definition of what
memory holds: an output stays from the end of its producer until its consumer
is done (scheduling slides, "Sequential problem"), so a done node whose consumer is not
done yet is drawn *held* (coloured), a consumed one *done* (grey).

* :func:`draw_tree` — an in-tree, root on top, edges child -> parent, labels
  ``name`` and ``f=.. m=..``;
* :func:`draw_taskgraph` — a task graph, edges labelled with data sizes, live
  data drawn thick and coloured;
* :func:`traversal_bars` — memory while each task runs (bar) and what stays
  after it (dark bar), the peak marked;
* :func:`tree_gantt` — a parallel tree schedule, one bar per node spanning
  the lanes of its processor range;
* :func:`side_by_side` — two or more pictures in one row (an HTML string a
  :class:`~memlab.viz.Frame` can show).
"""
from __future__ import annotations

import html as _html
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

import graphviz

from .graphs import digraph
from .palette import color
from .render import to_svg
from .stepper import Frame

__all__ = ["fronts_by_depth", "draw_tree", "draw_taskgraph", "traversal_bars", "side_by_side",
           "tree_gantt", "traversal_frames", "DONE", "HELD", "RUNNING"]

#: fill of a node whose output has been consumed (its memory is free again)
DONE = "#d9d9d9"
#: fill of a node whose output is held in memory (palette colour 0)
HELD = color(0)
#: border of the node running now
RUNNING = "#c0392b"


def _fmt(x: float) -> str:
    return f"{x:g}"


def _digraph(rankdir: str, title: str | None, size: str | None) -> graphviz.Digraph:
    return digraph(rankdir, title, size, graph={"nodesep": "0.2"}, node={"fontsize": "10", "shape": "box",
                   "margin": "0.05,0.02"}, title_size="12")


def fronts_by_depth(tree: Any) -> dict[int, list[float]]:
    """The execution data m (the fronts, for an assembly tree) of the nodes at each depth,
    root (0) first: lesson 12's table of how fronts grow from the leaves up."""
    level: dict[int, list[float]] = {}
    for i, d in enumerate(tree.depths()):
        level.setdefault(d, []).append(tree.m[i])
    return dict(sorted(level.items()))


def draw_tree(tree: Any, names: Sequence[str] | Mapping[int, str] | None = None,
              done: Iterable[int] = (), running: int | None = None, show_sizes: bool = True,
              highlight: Iterable[int] = (), fills: Mapping[int, str] | None = None,
              title: str | None = None, size: str | None = None) -> graphviz.Digraph:
    """Draw an in-tree (:class:`memlab.scheduling.trees.Tree`) with its root on top.

    ``done``: nodes already processed; those whose parent is not done hold
    their output ``f`` in memory and are coloured, the others are grey.
    ``running``: the node executing now (thick red border; its output is
    being written, so it is coloured too). ``highlight``: nodes with a thick
    dark border (e.g. one subtree). ``fills``: explicit fill colours per node
    (override the done/held colours). Labels are ``names[i]`` (default the
    index) and, with ``show_sizes``, ``f=.. m=..`` (m omitted when 0).
    """
    dn = set(done)
    hi = set(highlight)
    fills = dict(fills or {})
    g = _digraph("BT", title, size)
    for i in range(tree.n):
        name = str(names[i]) if names is not None else str(i)
        label = name
        if show_sizes:
            label += f"\nf={_fmt(tree.f[i])}"
            if tree.m[i]:
                label += f" m={_fmt(tree.m[i])}"
        if i in fills:
            fill = fills[i]
        elif i == running:
            fill = HELD
        elif i in dn:
            p = tree.parent[i]
            fill = HELD if (p < 0 or p not in dn) else DONE
        else:
            fill = "#ffffff"
        attrs = {"fillcolor": fill}
        if i == running:
            attrs.update(penwidth="3", color=RUNNING)
        elif i in hi:
            attrs.update(penwidth="2.5", color="#333333")
        g.node(str(i), label, **attrs)
    for i in range(tree.n):
        p = tree.parent[i]
        if p >= 0:
            held = i in dn and p not in dn
            g.edge(str(i), str(p), color=HELD if held else "#555555", penwidth="2.5" if held else "1")
    return g


def draw_taskgraph(graph: Any, done: Iterable[Hashable] = (), running: Hashable | None = None,
                   show_sizes: bool = True, title: str | None = None, rankdir: str = "TB",
                   size: str | None = None) -> graphviz.Digraph:
    """Draw a task graph (:class:`memlab.taskgraph.TaskGraph`), sources on top.

    Edges carry their data size. A datum is live (drawn thick, coloured) from
    the moment its producer runs until its consumer is done; ``running`` is
    the task executing now, ``done`` the tasks finished. Task labels show a
    duration other than 1 (``d=``) and execution data (``m=``) when present.
    """
    dn = set(done)
    g = _digraph(rankdir, title, size)
    for t in graph.tasks:
        label = str(t)
        extra = []
        if graph.duration[t] != 1:
            extra.append(f"d={_fmt(graph.duration[t])}")
        if graph.memory[t]:
            extra.append(f"m={_fmt(graph.memory[t])}")
        if extra:
            label += "\n" + " ".join(extra)
        if t == running:
            attrs = {"fillcolor": HELD, "penwidth": "3", "color": RUNNING}
        elif t in dn:
            attrs = {"fillcolor": DONE}
        else:
            attrs = {"fillcolor": "#ffffff"}
        g.node(str(t), label, shape="circle", width="0.4", fixedsize="true", **attrs)
    for (u, v), s in graph.size.items():
        live = (u in dn or u == running) and v not in dn
        g.edge(str(u), str(v), label=f" {_fmt(s)}" if show_sizes else "",
               color=HELD if live else "#555555", penwidth="3" if live else "1",
               fontcolor="#000000" if live else "#555555")
    return g


def traversal_bars(during: Sequence[float], after: Sequence[float], labels: Sequence[str],
                   upto: int | None = None, title: str | None = None, unit: str = "memory",
                   ymax: float | None = None, figsize: tuple[float, float] = (3.6, 2.3)):
    """Bar plot of a sequential traversal's memory: for each step a light bar
    (memory while the task runs) and a dark bar (memory held once it is
    done); the peak is marked. ``upto`` draws only the first ``upto`` steps,
    on the full axes (for steppers)."""
    import matplotlib.pyplot as plt

    n = len(during) if upto is None else upto
    fig, ax = plt.subplots(figsize=figsize)
    xs = list(range(len(during)))
    ax.bar(xs[:n], list(during)[:n], width=0.75, color=HELD, edgecolor="#333333", label="while running")
    ax.bar(xs[:n], list(after)[:n], width=0.4, color="#4d7f9e", label="after")
    top = max(during) if len(during) else 0.0
    if n and max(list(during)[:n]) == top:
        i = list(during).index(top)
        ax.axhline(top, color=RUNNING, lw=1, ls="--")
        ax.annotate(f"peak {top:g}", (i, top), textcoords="offset points", xytext=(0, 4), ha="center",
                    color=RUNNING, fontsize=9)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in labels], fontsize=8)
    ax.set_xlim(-0.6, len(during) - 0.4)
    ax.set_ylim(0, (ymax if ymax is not None else top) * 1.5 or 1)
    ax.set_ylabel(unit)
    ax.set_xlabel("execution order")
    ax.legend(fontsize=7, loc="upper left", frameon=False, ncol=2)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def side_by_side(*pictures: Any, gap: str = "16px") -> str:
    """Pictures (Graphviz graphs, matplotlib figures, SVG/HTML text) in one row, as HTML."""
    cells = "".join(f'<div style="flex:0 0 auto">{to_svg(p)}</div>' for p in pictures)
    return (f'<div class="memlab-row" style="display:flex;flex-wrap:wrap;gap:{_html.escape(gap)};'
            f'align-items:center">{cells}</div>')


def tree_gantt(schedule: Any, names: Sequence[str] | None = None, ax: Any = None, title: str | None = None,
               colors: Mapping[int, str] | None = None, xmax: float | None = None,
               figsize: tuple[float, float] = (5.5, 2.2)):
    """Gantt chart of a parallel tree schedule (:class:`memlab.scheduling.treesim.TreeSchedule`):
    node i is one bar from ``start[i]`` to ``end[i]`` covering the lanes of its
    processor range ``procs[i] = (lo, hi)``; same node = same colour
    (``colors`` overrides, e.g. one colour per subtree). Node names are written
    inside bars wide enough to hold them."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    span = xmax if xmax is not None else (schedule.makespan or 1.0)
    for i, (s, e) in enumerate(zip(schedule.start, schedule.end)):
        lo, hi = schedule.procs[i]
        fill = (colors or {}).get(i, color(i))
        ax.barh((lo + hi - 1) / 2, e - s, left=s, height=hi - lo - 0.25, color=fill, edgecolor="#333333", lw=0.6)
        if e - s > 0.035 * span:
            ax.text((s + e) / 2, (lo + hi - 1) / 2, str(names[i]) if names is not None else str(i),
                    ha="center", va="center", fontsize=7)
    P = getattr(schedule, "P", 1)
    ax.set_yticks(range(P))
    ax.set_yticklabels([f"P{p}" for p in range(P)], fontsize=7 if P > 6 else 9)
    ax.set_ylim(P - 0.5, -0.5)
    ax.set_xlim(0, span * 1.02)
    ax.set_xlabel("time")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def traversal_frames(draw: Callable[[Sequence[Any], Any], Any], order: Sequence[Any],
                     during: Sequence[float], after: Sequence[float], title: str,
                     labels: Sequence[str] | None = None,
                     bars_size: tuple[float, float] = (3.6, 2.3)) -> list[Frame]:
    """Stepper frames of a sequential traversal, one per task, from the algorithm's own profile.

    ``draw(done, running)`` draws the graph or tree with the tasks ``done``
    and the one ``running``; beside it, :func:`traversal_bars` of ``during``
    and ``after`` (memory while each task runs and after it) up to that step.
    """
    labels = [str(v) for v in order] if labels is None else list(labels)
    top = max(during) if len(during) else 0

    def bars(upto: int) -> Any:
        return traversal_bars(during, after, labels, upto=upto, ymax=top, figsize=bars_size)

    frames = [Frame(side_by_side(draw([], None), bars(0)), f"{title}: nothing run yet, memory 0")]
    for k, v in enumerate(order):
        frames.append(Frame(side_by_side(draw(list(order[:k]), v), bars(k + 1)),
                            f"{title}: step {k + 1}, run {labels[k]}: memory {during[k]:g} while it runs, "
                            f"{after[k]:g} after"))
    return frames

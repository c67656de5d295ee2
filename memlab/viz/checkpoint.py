"""Pictures of checkpointing on chains (lessons 07-08): slots, task graphs, curves, schedule diagrams.

Everything drawn comes from :mod:`memlab.checkpoint` (a schedule's actions, :func:`simulate`'s slot
contents, the optimum's closed form); nothing here decides anything.
"""
from __future__ import annotations

import html
from functools import lru_cache
from typing import Sequence

import graphviz
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..checkpoint import (Backward, Forward, Schedule, optimal_forwards, minimum_budget, recursive,
                          revolve, sqrt_schedule, store_all, recompute_all, periodic)
from .graphs import digraph
from .palette import color
from .plots import finish
from .stepper import Frame

X_COLOR, Y_COLOR = "#80b1d3", "#fb8072"


def slot_row(row: Sequence[str | None], width: int | None = None) -> str:
    """One memory row as the seed draws it: a box per slot, ``x`` values blue, ``y`` values red."""
    width = max(width or 0, len(row))
    cells = []
    for k in range(width):
        v = row[k] if k < len(row) else None
        fill = "#ffffff" if v is None else (X_COLOR if v[0] == "x" else Y_COLOR)
        text = "" if v is None else f"{v[0]}<sub>{v[1:]}</sub>"
        cells.append(f'<td style="border:1px solid #333;width:38px;height:26px;text-align:center;'
                     f'background:{fill};font-size:14px">{text}</td>')
    return ('<table style="border-collapse:collapse;margin:2px 0"><tr>'
            '<td style="padding-right:8px">Memory:</td>' + "".join(cells) + "</tr></table>")


def schedule_frames(schedule: Schedule, width: int | None = None) -> list[Frame]:
    """One frame per action of ``schedule``: the slots after it, as in the seed's l = 5 frames."""
    sim = schedule.simulate()
    width = width or sim.peak
    frames = [Frame(slot_row(sim.slots[0], width), f"{schedule.name}: start, x0 in memory")]
    forwards = 0
    for k, a in enumerate(schedule.actions):
        forwards += isinstance(a, Forward)
        extra = max(0, forwards - schedule.l)
        held = sum(v is not None for v in sim.slots[k + 1])
        frames.append(Frame(slot_row(sim.slots[k + 1], width),
                            f"{schedule.name}: action {k + 1}/{len(schedule.actions)}, {_say(a, schedule.l)}; "
                            f"{held} slots held, {extra} recomputations so far"))
    return frames


def _say(a: object, l: int) -> str:
    if isinstance(a, Forward):
        return f"F{a.i} computes x{a.i + 1}" + (f" (x{a.i} kept)" if a.keep else f" over x{a.i}")
    if isinstance(a, Backward):
        return f"B{a.i}: y{a.i} from x{a.i}" + (f" and y{a.i + 1}" if a.i < l else "")
    return str(a)


def strategies_frames(schedules: Sequence[Schedule]) -> list[Frame]:
    """The frames of several schedules one after the other (one stepper for the seed's three)."""
    width = max(s.peak for s in schedules)
    return [f for s in schedules for f in schedule_frames(s, width)]


CHAIN_PHASES = ("the forward phase: F_i(x_i) = x_(i+1), i < l",
                "the backward phase: B_i(x_i, y_(i+1)) = y_i, i <= l",
                "the edges x_i -> B_i: each backward step reads its forward value")


def chain_graph(l: int, phase: int = 3) -> graphviz.Digraph:
    """The backpropagation task graph as the slides build it: ``phase`` 1 the forward tasks
    ``F_i``, 2 the backward tasks ``B_i`` too, 3 the edges from ``x_i`` to ``B_i`` too."""
    if phase not in (1, 2, 3):
        raise ValueError(f"chain_graph: phase must be 1, 2 or 3, got {phase!r}")
    g = digraph("LR", size="9,3")
    for i in range(l + 1):
        g.node(f"x{i}", f"x{i}", shape="box", style="filled", fillcolor=X_COLOR)
        if i < l:
            g.node(f"F{i}", f"F{i}", shape="ellipse")
            g.edge(f"x{i}", f"F{i}")
            g.edge(f"F{i}", f"x{i + 1}")
        if phase >= 2:
            g.node(f"y{i}", f"y{i}", shape="box", style="filled", fillcolor=Y_COLOR)
            g.node(f"B{i}", f"B{i}", shape="ellipse")
            g.edge(f"B{i}", f"y{i}")
            if i < l:
                g.edge(f"y{i + 1}", f"B{i}")
        if phase == 3:
            g.edge(f"x{i}", f"B{i}", color="#c0392b")
    return g


def chain_graph_frames(l: int) -> list[Frame]:
    """The slides' three frames of the task graph, one :class:`Frame` each."""
    return [Frame(chain_graph(l, k + 1), what)
            for k, what in enumerate(CHAIN_PHASES)]


@lru_cache(maxsize=64)
def strategy_points(l: int) -> list[tuple[str, int, int]]:
    """``(strategy, peak, recomputations)`` for the classic strategies on a chain of ``l`` steps."""
    pts = [(s.name, s.peak, s.recomputations) for s in (store_all(l), recompute_all(l),
                                                         sqrt_schedule(l))]
    pts += [(f"recursive k={k}", *_pr(recursive(l, k))) for k in (2, 3) if k <= l]
    pts += [(f"revolve c={c}", *_pr(revolve(l, c))) for c in range(1, min(l, 12) + 1)]
    pts += [(f"every {k}", *_pr(periodic(l, k))) for k in sorted({2, max(2, l // 4), max(2, l // 2)})
            if k < l]
    return pts


def _pr(s: Schedule) -> tuple[int, int]:
    return s.peak, s.recomputations


def recomputation_curve(l: int, budget: int | None = None, log: bool = True) -> Figure:
    """Recomputations against peak slots for every strategy, the optimum drawn as its floor."""
    fig, ax = plt.subplots(figsize=(8.8, 3.4))
    ms = list(range(minimum_budget(l), l + 2))
    opt = [optimal_forwards(l, m) - l for m in ms]
    ax.step(ms, [max(o, 0.5) if log else o for o in opt], where="post", color="#333333", lw=2,
            label="optimum (the floor)")
    groups: dict[str, list[tuple[int, int]]] = {}
    for name, p, r in strategy_points(l):
        groups.setdefault(name.split(" ")[0] if name.split(" ")[0] in ("revolve", "every",
                                                                       "recursive") else name,
                          []).append((p, r))
    # Revolve's points fall on other strategies' (c = 1 is recompute all): drawn as large hollow
    # rings under the others, so a point of another strategy stays visible inside a ring
    labels = {"revolve": "Revolve, c = 1, 2, ... snapshots",
              "every": "every k: keep x_0, x_k, x_2k, ... (k = 2, l/4, l/2)",
              "recursive": "recursive (Chen et al.), k = 2, 3"}
    for k, (name, pts) in enumerate(groups.items()):
        pts.sort()
        ring = name == "revolve"
        ax.plot([p for p, _ in pts], [max(r, 0.5) if log else r for _, r in pts],
                "o-" if len(pts) > 1 else "o", color=color(k), label=labels.get(name, name),
                ms=10 if ring else 4.5, mfc="none" if ring else color(k), mew=1.5 if ring else 1,
                lw=1, zorder=2 if ring else 3)
    if budget is not None:
        ax.axvline(budget, color="#c0392b", ls="--", lw=1)
        best = optimal_forwards(l, budget) - l if budget >= minimum_budget(l) else None
        ax.set_title(f"l = {l}: at M = {budget} the optimum recomputes {best:g} steps"
                     if best is not None else f"l = {l}: M = {budget} is below the minimum",
                     fontsize=10)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("peak memory (slots)")
    ax.set_ylabel("recomputations" + (" (0 drawn at 0.5)" if log else ""))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return finish(fig, ax, None)


def schedule_diagram(schedule, ax=None, title: str | None = None) -> Figure:
    """Time on the x axis, chain step on the y axis (as pyrevolve and Checkmate draw schedules):
    forward steps climb, backward steps descend, kept checkpoints are marked."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6.4, 2.8))
    for t, a in enumerate(schedule.actions):
        if isinstance(a, Forward):
            ax.plot([t, t + 1], [a.i, a.i + 1], color=X_COLOR, lw=2)
            if a.keep:
                ax.plot([t], [a.i], "s", color="#1f4e79", ms=4)
        elif isinstance(a, Backward):
            ax.plot([t, t + 1], [a.i + 0.5, a.i - 0.5 + 0.5], color=Y_COLOR, lw=3)
    ax.set_xlabel("time (actions)")
    ax.set_ylabel("step i")
    _integer_ticks(ax)
    if title is None:
        title = f"{schedule.name}: peak {schedule.peak}, {schedule.recomputations} recomputations"
    return finish(fig, ax, title)


def comparison_table(schedules: Sequence[Schedule]) -> str:
    """An HTML table: strategy, peak slots, recomputations, forward steps."""
    rows = "".join(f"<tr><td>{html.escape(s.name)}</td><td>{s.peak}</td><td>{s.recomputations}</td>"
                   f"<td>{s.forwards}</td></tr>" for s in schedules)
    return ("<table><tr><th>strategy</th><th>peak (slots)</th><th>recomputations</th>"
            f"<th>forward steps</th></tr>{rows}</table>")


LEVEL_COLORS = ("#1f4e79", "#e69f00", "#009e73", "#cc79a7")


def level_diagram(schedule, write: Sequence[float], read: Sequence[float],
                  title: str | None = None) -> Figure:
    """A multi-level schedule over time: forward and backward steps as in :func:`schedule_diagram`,
    writes (triangles up) and reads (triangles down) coloured by storage level; each event takes
    its cost in time."""
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    t = 0.0
    for e in schedule.events:
        if e.kind == "F":
            ax.plot([t, t + 1], [e.i, e.i + 1], color=X_COLOR, lw=2)
            t += 1
        elif e.kind == "B":
            ax.plot([t, t + 0.5], [e.i + 0.5, e.i], color=Y_COLOR, lw=3)
            t += 0.5
        else:
            cost = write[e.level] if e.kind == "write" else read[e.level]
            ax.plot([t], [e.i], "^" if e.kind == "write" else "v", ms=7,
                    color=LEVEL_COLORS[e.level % len(LEVEL_COLORS)])
            t += cost
    n_back = sum(e.kind == "B" for e in schedule.events)
    ax.set_xlabel(f"time; the {n_back} backward steps (drawn 0.5 wide) are not in the total",
                  fontsize=8)
    ax.set_ylabel("step i")
    _integer_ticks(ax)
    return finish(fig, ax, title or f"total time {schedule.time:g}: {schedule.forwards} forward "
                                    f"steps, {schedule.writes} writes, {schedule.reads} reads, "
                                    "each at its cost")


def _integer_ticks(*axes) -> None:
    """Steps and indices are whole numbers: no tick at 2.5."""
    from matplotlib.ticker import MaxNLocator
    for ax in axes:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def chain_profile(chain) -> Figure:
    """A heterogeneous chain's parameters: value sizes x_i, and the costs wf_i of F_i and wb_i of
    B_i side by side per step."""
    from matplotlib.ticker import MaxNLocator
    fig, (a, b) = plt.subplots(1, 2, figsize=(7.2, 2.3))
    a.bar(range(len(chain.sizes)), chain.sizes, color=X_COLOR)
    a.set_xlabel("i")
    a.set_ylabel("size of x_i (units)")
    fwd, bwd = chain.forward_costs, chain.backward_costs
    b.bar([i - 0.2 for i in range(len(fwd))], fwd, width=0.4, color=X_COLOR, label="F_i (wf)")
    b.bar([i + 0.2 for i in range(len(bwd))], bwd, width=0.4, color=Y_COLOR, label="B_i (wb)")
    b.set_xlabel("i")
    b.set_ylabel("cost (time units)")
    b.legend(fontsize=7, frameon=False)
    for ax in (a, b):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    return fig


def time_memory_curve(rows: Sequence[dict], title: str | None = None) -> Figure:
    """Total time against the size of the first level (rows of ``time_against_memory``)."""
    fig, ax = plt.subplots(figsize=(5.6, 2.8))
    for k, (label, rs) in enumerate(_group(rows).items()):
        ax.plot([r["level0"] for r in rs], [r["time"] for r in rs], "o-", color=color(k),
                label=label)
    ax.set_xlabel("slots in the first level (memory)")
    ax.set_ylabel("total time")
    return finish(fig, ax, title, legend=True)


def _group(rows: Sequence[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(str(r.get("label", "")), []).append(r)
    return out


def network_graph(loss, title: str | None = None, size: str | None = "11,3",
                  span: tuple[int, int] | None = None) -> graphviz.Digraph:
    """A network's forward graph as a task graph (the scheduling slides' "Relation to deep
    learning", drawn on the GoogleNet graph): one box per computed node, labelled by its op,
    weights and inputs left out, left to right; a branch-and-merge module shows as parallel
    paths between a split and a ``concat``. ``span = (a, b)`` keeps only the computed nodes
    a to b - 1 of the topological order (a zoom on one module)."""
    from ..graph import topo_order
    computed = [n for n in topo_order(loss) if not n.is_leaf]
    keep = set(computed[slice(*span)] if span else computed)
    g = digraph("LR", title, size, graph={"nodesep": "0.05", "ranksep": "0.12"},
                node={"shape": "box", "fontsize": "8", "height": "0.2", "width": "0.3",
                      "margin": "0.03,0.01", "fillcolor": "#ffffff"},
                edge={"arrowsize": "0.3", "penwidth": "0.6"})
    shade = {"conv2d": color(0), "concat": color(1), "maxpool": color(2), "avgpool": color(2),
             "fc": color(3), "softmax_xent": color(4)}
    for n in computed:
        if n not in keep:
            continue
        g.node(str(n.id), n.op.name, fillcolor=shade.get(n.op.name, "#ffffff"))
        for x in n.inputs:
            if x in keep:
                g.edge(str(x.id), str(n.id))
    return g

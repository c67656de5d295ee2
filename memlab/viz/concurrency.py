"""Pictures of memory versus concurrency and of training plans (lessons 04-05, lecture 7 p.23-29, p.35-36).

Drawing only: what is drawn (tags, implicit dependencies, colour classes,
schedules, curves) comes from :mod:`memlab.memory.coloring`, :mod:`memlab.memory.planner`
and :mod:`memlab.models`; nothing here decides anything.

* :func:`draw_dependencies` — a graph top to bottom, nodes filled by storage
  (same colour = same memory), extra edges drawn dashed red: the implicit
  dependencies that sharing adds (p.23) or the control edges a scheduler
  must insert (p.25); optional rewards written in the nodes and colour
  classes drawn as thick coloured borders (p.24);
* :func:`coloring_frames` — stepper frames of the longest-path colouring
  (p.24), from ``coloring.longest_path_coloring``'s paths;
* :func:`schedule_gantt` — a simulated schedule (``coloring.simulate_schedule``)
  as a Gantt chart, bars filled with each op's storage colour;
* :func:`access_lanes` — MXNet's view (p.25): one lane per storage, the ops
  that write (W) and read (R) it in push order;
* :func:`colors_tradeoff_plot` — memory against makespan for several numbers of colours;
* :func:`draw_training_graph` / :func:`training_plan_frames` — a forward
  graph top to bottom with its backward graph beside it, flowing upward, as
  on slide p.28, coloured by storage; the planner's steps as frames;
* :func:`slide29_bars` — our p.29 bars next to the slide's values;
* :func:`sharing_memory_curves` — p.35-36: memory against depth or steps (log-log),
  ours as lines, the slide's read-off points as open markers.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

import graphviz

from ..graph import Node, as_list, topo_order
from .graphs import digraph, node_text
from .palette import LEAF, NEUTRAL, color
from .plots import finish
from .stepper import Frame

__all__ = ["IMPLICIT", "CLASS_COLORS", "class_color", "draw_dependencies", "coloring_frames",
           "schedule_gantt", "access_lanes", "colors_tradeoff_plot", "draw_training_graph", "training_plan_frames",
           "slide29_bars", "slide29_figure", "sharing_memory_curves", "runtime_total_curves",
           "STRATEGY_COLORS"]

#: colour of implicit / control dependency edges and of the node running now
IMPLICIT = "#c0392b"
#: colour classes of the longest-path colouring (p.24): borders, not fills, so they never read as storages
CLASS_COLORS: tuple[str, ...] = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                                 "#17becf", "#bcbd22")
#: the four strategies of p.29 and the three curves of p.35-36, in the slides' colours
STRATEGY_COLORS = {"naive": "#d62728", "none": "#2ca02c", "inplace": "#fdae61", "co-share": "#a6d96a",
                   "both": "#1a9641", "sharing": "#9c27b0"}


def class_color(c: int | None) -> str:
    """Border colour of colour class ``c`` (dark grey when ``None``)."""
    return "#333333" if c is None else CLASS_COLORS[c % len(CLASS_COLORS)]


def _digraph(title: str | None, size: str | None, rankdir: str = "TB") -> graphviz.Digraph:
    return digraph(rankdir, title, size, graph={"nodesep": "0.3", "ranksep": "0.32"},
                   node={"shape": "box", "margin": "0.08,0.04"})


def _visible(order: Sequence[Node], hide_constants: bool) -> list[Node]:
    return [n for n in order if not (hide_constants and n.is_leaf and n.op.name == "constant")]


def draw_dependencies(outputs: Node | Iterable[Node], storage: Mapping[Node, int] | None = None,
                      implicit: Iterable[tuple[Node, Node]] = (), implicit_label: str = "implicit",
                      rewards: Mapping[Node, float] | None = None, classes: Mapping[Node, int] | None = None,
                      highlight: Iterable[Node] = (), hide_constants: bool = True,
                      title: str | None = None, size: str | None = None) -> graphviz.Digraph:
    """The graph of ``outputs`` top to bottom, with the edges a memory plan adds.

    ``storage``: node -> tag (fill colour and ``#tag``); ``implicit``: extra
    edges ``(a, b)`` drawn dashed red with ``implicit_label`` (they do not move
    nodes, so the picture keeps the data layout); ``rewards``: a number
    written in each node (p.24); ``classes``: node -> colour class, drawn as a
    thick border of :func:`class_color`; ``highlight``: thick red border.
    Constants (the conv kernels) are left out unless ``hide_constants=False``.
    """
    order = topo_order(as_list(outputs))
    shown = _visible(order, hide_constants)
    keep = set(shown)
    storage = storage or {}
    hi = set(highlight)
    g = _digraph(title, size)
    for n in shown:
        sid = storage.get(n)
        fill = color(sid) if sid is not None else (LEAF if n.is_leaf else NEUTRAL)
        label = node_text(n)
        if sid is not None:
            label += f"\n#{sid}"
        if rewards is not None and n in rewards:
            label += f"\nreward {rewards[n]:g}"
        attrs: dict[str, str] = {"fillcolor": fill}
        if n in hi:
            attrs.update(penwidth="3.5", color=IMPLICIT)
        elif classes is not None and n in classes:
            attrs.update(penwidth="3.5", color=class_color(classes[n]))
        g.node(str(n.id), label, shape="ellipse" if n.is_leaf else "box", **attrs)
        for x in dict.fromkeys(n.inputs):
            if x in keep:
                g.edge(str(x.id), str(n.id))
    for a, b in implicit:
        if a in keep and b in keep:
            g.edge(str(a.id), str(b.id), style="dashed", color=IMPLICIT, fontcolor=IMPLICIT, penwidth="1.8",
                   constraint="false", label=f" {implicit_label}")
    return g


def coloring_frames(outputs: Node | Iterable[Node], paths: Sequence[Sequence[Node]],
                    order: Sequence[Node] | None = None, size: str | None = None) -> list[Frame]:
    """Frames of p.24 from the paths the colouring found (``longest_path_coloring(...)["paths"]``).

    Frame 0: every op has reward 1. Then, for each non-empty path ``c``: the
    path found (red border, its total reward in the caption), then its nodes
    coloured with class ``c`` and their rewards reset to 0. The last frame is
    the final colouring. Paths are read as given: this only draws them.
    """
    outs = as_list(outputs)
    order = list(order) if order is not None else topo_order(outs)
    ops = [n for n in order if n.op.computes]
    reward = {n: 1 for n in ops}
    classes: dict[Node, int] = {}
    frames = [Frame(draw_dependencies(outs, rewards=dict(reward), size=size),
                    f"start: every op has reward 1 ({len(ops)} ops)")]
    rounds = [(c, list(p)) for c, p in enumerate(paths) if p]
    for k, (c, path) in enumerate(rounds):
        names = ", ".join(n.name for n in path)
        frames.append(Frame(draw_dependencies(outs, rewards=dict(reward), classes=dict(classes), highlight=path,
                                              size=size),
                            f"round {k + 1}: the longest path has reward {sum(reward[n] for n in path)}: {names}"))
        for n in path:
            classes[n] = c
            reward[n] = 0
        frames.append(Frame(draw_dependencies(outs, rewards=dict(reward), classes=dict(classes), size=size),
                            f"round {k + 1}: colour {c} on its nodes, reset their rewards to 0"))
    frames.append(Frame(draw_dependencies(outs, classes=dict(classes), size=size),
                        f"the final node colours: {len(rounds)} colour(s); memory is reused only within a colour"))
    return frames


def schedule_gantt(slots: Sequence[tuple[Node, int, float, float]], storage: Mapping[Node, int] | None = None,
                   workers: int | None = None, ax: Any = None, title: str | None = None,
                   xmax: float | None = None, figsize: tuple[float, float] = (5.5, 1.6)) -> Any:
    """A schedule's ``(node, worker, start, end)`` slots as a Gantt chart, one lane per worker.

    Bars are filled with the node's storage colour (``storage``), so two bars
    of one colour are two values sharing memory; the makespan is marked.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    storage = storage or {}
    for n, w, s, e in slots:
        ax.barh(w, e - s, left=s, height=0.6, color=color(storage.get(n)), edgecolor="#333333", lw=0.8)
        ax.text((s + e) / 2, w, n.name, ha="center", va="center", fontsize=8)
    nw = workers if workers is not None else (max((w for _, w, _, _ in slots), default=0) + 1)
    span = max((e for *_, e in slots), default=0.0)
    ax.axvline(span, color=IMPLICIT, lw=1, ls="--")
    ax.text(span, -0.55, f" makespan {span:g}", color=IMPLICIT, fontsize=8, va="bottom")
    ax.set_yticks(list(range(nw)))
    ax.set_yticklabels([f"worker {w}" for w in range(nw)], fontsize=8)
    ax.set_ylim(nw - 0.5, -0.9)
    ax.set_xlim(0, (xmax if xmax is not None else span) * 1.02 + 0.3)
    ax.set_xlabel("time (one unit per op)", fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def access_lanes(accesses: Mapping[int, Sequence[tuple[Node, str]]], order: Sequence[Node],
                 ax: Any = None, title: str | None = None, figsize: tuple[float, float] = (6.0, 1.8)) -> Any:
    """MXNet's mutation view (p.25): one lane per storage, a box per access in push order.

    ``accesses`` is ``coloring.mutation_dependencies(plan)["accesses"]``:
    writes are filled with the storage's colour and marked W, reads are
    outlined and marked R; the x axis is the op's position in ``order``.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(figsize[0], max(figsize[1], 0.55 * len(accesses) + 0.7)))
    fig = ax.figure
    ops = [n for n in order if n.op.computes]
    pos = {n: i for i, n in enumerate(ops)}
    tags = sorted(accesses)
    for lane, tag in enumerate(tags):
        ax.axhline(lane, color="#cccccc", lw=0.8, zorder=0)
        for n, kind in accesses[tag]:
            x = pos[n]
            w = kind == "write"
            ax.add_patch(plt.Rectangle((x - 0.4, lane - 0.3), 0.8, 0.6, facecolor=color(tag) if w else "#ffffff",
                                       edgecolor="#333333" if w else color(tag), lw=1.8))
            ax.text(x, lane, "W" if w else "R", ha="center", va="center", fontsize=8, fontweight="bold")
    ax.set_yticks(list(range(len(tags))))
    ax.set_yticklabels([f"storage #{t}" for t in tags], fontsize=8)
    ax.set_xticks(list(range(len(ops))))
    ax.set_xticklabels([n.name for n in ops], fontsize=8)
    ax.set_xlim(-0.6, len(ops) - 0.4)
    ax.set_ylim(len(tags) - 0.4, -0.6)
    ax.set_xlabel("ops in push order (W: mutates the storage, R: reads it)", fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def colors_tradeoff_plot(rows: Sequence[Mapping[str, Any]], ax: Any = None, title: str | None = None,
                  label: str | None = None, marker: str = "o", unit_name: str = "bytes",
                  figsize: tuple[float, float] = (5.6, 3.2)) -> Any:
    """Memory (x) against makespan (y), one point per row of ``coloring.concurrency_tradeoff``,
    labelled with its number(s) of colours; the data-only makespan (the best any plan can do on
    these workers) is a dashed line of the same colour. Call it again on the same ``ax`` for
    another number of workers."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    xs = [r["total_bytes"] for r in rows]
    ys = [r["makespan"] for r in rows]
    (line,) = ax.plot(xs, ys, marker + "-", lw=1.5, label=label)
    at: dict[tuple[float, float], list[str]] = {}
    for r, x, y in zip(rows, xs, ys):
        at.setdefault((x, y), []).append(str(r["colors"]))
    for (x, y), ks in at.items():
        ax.annotate(", ".join(ks), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=8)
    best = min(r["makespan_data_only"] for r in rows)
    ax.axhline(best, color=line.get_color(), ls="--", lw=0.8)
    ax.set_xlabel(f"planned memory ({unit_name})")
    ax.set_ylabel("makespan")
    ax.set_ylim(0, max(max(ys) * 1.15, ax.get_ylim()[1]))
    return finish(fig, ax, title, legend=bool(label))


# ------------------------------------------------------------------ training graphs (p.26-28)

def draw_training_graph(outputs: Node | Iterable[Node], forward: Node | Iterable[Node],
                        storage: Mapping[Node, int] | None = None, running: Node | None = None,
                        done: Iterable[Node] | None = None, labels: Mapping[Node, str] | None = None,
                        hide_constants: bool = True, title: str | None = None,
                        size: str | None = None) -> graphviz.Digraph:
    """A training graph as on slide p.28: the forward pass top to bottom on the left, the backward
    pass beside it on the right, flowing upward (the last gradient on top).

    ``forward``: the forward outputs (the loss); every node they depend on is
    forward, the others backward. ``storage`` fills nodes by tag;
    ``running`` gets a thick red border; with ``done`` given, nodes not done
    yet are drawn without their colour and edges into them dashed;
    ``labels`` replaces the text of some nodes (e.g. ``{dW1: "W1-grad"}``).
    """
    outs = as_list(outputs)
    order = topo_order(outs)
    fwd = set(topo_order(as_list(forward)))
    shown = _visible(order, hide_constants)
    keep = set(shown)
    storage = storage or {}
    dn = None if done is None else set(done)
    labels = labels or {}
    g = _digraph(title, size)
    g.attr(newrank="true", nodesep="0.35", ranksep="0.28")
    for side, label in (("fwd", "forward"), ("bwd", "backward (gradients)")):
        with g.subgraph(name=f"cluster_{side}") as c:
            c.attr(label=label, fontsize="11", color="#bbbbbb", style="rounded", fontname="Helvetica")
            for n in shown:
                if (n in fwd) != (side == "fwd"):
                    continue
                sid = storage.get(n) if (dn is None or n in dn or n.is_leaf) else None
                fill = color(sid) if sid is not None else (LEAF if n.is_leaf else NEUTRAL)
                text = labels.get(n, node_text(n)) + (f"\n#{sid}" if sid is not None else "")
                attrs = {"fillcolor": fill}
                if n is running:
                    attrs.update(penwidth="3.5", color=IMPLICIT)
                c.node(str(n.id), text, shape="ellipse" if n.is_leaf else "box", **attrs)
    for n in shown:
        for x in dict.fromkeys(n.inputs):
            if x not in keep:
                continue
            style = "solid" if (dn is None or n in dn) else "dashed"
            if n in fwd or x in fwd:
                # forward edges, and forward values read by the backward pass: downward
                g.edge(str(x.id), str(n.id), style=style)
            else:
                # backward edges point upward: drawn reversed so later gradients sit higher
                g.edge(str(n.id), str(x.id), dir="back", style=style)
    return g


def training_plan_frames(plan: Any, forward: Node | Iterable[Node], labels: Mapping[Node, str] | None = None,
                         size: str | None = None) -> list[Frame]:
    """Frames of a tag plan on a training graph: nothing planned, then one frame per ``plan.steps``
    entry (the op that just got its tag has a red border), caption from the step's action and note."""
    outs = list(plan.outputs)
    labels = labels or {}
    frames = [Frame(draw_training_graph(outs, forward, {}, done=[], labels=labels, size=size),
                    "before planning: no op has a tag")]
    steps = plan.require_trace("training_plan_frames")
    # the planner's notes name other nodes: read them as the lesson's labels (automatic names
    # without a label as their ops), so a caption names a node as the drawing does
    shown = {n.name: labels.get(n) or node_text(n) for n in topo_order(outs)
             if n in labels or n.name == f"{n.op.name}_{n.id}"}
    named = re.compile(r"(?<![\w\[\].])(" + "|".join(
        re.escape(k) for k in sorted(shown, key=len, reverse=True)) + r")(?![\w\[])") \
        if shown else None
    storage: dict[Node, int] = {}
    done: list[Node] = []
    for k, s in enumerate(steps):
        storage[s.node] = s.tag
        done.append(s.node)
        what = {"new": f"a new tag #{s.tag}", "reuse": f"tag #{s.tag} from the box",
                "inplace": f"tag #{s.tag} in place"}.get(s.action, s.action)
        auto = s.node.name == f"{s.node.op.name}_{s.node.id}"
        who = labels.get(s.node) or (s.node.op.name if auto else f"{s.node.name} ({s.node.op.name})")
        cap = f"step {k + 1}/{len(steps)}: {who} gets {what}"
        if s.note and s.action != "reuse":
            note = named.sub(lambda m: shown[m.group(0)], s.note) if named else s.note
            cap += " (" + note + ")"
        frames.append(Frame(draw_training_graph(outs, forward, dict(storage), running=s.node, done=list(done),
                                                labels=labels, size=size), cap))
    return frames


# ------------------------------------------------------------------ the slides' bars and curves (p.29, p.35-36)

def slide29_bars(rows: Sequence[Mapping[str, Any]], mode: str, ax: Any = None, title: str | None = None,
                 figsize: tuple[float, float] = (5.2, 2.8), legend: bool = True) -> Any:
    """p.29 as grouped bars for ``mode`` ("forward" or "training"): ours filled, the slide's value as a
    black tick on each bar (rows of ``models.slide29_table()``)."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    sel = [r for r in rows if r["mode"] == mode]
    strategies = ("naive", "inplace", "co-share", "both")
    width = 0.2
    for j, s in enumerate(strategies):
        xs = [i + (j - 1.5) * width for i in range(len(sel))]
        ax.bar(xs, [r[s] for r in sel], width, color=STRATEGY_COLORS[s], edgecolor="#333333", lw=0.5,
               label=s if s != "inplace" else "in-place")
        ax.plot(xs, [r["slide"][s] for r in sel], "_", color="black", ms=12, mew=2,
                label="slide p.29" if j == 0 else None)
    ax.set_xticks(list(range(len(sel))))
    ax.set_xticklabels([r["model"] for r in sel])
    ax.set_ylabel("memory (GB)")
    if legend:
        ax.legend(fontsize=7, ncol=1, loc="upper left")
    ax.set_title(title or mode, fontsize=10)
    fig.tight_layout()
    return fig


def sharing_memory_curves(rows: Sequence[Mapping[str, Any]], slide: Mapping[int, Sequence[float]] | None = None,
                  xlabel: str = "number of layers", ax: Any = None, title: str | None = None,
                  figsize: tuple[float, float] = (5.2, 3.4)) -> Any:
    """p.35-36 (a): GB against depth or steps on log-log axes, one line per strategy (rows of
    ``models.resnet_curve`` / ``lstm_curve``), the slide's read-off points as open markers."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    xs = [r["x"] for r in rows]
    names = {"none": "no optimization", "inplace": "in-place", "sharing": "sharing"}
    marks = {"none": "o", "inplace": "x", "sharing": "v"}
    for k, (key, text) in enumerate(names.items()):
        ax.plot(xs, [r[key] for r in rows], marker=marks[key], ms=5, color=STRATEGY_COLORS[key], lw=1.5,
                label=f"memlab: {text}")
        if slide:
            sx = sorted(slide)
            ax.plot(sx, [slide[x][k] for x in sx], marker="s", ls=":", mfc="none", ms=8, mew=1.5,
                    color=STRATEGY_COLORS[key], label=f"slide: {text}")
    return _loglog_gb(ax, xlabel, "feature-map memory (GB)", title)


def _loglog_gb(ax: Any, xlabel: str, ylabel: str, title: str | None) -> Any:
    """The slides' p.35-36 axes: GB against layers (or steps), both log 2 with plain numbers."""
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, which="major", lw=0.3, alpha=0.6)
    if title:
        ax.set_title(title, fontsize=10)
    ax.figure.tight_layout()
    return ax.figure



def slide29_figure(rows: Sequence[Mapping[str, Any]], suptitle: str | None = None) -> Any:
    """p.29's two panels (forward only, training) side by side, one legend under both."""
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(1, 2, figsize=(10, 3.4))
    slide29_bars(rows, "forward", ax=axs[0], title="forward only (inference)", legend=False)
    slide29_bars(rows, "training", ax=axs[1], title="training (forward + backward)", legend=False)
    handles, labels = axs[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def runtime_total_curves(totals: Mapping[str, Sequence[Mapping[str, Any]]],
                         slide: Mapping[int, Sequence[float | None]] | None = None,
                         xlabel: str = "number of layers", ax: Any = None,
                         title: str | None = None) -> Any:
    """p.35-36 (b), the runtime total with sharing, GB on log-log axes: one line per assumption
    (``totals``: label -> rows of :func:`memlab.models.conv_workspace.runtime_totals`), the
    feature maps alone dotted, the slide's (b) values (first entry of each ``slide`` tuple) as open
    squares, as in :func:`sharing_memory_curves`."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 3.4))
    first = next(iter(totals.values()))
    xs = [r["x"] for r in first]
    ax.plot(xs, [r["sharing"] for r in first], ":", color=STRATEGY_COLORS["sharing"], lw=1.5,
            label="feature maps (sharing)")
    for k, (label, rows) in enumerate(totals.items()):
        ax.plot(xs, [r["sharing total"] for r in rows], marker="ov^"[k % 3], ms=5, lw=1.5,
                color=("#6a3d9a", "#e31a1c", "#1f78b4")[k % 3], label=label)
    if slide:
        pts = [(x, v[0]) for x, v in sorted(slide.items()) if v[0] is not None]
        ax.plot([p for p, _ in pts], [q for _, q in pts], marker="s", ls=":", mfc="none", ms=8,
                mew=1.5, color=STRATEGY_COLORS["sharing"], label="slide (b): sharing")
    return _loglog_gb(ax, xlabel, "runtime total memory (GB)", title)

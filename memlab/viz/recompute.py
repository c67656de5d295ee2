"""Pictures of recomputation on op graphs (lesson 06): the rewritten graph, its execution stepped,
the memory curves with the sublinear line. Data comes from :mod:`memlab.checkpoint` and
:mod:`memlab.models.studies`; nothing here decides anything."""
from __future__ import annotations

import html
from typing import Sequence

import graphviz
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..checkpoint import forward_nodes_of
from ..checkpoint.rewrite import RECOMPUTE
from ..graph import Node, topo_order
from ..memory.liveness import lifetimes
from ..memory.order import memory_order
from .graphs import digraph, node_text
from .palette import LEAF, color
from .plots import finish
from .stepper import Frame

KEPT, DROPPED, COPY, BACKWARD = "#80b1d3", "#d9d9d9", "#fdb462", "#fb8072"


def draw_recompute(original: Sequence[Node], rewritten: Sequence[Node], keep: set[Node]
                   ) -> graphviz.Digraph:
    """The rewritten training graph (p.32): kept forward values blue, dropped ones grey, recomputed
    copies orange, backward ops red; control dependencies dashed."""
    forward = set(forward_nodes_of(original))
    g = digraph("TB", size="8,8")
    for n in topo_order(rewritten):
        if n.is_leaf:
            g.node(str(n.id), node_text(n), shape="ellipse", fillcolor=LEAF)
            continue
        fill = COPY if n.op is RECOMPUTE else (KEPT if n in keep else DROPPED) if n in forward \
            else BACKWARD
        g.node(str(n.id), node_text(n), shape="box", fillcolor=fill)
        arity = n.attrs.get("arity", len(n.inputs)) if n.op is RECOMPUTE else len(n.inputs)
        for k, x in enumerate(n.inputs):
            g.edge(str(x.id), str(n.id), style="dashed" if k >= arity else "solid",
                   color="#c0392b" if k >= arity else "#555555")
    return g


def execution_frames(outputs: Sequence[Node], title: str) -> list[Frame]:
    """One frame per op of the planner's order: the values alive after it, as bars (orange:
    recomputed copies), with the bytes held."""
    order = memory_order(outputs)
    life = lifetimes(order, outputs)
    frames, peak = [], 0
    for k, n in enumerate(order):
        if not n.op.computes:
            continue
        alive = [v for v, (a, b) in life.items() if a <= k <= b]
        held = sum(v.nbytes for v in alive)
        peak = max(peak, held)
        bars = "".join(
            f'<span title="{html.escape(v.name)}" style="display:inline-block;width:'
            f'{max(4, v.nbytes * 400 // max(1, held))}px;height:18px;margin-right:1px;background:'
            f'{COPY if v.op is RECOMPUTE else color(v.id % 12)}"></span>' for v in alive)
        what = "recompute" if n.op is RECOMPUTE else "run"
        frames.append(Frame(f"<div>{bars}</div>",
                            f"{title}: step {k + 1}/{len(order)}, {what} {n.name}; "
                            f"{len(alive)} values alive, {held:,} bytes (peak so far {peak:,})"))
    return frames


def memory_curves(rows: Sequence[dict], slide: dict, sublinear_slide: dict, xlabel: str,
                  title: str) -> Figure:
    """Slides p.35-36: GB against depth for none / in-place / sharing / sublinear, slide values as
    crosses, on log axes like the slides."""
    fig, ax = plt.subplots(figsize=(6.0, 3.2))
    xs = [r["x"] for r in rows]
    for k, key in enumerate(("none", "inplace", "sharing", "sublinear")):
        if key in rows[0]:
            ax.plot(xs, [r[key] for r in rows], "o-", color=color(k), label=key)
    for k, key in enumerate(("none", "inplace", "sharing")):
        pts = [(x, v[k]) for x, v in slide.items()]
        ax.plot([p for p, _ in pts], [q for _, q in pts], "x", color=color(k), ms=8)
    pts = sorted(sublinear_slide.items())
    ax.plot([p for p, _ in pts], [q for _, q in pts], "x", color=color(3), ms=8,
            label="slide (crosses)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("GB")
    return finish(fig, ax, title, legend=True)

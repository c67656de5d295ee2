"""Pictures of recomputation on op graphs (lesson 06): the rewritten graph, its execution stepped,
the memory curves with the sublinear line. Data comes from :mod:`memlab.checkpoint` and
:mod:`memlab.models.studies`; nothing here decides anything."""
from __future__ import annotations

import html
from typing import Sequence

import graphviz
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..checkpoint import forward_nodes_of
from ..checkpoint.rewrite import RECOMPUTE
from ..graph import Node, topo_order
from ..memory.liveness import lifetimes
from ..memory.order import memory_order, plan_liveness
from .graphs import digraph, node_text
from .palette import LEAF, color
from .plots import finish
from .stepper import Frame

KEPT, DROPPED, COPY, BACKWARD = "#80b1d3", "#d9d9d9", "#fdb462", "#fb8072"
SLIDE_MARK = "s"    #: values read off the slides: open squares, in every lesson


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
            f'<span title="{html.escape(node_text(v))}" style="display:inline-block;width:'
            f'{max(4, v.nbytes * 400 // max(1, held))}px;height:18px;margin-right:1px;background:'
            f'{COPY if v.op is RECOMPUTE else color(v.id % 12)}"></span>' for v in alive)
        what = "recompute" if n.op is RECOMPUTE else "run"
        frames.append(Frame(f"<div>{bars}</div>",
                            f"{title}: step {k + 1}/{len(order)}, {what} {node_text(n)}; "
                            f"{len(alive)} values alive, {held:,} bytes (peak so far {peak:,})"))
    return frames


def recompute_memory_curves(rows: Sequence[dict], slide: dict, sublinear_slide: dict, xlabel: str,
                  title: str, total_slide: dict | None = None,
                  drop_slide: dict | None = None) -> Figure:
    """Slides p.35-36: GB against depth for none / in-place / sharing / sublinear (and "drop bn,
    relu" where the rows have ``"drop cheap"``, its slide values ``drop_slide``), slide values as
    open squares (as in lesson 05), on log axes like the slides: panel (a), feature maps. With ``total_slide`` (and rows
    of a full training step, :func:`~memlab.models.resnet_curve` with ``wrt="params"``), panel (b)
    beside it: the runtime total, sharing and sublinear, with the feature maps dotted."""
    if total_slide is None:
        fig, ax = plt.subplots(figsize=(6.0, 3.2))
        _feature_maps(ax, rows, slide, sublinear_slide, xlabel, drop_slide)
        return finish(fig, ax, title, legend=True)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.0, 3.4))
    _feature_maps(ax, rows, slide, sublinear_slide, xlabel, drop_slide)
    ax.set_title("(a) feature maps", fontsize=10)
    ax.legend(fontsize=7)
    xs = [r["x"] for r in rows]
    for k, key in ((2, "sharing"), (3, "sublinear")):
        bx.plot(xs, [r[f"{key} total"] for r in rows], "o-", color=color(k), label=f"{key} (total)")
        bx.plot(xs, [r[key] for r in rows], ":", color=color(k), label=f"{key} (feature maps)")
        pts = [(x, v[k - 2]) for x, v in sorted(total_slide.items()) if v[k - 2] is not None]
        bx.plot([p for p, _ in pts], [q for _, q in pts], SLIDE_MARK, mfc="none", mew=1.5,
                color=color(k), ms=8)
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xlabel(xlabel)
    bx.set_ylabel("GB")
    work = max(r.get("workspace", 0.0) for r in rows)
    bx.set_title(f"(b) runtime total, workspace {work:.2f} GB (squares: the slide)", fontsize=10)
    bx.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def _feature_maps(ax: Axes, rows: Sequence[dict], slide: dict, sublinear_slide: dict,
                  xlabel: str, drop_slide: dict | None = None) -> None:
    xs = [r["x"] for r in rows]
    for k, key in enumerate(("none", "inplace", "sharing", "sublinear")):
        if key in rows[0]:
            ax.plot(xs, [r[key] for r in rows], "o-", color=color(k), label=key)
    if "drop cheap" in rows[0]:
        ax.plot(xs, [r["drop cheap"] for r in rows], "D-", color=color(4), label="drop bn, relu")
        pts = sorted((drop_slide or {}).items())
        ax.plot([p for p, _ in pts], [q for _, q in pts], SLIDE_MARK, mfc="none", mew=1.5,
                color=color(4), ms=8)
    for k, key in enumerate(("none", "inplace", "sharing")):
        pts = [(x, v[k]) for x, v in slide.items()]
        ax.plot([p for p, _ in pts], [q for _, q in pts], SLIDE_MARK, mfc="none", mew=1.5,
                color=color(k), ms=8)
    pts = sorted(sublinear_slide.items())
    ax.plot([p for p, _ in pts], [q for _, q in pts], SLIDE_MARK, mfc="none", mew=1.5,
            color=color(3), ms=8, label="slide (squares)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("GB")


def overhead_curves(panels: dict[str, tuple[Sequence[dict], str]], slide: dict) -> Figure:
    """Slide p.37 on graphs that run: per panel (title -> (rows of
    :func:`~memlab.models.overhead_curve`, x label)), a training step with recomputation
    relative to store all's, both over the whole step: counted (1 + recomputed / ops of the step)
    and measured (the arena executor's median time; below store all's is timing noise,
    drawn at 1); dashed, the slide's own ratio (sublinear /
    sharing time), averaged."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 3.0), squeeze=False)
    for ax, (name, (rows, xlabel)) in zip(axes[0], panels.items()):
        xs = [r["x"] for r in rows]
        ax.plot(xs, [1 + r["counted extra"] for r in rows], "o-", color=color(0),
                label="counted: 1 + recomputed / ops of the step")
        ax.plot(xs, [1 + max(0.0, r["measured extra"]) for r in rows], "s-", color=color(3),
                label="measured: median time / store all's")
        ratios = [b / a for a, b in slide.get(name.lower(), {}).values() if a is not None]
        if ratios:
            ax.axhline(sum(ratios) / len(ratios), ls="--", color="#555555",
                       label="slide p.37 (sublinear / sharing)")
        ax.axhline(1.0, color="#bbbbbb", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("time relative to store all")
        ax.set_title(name, fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def order_curves(step: Sequence[Node], rewritten: Sequence[Node], method: str) -> Figure:
    """Live bytes along the run of a training step (store all) and of its checkpointed rewrite,
    both in the order ``method`` of :func:`~memlab.memory.memory_order` gives (scheduling slides, part 1:
    the order sets the peak); the title gives both peaks and their ratio."""
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    peaks = []
    for k, (name, outs) in enumerate((("store all", step), ("sqrt(N) checkpoints", rewritten))):
        live = plan_liveness(outs, method).live_bytes() / 1e6
        peaks.append(live.max())
        ax.plot(range(len(live)), live, color=color(2 * k), label=f"{name}: peak {live.max():.2f} MB")
    ax.set_xlabel(f"step of the {method!r} order")
    ax.set_ylabel("MB alive")
    return finish(fig, ax, f"order {method!r}: checkpointing keeps {peaks[1] / peaks[0]:.2f}x "
                  "the peak of store all", legend=True)


def optimum_plot(curve: Sequence[tuple[float, int]], points: dict[str, tuple[float, int]],
                 title: str) -> Figure:
    """The optimum's curve (:func:`~memlab.checkpoint.optimum_curve`: fewest recomputations
    against the budget) as a step line, with each heuristic's (peak, recomputations) as a dot:
    a dot above the line recomputes more than it needs to for its peak. Sample the curve at the
    heuristics' own peaks too, or the step line misses its value there. Dots at the same place
    are spread sideways (their true peak is the same; the label says so)."""
    fig, ax = plt.subplots(figsize=(5.8, 2.8))
    ax.step([b for b, _ in curve], [r for _, r in curve], where="post", color="#333333", lw=2,
            label="optimum (MILP)")
    xs = [b for b, _ in curve] + [p for p, _ in points.values()]
    shift = 0.012 * (max(xs) - min(xs) or 1.0)
    seen: dict[tuple[float, int], int] = {}
    for k, (label, (peak, count)) in enumerate(points.items()):
        j = seen[(peak, count)] = seen.get((peak, count), -1) + 1
        ax.plot([peak + j * shift], [count], "o", color=color(k), ms=7,
                label=f"{label} ({peak:,.0f} B, {count})")
    ax.set_xlabel("peak live bytes")
    ax.set_ylabel("recomputations")
    return finish(fig, ax, title, legend=True)


def recompute_tradeoff_plot(rows: Sequence[dict], title: str) -> Figure:
    """Slide p.33's trade-off measured (rows of :func:`~memlab.models.every_k_curve`): feature-map
    bytes against the segment length K, the recomputed ops on a second axis, sqrt(N) marked; the
    slide's O(K) + O(N/K) as ``c·(K + N/K)`` dashed, ``c`` chosen to meet the measured curve at
    the K nearest sqrt(N) (the shape is the slide's, the scale is not)."""
    import math
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ks = [r["K"] for r in rows]
    n = rows[0]["n"]
    mb = [r["feature maps"] / 1e6 for r in rows]
    ax.plot(ks, mb, "o-", color=color(2), label="feature maps (planned)")
    near = min(range(len(ks)), key=lambda i: abs(ks[i] - math.sqrt(n)))
    c = mb[near] / (ks[near] + n / ks[near])
    fine = [k / 4 for k in range(4, 4 * max(ks) + 1)]
    ax.plot(fine, [c * (k + n / k) for k in fine], "--", color="#555555",
            label="c·(K + N/K): the slide's O(K) + O(N/K)")
    ax.axvline(math.sqrt(n), color="#c0392b", lw=1, ls=":", label=f"K = sqrt(N) = {math.sqrt(n):.1f}")
    best = min(range(len(ks)), key=lambda i: mb[i])
    ax.plot([ks[best]], [mb[best]], "*", color="#c0392b", ms=12, label=f"least: K = {ks[best]}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"segment length K (N = {n} forward ops)")
    ax.set_ylabel("MB of feature maps")
    ax.set_ylim(0, max(mb) * 1.15)
    bx = ax.twinx()
    bx.plot(ks, [r["recomputed"] for r in rows], "s:", color=color(3), ms=4)
    bx.set_ylabel("ops recomputed (squares)", color=color(3))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig

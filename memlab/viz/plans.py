"""Pictures of memory pools and memory plans (lessons 02 and 03, lecture 7 p.14-22).

Drawing only: what is drawn (which tag a node holds, the reference counts,
the box of free tags, the pool's blocks) comes from the algorithms' own
traces (``plan.steps``, ``pool.events``); nothing here decides anything.

* :func:`draw_plan_state` — a graph in the style of slide p.22: each node
  box filled with its tag's colour, its reference count in a cell next to
  it, solid edges into completed ops and dashed edges into pending ones,
  and the box of free tags as coloured squares;
* :func:`planning_frames` — the stepper frames of a tag plan: the initial
  state, then one frame per :class:`~memlab.memory.planner.PlanStep`;
* :func:`pool_blocks` / :func:`draw_pool` — the blocks of a
  :class:`~memlab.memory.pool.MemoryPool` after a prefix of its events, as a
  row of rectangles (in use: filled; cached: outlined);
* :func:`pool_timeline` — bytes in use and reserved over a pool's events;
* :func:`draw_layout` — a plan's memory layout: one rectangle per value,
  its lifetime across, its bytes up (offset to offset + size);
* :func:`bytes_bars` — horizontal bars comparing strategies, a lower bound
  drawn as a dashed line.

Same colour = same memory, from the one palette (:mod:`memlab.viz.palette`).
"""
from __future__ import annotations

import html as _html
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import graphviz

from ..graph import Node, as_list, topo_order
from .graphs import digraph
from .palette import LEAF, NEUTRAL, color
from .stepper import Frame

__all__ = ["draw_plan_state", "planning_frames", "PoolBlock", "pool_blocks", "draw_pool", "pool_timeline",
           "draw_layout", "bytes_bars", "bytes_against", "RUNNING"]

#: border of the op running now
RUNNING = "#c0392b"


def _esc(s: Any) -> str:
    return _html.escape(str(s), quote=True)


def _node_text(n: Node) -> str:
    if n.is_leaf:
        return n.name
    if n.name == f"{n.op.name}_{n.id}":
        return n.op.name
    args = ", ".join(x.name for x in n.inputs)
    return f"{n.name} = {n.op.name}({args})"


def draw_plan_state(outputs: Node | Iterable[Node], storage: Mapping[Node, int] | None = None,
                    refcount: Mapping[Node, int] | None = None,
                    box: Sequence[int] | Sequence[tuple[int, int]] | None = None,
                    running: Node | None = None, done: Iterable[Node] | None = None,
                    order: Sequence[Node] | None = None, title: str | None = None,
                    size: str | None = None, rankdir: str = "TB", show_box: bool = True) -> graphviz.Digraph:
    """The graph of ``outputs`` in slide p.22's style.

    ``storage`` maps nodes to tags (fill colour and ``tag k``); ``refcount``
    gives the number written in the cell right of each node (nodes missing
    from it show 0; pass ``None`` to show no counts); ``box`` lists the free
    tags (ints or ``(tag, bytes)`` pairs) drawn as coloured squares;
    ``running`` gets a thick red border; edges into ``done`` ops are solid,
    the others dashed ("operation completed / not completed"). With
    ``done=None`` every edge is solid.
    """
    outs = as_list(outputs)
    order = list(order) if order is not None else topo_order(outs)
    storage = storage or {}
    dn = None if done is None else set(done)
    g = digraph(rankdir, title, size, graph={"nodesep": "0.3", "newrank": "true"},
                node={"shape": "plaintext", "margin": "0", "style": ""})
    for n in order:
        sid = storage.get(n)
        fill = color(sid) if sid is not None else (LEAF if n.is_leaf else NEUTRAL)
        text = _esc(_node_text(n))
        if sid is not None:
            text += f'<BR/><FONT POINT-SIZE="9">tag {sid}</FONT>'
        border = RUNNING if n is running else "#333333"
        width = "3" if n is running else "1"
        cells = f'<TD BGCOLOR="{fill}" COLOR="{border}" BORDER="{width}" STYLE="{"rounded" if n.is_leaf else ""}">{text}</TD>'
        if refcount is not None:
            cells += (f'<TD BGCOLOR="#ffffff" COLOR="#777777" BORDER="1" WIDTH="18">'
                      f'<FONT POINT-SIZE="10" COLOR="#555555">{refcount.get(n, 0)}</FONT></TD>')
        g.node(str(n.id), f'<<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="4"><TR>{cells}</TR></TABLE>>')
        for x in n.inputs:
            style = "solid" if (dn is None or n in dn) else "dashed"
            g.edge(str(x.id), str(n.id), style=style)
    if show_box and box is not None:
        tags = [b[0] if isinstance(b, tuple) else int(b) for b in box]
        with g.subgraph(name="cluster_box") as c:
            c.attr(label="box of free tags", fontsize="10", style="rounded", color="#777777", fontname="Helvetica")
            if tags:
                for t in tags:
                    c.node(f"box_{t}", f"{t}", shape="square", style="filled", fillcolor=color(t),
                           width="0.3", height="0.3", fixedsize="true", fontsize="10", color="#333333")
            else:
                c.node("box_empty", "empty", shape="plaintext", fontsize="9", fontcolor="#777777")
    return g


def planning_frames(plan: Any, outputs: Node | Iterable[Node] | None = None,
                    captions: Sequence[str] | None = None, size: str | None = None,
                    show_box: bool = True) -> list[Frame]:
    """Frames of the tag planner's trace: the initial state, then one per step of ``plan.steps``.

    Each frame draws the tags given so far, the reference counts after that
    step (``plan.initial_refcount`` first), the box of free tags and the op
    that just ran. ``captions`` (one per frame) replace the default captions,
    which state each step's action and note.
    """
    outs = as_list(outputs) if outputs is not None else list(plan.outputs)
    steps = list(plan.require_trace("planning_frames"))
    if captions is not None and len(captions) != len(steps) + 1:
        raise ValueError(f"need {len(steps) + 1} captions (initial state + one per step), got {len(captions)}")
    frames = [Frame(draw_plan_state(outs, {}, plan.initial_refcount, (), None, (), plan.order, size=size,
                                    show_box=show_box),
                    captions[0] if captions else "initial state: reference counts = number of consumers, "
                                                 "no tag given, the box of free tags is empty")]
    storage: dict[Node, int] = {}
    done: list[Node] = []
    for k, s in enumerate(steps):
        storage[s.node] = s.tag
        done.append(s.node)
        if captions:
            cap = captions[k + 1]
        else:
            what = {"new": f"new tag {s.tag}", "reuse": f"tag {s.tag} from the box",
                    "inplace": f"tag {s.tag} in place"}.get(s.action, s.action)
            rel = f"; released tag(s) {', '.join(map(str, s.released))}" if s.released else ""
            cap = f"step {k + 1}: {s.node.name} gets {what}{rel}" + (f" ({s.note})" if s.note else "")
        frames.append(Frame(draw_plan_state(outs, dict(storage), s.refcount, s.box, s.node, list(done),
                                            plan.order, size=size, show_box=show_box), cap))
    return frames


# --------------------------------------------------------------------- pools

@dataclass
class PoolBlock:
    """One block of a pool at some point of its trace: id, size, owner, whether handed out."""

    id: int
    size: int
    owner: str
    in_use: bool


def pool_blocks(events: Sequence[Any], upto: int | None = None) -> list[PoolBlock]:
    """The pool's blocks after the first ``upto`` events (all by default), in creation order.

    Reads the trace (``pool.events``) as it is: an "alloc" hands a block out
    (creating it the first time it appears), a "free" caches it, a "release"
    gives it back.
    """
    blocks: dict[int, PoolBlock] = {}
    for ev in list(events)[: len(events) if upto is None else upto]:
        if ev.kind == "alloc":
            blocks[ev.block] = PoolBlock(ev.block, ev.size, ev.owner, True)
        elif ev.kind == "free":
            b = blocks[ev.block]
            b.in_use = False
        elif ev.kind == "release":
            blocks.pop(ev.block, None)
    return [blocks[i] for i in sorted(blocks)]


def draw_pool(blocks: Sequence[PoolBlock], title: str = "memory pool", width: int = 360,
              scale: str = "equal", labels: Mapping[int, str] | None = None) -> str:
    """SVG of a pool's blocks in a row: in use = filled with the block's colour and its owner's
    name, cached = outlined with a dashed border ("free"). ``scale="bytes"`` makes widths
    proportional to block sizes; ``labels`` overrides the text of a block."""
    h, pad, top = 34, 4, 18
    n = max(len(blocks), 1)
    total = sum(b.size for b in blocks) or 1
    parts = [f'<text x="0" y="12" font-family="Helvetica" font-size="12" font-weight="bold">{_esc(title)}</text>']
    x = 0.0
    avail = width - pad * (n - 1)
    for b in blocks:
        w = avail / n if scale == "equal" else max(avail * b.size / total, 26)
        fill = color(b.id) if b.in_use else "#ffffff"
        dash = "" if b.in_use else ' stroke-dasharray="4,3"'
        stroke = "#333333" if b.in_use else color(b.id)
        text = (labels or {}).get(b.id, b.owner if b.in_use else "free")
        parts.append(f'<rect x="{x:.1f}" y="{top}" width="{w:.1f}" height="{h}" fill="{fill}" stroke="{stroke}" '
                     f'stroke-width="2"{dash} rx="3"/>')
        parts.append(f'<text x="{x + w / 2:.1f}" y="{top + 14}" text-anchor="middle" font-family="Helvetica" '
                     f'font-size="10">{_esc(text)}</text>')
        parts.append(f'<text x="{x + w / 2:.1f}" y="{top + 27}" text-anchor="middle" font-family="Helvetica" '
                     f'font-size="9" fill="#555555">#{b.id} · {b.size} B</text>')
        x += w + pad
    if not blocks:
        parts.append(f'<text x="0" y="{top + 20}" font-family="Helvetica" font-size="10" fill="#777777">'
                     f'(no blocks yet)</text>')
    wtot = max(int(x), width)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{wtot}" height="{top + h + 2}" '
            f'viewBox="0 0 {wtot} {top + h + 2}">' + "".join(parts) + "</svg>")


def pool_timeline(events: Sequence[Any], naive: Sequence[int] | None = None, ax: Any = None,
                  title: str | None = None, figsize: tuple[float, float] = (6.0, 2.8)) -> Any:
    """Bytes in use and reserved after each event of a pool (step plots, peaks marked);
    ``naive`` (bytes held after each alloc of the naive executor) is drawn against the same
    alloc events for comparison."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    xs = list(range(1, len(events) + 1))
    used = [e.bytes_in_use for e in events]
    res = [e.bytes_reserved for e in events]
    ax.step(xs, res, where="post", lw=2, color="#80b1d3", label="reserved (in use + cached)")
    ax.step(xs, used, where="post", lw=1.5, color="#fb8072", label="in use")
    tops = [max(res, default=0)]
    alloc_x = [x for x, e in zip(xs, events) if e.kind == "alloc"]
    if naive is not None:
        nv = list(naive)[: len(alloc_x)]
        ax.step(alloc_x, nv, where="post", lw=1.5, color="#999999", ls="--", label="naive (never recycles)")
        tops.append(max(nv, default=0))
    if res:
        peak = max(res)
        px = xs[res.index(peak)]
        ax.plot([px], [peak], "o", color="#c0392b")
        ax.annotate(f"peak reserved {peak:,}", (px, peak), textcoords="offset points", xytext=(4, 4),
                    fontsize=8, color="#c0392b")
    ax.set_ylim(0, max(tops) * 1.2 or 1)
    ax.set_xlabel("pool event (alloc or free)")
    ax.set_ylabel("bytes")
    ax.legend(fontsize=7, loc="upper left")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------- plans

def draw_layout(plan: Any, ax: Any = None, title: str | None = None, lower_bound: int | None = None,
                names: bool = True, figsize: tuple[float, float] = (6.0, 3.0)) -> Any:
    """A plan's memory layout: each computed value a rectangle from the step that computes it to
    the step of its last use (x) and from its offset to offset + bytes (y).

    Tag plans colour each value by its tag (``plan.storage``); offset plans by
    in-place cluster (``plan.clusters``). ``lower_bound`` draws the live-bytes
    bound as a dashed line; the arena's size (``plan.total_bytes``) is the
    solid line on top.
    """
    import matplotlib.pyplot as plt
    from ..memory.liveness import lifetimes

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    fig = ax.figure
    order = list(plan.order)
    life = lifetimes(order, plan.outputs)
    offset = plan.offset
    if getattr(plan, "storage", None) is not None:
        fill = {n: color(s) for n, s in plan.storage.items()}
    else:
        fill = {n: color(k) for k, c in enumerate(getattr(plan, "clusters", [])) for n in c}
    for n, (a, b) in life.items():
        o = offset[n]
        ax.add_patch(plt.Rectangle((a - 0.45, o), b - a + 0.9, n.nbytes, facecolor=fill.get(n, "#dddddd"),
                                   edgecolor="#333333", lw=0.6))
        if names and n.nbytes >= 0.04 * max(plan.total_bytes, 1):
            ax.text((a + b) / 2, o + n.nbytes / 2, n.name, ha="center", va="center", fontsize=7, clip_on=True)
    total = plan.total_bytes
    ax.axhline(total, color="#333333", lw=1)
    ax.annotate(f"arena {total:,} B", (len(order) - 0.5, total), textcoords="offset points", xytext=(-4, 3),
                ha="right", fontsize=8)
    if lower_bound is not None:
        ax.axhline(lower_bound, color="#c0392b", lw=1, ls="--")
        ax.annotate(f"live-bytes lower bound {lower_bound:,} B", (-0.5, lower_bound), textcoords="offset points",
                    xytext=(4, -10), fontsize=8, color="#c0392b")
    ax.set_xlim(-0.7, len(order) + 0.3)
    ax.set_ylim(0, max(total, lower_bound or 0) * 1.12 or 1)
    ax.set_xlabel("step of the execution order")
    ax.set_ylabel("byte offset")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def bytes_bars(values: Mapping[str, float], lower_bound: float | None = None, ax: Any = None,
               title: str | None = None, unit: str = "bytes",
               figsize: tuple[float, float] = (6.0, 2.4)) -> Any:
    """Horizontal bars, one per strategy (top to bottom in the mapping's order), the value written
    at the end of each bar; ``lower_bound`` is a dashed vertical line."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(figsize[0], max(figsize[1], 0.45 * len(values) + 0.8)))
    fig = ax.figure
    names = list(values)
    vals = [values[k] for k in names]
    ys = list(range(len(names)))[::-1]
    ax.barh(ys, vals, color=[color(i) for i in range(len(names))], edgecolor="#333333", height=0.6)
    for y, v in zip(ys, vals):
        ax.text(v, y, f" {v:,.0f}", va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels(names, fontsize=9)
    right = max(vals + [lower_bound or 0]) * 1.25 or 1
    if lower_bound is not None:
        ax.axvline(lower_bound, color="#c0392b", ls="--", lw=1)
        ax.text(lower_bound, max(ys) + 0.45, "lower bound", color="#c0392b", fontsize=8, ha="center")
    ax.set_xlim(0, right)
    ax.set_ylim(-0.6, max(ys) + 0.8)
    ax.set_xlabel(unit)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig



def bytes_against(xs: Sequence[float], series: Mapping[str, Sequence[float]], mark: float | None = None,
                  floor: float | None = None, floor_label: str = "", xlabel: str = "",
                  title: str | None = None, figsize: tuple[float, float] = (5.6, 2.8)) -> Any:
    """Bytes against a knob (batch, depth): one line with markers per series, in MB from 0, so a
    line that does not start at 0 shows its fixed part; ``mark`` is the knob's current value
    (a dotted vertical line), ``floor`` a dashed horizontal line (a part that does not grow)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize)
    for k, (name, ys) in enumerate(series.items()):
        ax.plot(xs, [y / 1e6 for y in ys], "o-", color=color(k), label=name, ms=4)
    if floor is not None:
        ax.axhline(floor / 1e6, color="#555555", ls="--", lw=1, label=floor_label or None)
    if mark is not None:
        ax.axvline(mark, color="#c0392b", ls=":", lw=1)
    ax.set_xlim(0, max(xs) * 1.05)
    ax.set_ylim(0, None)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("MB")
    ax.legend(fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig

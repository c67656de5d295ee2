"""Pictures for lesson 10 (OpenNMT's memory sharing, OpenNMT's notes): the unrolled model, its loss,
which replica uses which storage, and memory against target length.

Same colour = same storage, as everywhere in memlab.
"""
from __future__ import annotations

import html
from typing import Mapping, Sequence

import graphviz
import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
import numpy as np

from ..graph import Node
from ..memory.planner import TagPlan
from ..models.encoder_decoder import Seq2Seq
from .graphs import digraph
from .palette import PALETTE, color
from .plots import finish
from .stepper import Frame

MB = 2 ** 20
_FILL = {"encoder": "#a6cee3", "bridge": "#fdbf6f", "decoder": "#b3de69", "generator": "#fccde5"}


def module_diagram(model: Seq2Seq, show: int = 3) -> graphviz.Digraph:
    """The unrolled model, one box per replica (module at a timestep), first ``show`` and last
    replica of each recurrence drawn."""
    g = digraph("LR", size="7.5,2.2", node={"shape": "box", "style": "rounded,filled"})

    def steps(n: int) -> list[int | None]:
        return list(range(n)) if n <= show + 1 else [*range(show), None, n - 1]

    prev = None
    for t in steps(model.src_len):
        name = f"enc{t}"
        g.node(name, "…" if t is None else f"encoder\nt={t}", fillcolor=_FILL["encoder"])
        if prev:
            g.edge(prev, name, label="h, c")
        prev = name
    g.node("bridge", "bridge", fillcolor=_FILL["bridge"])
    g.edge(prev, "bridge")
    prev = "bridge"
    for t in steps(model.tgt_len):
        name = f"dec{t}"
        g.node(name, "…" if t is None else f"decoder\nt={t}", fillcolor=_FILL["decoder"])
        g.edge(prev, name, label="h, c")
        if t is not None:
            g.node(f"gen{t}", f"generator\nt={t}", fillcolor=_FILL["generator"])
            g.edge(name, f"gen{t}")
        prev = name
    return g


def loss_curve(losses: Sequence[float], window: int = 20, title: str | None = None) -> Figure:
    """Training loss per step, with its running mean over ``window`` steps."""
    fig, ax = plt.subplots(figsize=(5.5, 2.4))
    ax.plot(losses, lw=0.8, color="#bbbbbb", label="loss per batch")
    w = max(1, min(window, len(losses)))
    ax.plot(range(w - 1, len(losses)), np.convolve(losses, np.ones(w) / w, "valid"), lw=2,
            color="#1f78b4", label=f"mean of {w}")
    ax.set_xlabel("SGD step")
    ax.set_ylabel("cross-entropy")
    ax.set_ylim(0, None)
    return finish(fig, ax, title, legend=True)


def table(rows: Sequence[Mapping], columns: Sequence[str], unit: float = 1.0,
          digits: int = 2, counts: Sequence[str] = ("nodes",)) -> str:
    """An HTML table of ``rows`` (dicts); numbers divided by ``unit`` and rounded, except the
    columns named in ``counts``."""
    def cell(v: object, c: str) -> str:
        if c in counts:
            return f"{v:,}"
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            return f"{v / unit:,.{digits}f}" if unit != 1 else f"{v:,}"
        return html.escape(str(v))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(r.get(c, ''), c)}</td>" for c in columns)
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def replica_grid(plan: TagPlan, module: str = "decoder", backward: bool = False,
                 title: str | None = None) -> Figure:
    """Which storage each value of ``module`` uses, timestep by timestep: one row per role
    (the same node in every replica), one column per timestep; same colour = same storage."""
    cells: dict[tuple, dict[int, int]] = {}
    ops: dict[tuple, str] = {}
    for n in plan.order:
        s = n.scope
        if n in plan.storage and s and s.module == module and s.backward == backward \
                and s.step is not None:
            cells.setdefault(s.role, {})[s.step] = plan.storage[n]
            ops.setdefault(s.role, n.op.name)
    roles = sorted(cells, key=lambda r: (len(r), r))
    steps = sorted({t for row in cells.values() for t in row})
    tags = sorted({tag for row in cells.values() for tag in row.values()})
    index = {tag: k for k, tag in enumerate(tags)}
    grid = np.full((len(roles), len(steps)), np.nan)
    for i, r in enumerate(roles):
        for j, t in enumerate(steps):
            if t in cells[r]:
                grid[i, j] = index[cells[r][t]]
    colours = [color(t) for t in tags] or [PALETTE[0]]
    fig, ax = plt.subplots(figsize=(min(7.0, 1.2 + 0.35 * len(steps)),
                                    min(6.0, 0.8 + 0.14 * len(roles))))
    ax.imshow(grid, cmap=ListedColormap(colours), vmin=-0.5, vmax=len(colours) - 0.5,
              aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(steps)))
    ax.set_xticklabels(steps, fontsize=7)
    ax.set_yticks(range(len(roles)))
    ax.set_yticklabels([ops[r] for r in roles], fontsize=6 if len(roles) > 30 else 7)
    ax.set_xlabel("timestep")
    ax.set_ylabel(f"{len(roles)} {'backward' if backward else 'forward'} values per replica")
    return finish(fig, ax, title or f"{module}: {len(tags)} storages")


_LINE_STYLES = [("#555555", "o", "-"), ("#1f77b4", "s", "--"), ("#ff7f0e", "^", "-."),
                ("#9467bd", "v", ":"), ("#d62728", "D", "-"), ("#2ca02c", "P", "--"),
                ("#8c564b", "X", "-."), ("#e377c2", "*", ":"), ("#17becf", "h", "-")]


def technique_panels(lengths: Sequence[int], curves: Mapping[str, Sequence[int]],
                     ladder: Sequence[str], others: Sequence[str],
                     title: str | None = None) -> Figure:
    """Three panels, each line with its own colour, marker and dash: (a) the ``ladder`` of
    techniques (each added to the ones before) against target length, log scale; (b) what each
    step of the ladder saves over the one before it at the longest target, so that steps whose
    lines lie on top of each other in (a) are told apart; (c) the last step of the ladder beside
    ``others`` (the general planners), linear scale."""
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(12.0, 3.6),
                                  gridspec_kw={"width_ratios": [1.25, 1.0, 1.0]})
    style = {name: _LINE_STYLES[k % len(_LINE_STYLES)] for k, name in enumerate([*ladder, *others])}
    for ax, names in ((a, ladder), (c, [ladder[-1], *others])):
        for name in names:
            col, mk, ls = style[name]
            ax.plot(lengths, [v / MB for v in curves[name]], color=col, marker=mk, ms=4, ls=ls,
                    lw=1.6, label=name)
        ax.set_xlabel("target length (decoder timesteps)")
        ax.set_ylabel("MB")
        ax.legend(fontsize=7)
    a.set_yscale("log")
    a.set_title("(a) the notes' techniques, one added at a time", fontsize=9)
    saved = [(curves[prev][-1] - curves[name][-1]) / MB for prev, name in zip(ladder, ladder[1:])]
    b.barh(range(len(saved)), saved, color=[style[n][0] for n in ladder[1:]], edgecolor="#333333")
    b.set_yticks(range(len(saved)))
    b.set_yticklabels(ladder[1:], fontsize=7)
    b.invert_yaxis()
    b.set_xscale("log")
    b.set_xlabel(f"MB saved over the step before, target {lengths[-1]}")
    for k, v in enumerate(saved):
        b.annotate(f"{v:.2f}", (v, k), fontsize=7, xytext=(3, 0), textcoords="offset points",
                   va="center")
    b.set_title("(b) what each step saves", fontsize=9)
    c.set_title("(c) against the general planners", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def technique_frames(plans: Mapping[str, TagPlan], given: int, module: str = "decoder"
                     ) -> list[Frame]:
    """One frame per technique: the module's storages by timestep and the step's memory."""
    return [Frame(replica_grid(p, module, title=f"{name}: {module} forward values in "
                               f"{len({p.storage[n] for n in _values(p, module)})} storages"),
                  f"{name}: {(given + p.total_bytes) / MB:.2f} MB for the training step")
            for name, p in plans.items()]


def _values(plan: TagPlan, module: str) -> list[Node]:
    return [n for n in plan.storage if n.scope and n.scope.module == module
            and not n.scope.backward and n.scope.step is not None]

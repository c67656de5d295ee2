"""Pictures of lesson 15 (memory in transformers): a layer's activation terms beside Korthikanti
et al.'s, memory and FLOPs of recomputation against sequence length, plain against tiled attention,
and the paged KV cache's block tables step by step. Numbers come from :mod:`memlab.models.
activations`, :mod:`memlab.graph.ops.flash` and :mod:`memlab.memory.kvcache`."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..memory import kvcache
from .palette import color
from .plots import finish
from .render import to_svg
from .stepper import Frame

MB = 2 ** 20


def term_bars(ours: Mapping[str, float], paper: Mapping[str, float], title: str) -> Figure:
    """Each term of a layer's activations: memlab's liveness (bar) beside the paper's (tick)."""
    terms = [t for t in paper]
    fig, ax = plt.subplots(figsize=(6.4, 0.24 * len(terms) + 1.0))
    ys = range(len(terms))
    ax.barh(ys, [ours.get(t, 0) / MB for t in terms], color=color(4), edgecolor="#333333",
            label="memlab's liveness")
    ax.plot([paper[t] / MB for t in terms], ys, "|", color="#c0392b", markersize=12, mew=2,
            label="Korthikanti et al.")
    ax.set_yticks(list(ys))
    ax.set_yticklabels(terms, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("MiB")
    return finish(fig, ax, title, legend=True)


def lines(xs: Sequence[float], series: Mapping[str, Sequence[float]], xlabel: str, ylabel: str,
          title: str, logy: bool = False, mark: float | None = None) -> Figure:
    """Curves against ``xs`` (log scale on x), one per series, an optional vertical line."""
    fig, ax = plt.subplots(figsize=(5.8, 2.8))
    for k, (name, ys) in enumerate(series.items()):
        ax.plot(xs, ys, "o-", color=color(k), label=name, lw=2, mec="#333333")
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    if mark is not None:
        ax.axvline(mark, color="#c0392b", ls="--", lw=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return finish(fig, ax, title, legend=True)


def block_table_figure(alloc: kvcache.PagedAllocator, running: Sequence[kvcache.Request],
                       caption: str = "") -> Figure:
    """The paged allocator's blocks as a grid, coloured by the request holding them (white: free),
    each block's filled tokens hatched in proportion."""
    n = alloc.num_blocks
    cols = min(n, 16)
    rows = -(-n // cols)
    fig, ax = plt.subplots(figsize=(0.36 * cols + 0.4, 0.36 * rows + 0.5))
    owner: dict[int, tuple[int, float]] = {}
    for rid, table in alloc.tables.items():
        length = alloc.lengths[rid]
        for k, block in enumerate(table):
            fill = min(alloc.block_size, length - k * alloc.block_size) / alloc.block_size
            owner[block] = (rid, fill)
    for b in range(n):
        r, c = divmod(b, cols)
        rid, fill = owner.get(b, (None, 0.0))
        ax.add_patch(plt.Rectangle((c, -r - 1), 1, 1, facecolor=color(rid), edgecolor="#999999"))
        if rid is not None:
            ax.add_patch(plt.Rectangle((c, -r - 1), fill, 0.25, facecolor="#333333"))
            ax.text(c + 0.5, -r - 0.45, str(rid), ha="center", va="center", fontsize=7)
    ax.set_xlim(0, cols)
    ax.set_ylim(-rows, 0)
    ax.set_aspect("equal")
    ax.axis("off")
    return finish(fig, ax, caption or None)


def kv_frames(stream: Sequence[kvcache.Request], num_blocks: int, block_size: int,
              steps: int = 30) -> list[Frame]:
    """Frames of :func:`~memlab.memory.kvcache.serve` with a paged allocator: after each of the
    first ``steps`` steps, the block tables (colour = request, dark bar = tokens in the block)."""
    alloc = kvcache.PagedAllocator(num_blocks, block_size)
    frames: list[Frame] = []

    def snap(step: int, running: list[Any]) -> None:
        if step < steps:
            used = num_blocks - len(alloc.free_list)
            frames.append(Frame(to_svg(block_table_figure(alloc, running)),
                                f"step {step + 1}: {len(running)} requests running, {used} of "
                                f"{num_blocks} blocks in tables"))

    kvcache.serve(list(stream), alloc, on_step=snap)
    return frames


def loss_curve(losses: Sequence[float], title: str) -> Figure:
    """A training loss per step (no peak label: a loss is not memory)."""
    fig, ax = plt.subplots(figsize=(5.8, 2.6))
    ax.plot(range(1, len(losses) + 1), losses, color=color(0), lw=1.5)
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig

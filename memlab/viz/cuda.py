"""Pictures of GPU kernels for lesson 14: threads and blocks over an array, the tiles of the
shared-memory matrix product stepped one by one, a block's halving tree reduction, and
allocations per memory scheme.

Only draws: the tile schedule comes from :func:`memlab.cuda.matmul.tile_schedule` and the
allocation counts from the executors' run statistics, both passed in.
"""
from __future__ import annotations

from typing import Any, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .palette import PALETTE, color
from .stepper import Frame


def thread_map(n: int, threads: int) -> Figure:
    """``n`` array elements, each under the thread that owns it: ``i = blockIdx.x * blockDim.x +
    threadIdx.x``; one colour per block; threads past the end (idle, ``i >= n``) hatched. The
    figure is closed before it is returned, so a notebook shows it once, as the cell's value."""
    blocks = max(1, -(-n // threads))
    fig, ax = plt.subplots(figsize=(min(11, 0.42 * blocks * threads + 1), 1.9))
    for i in range(blocks * threads):
        b, t = divmod(i, threads)
        idle = i >= n
        ax.add_patch(Rectangle((i, 0), 1, 1, facecolor="white" if idle else color(b),
                               edgecolor="#555", hatch="//" if idle else None))
        ax.text(i + 0.5, 0.5, str(t), ha="center", va="center", fontsize=8)
        if not idle:
            ax.text(i + 0.5, -0.45, str(i), ha="center", va="center", fontsize=7, color="#333")
    for b in range(blocks):
        ax.text(b * threads + threads / 2, 1.35, f"block {b}", ha="center", fontsize=9)
    ax.text(-0.3, 0.5, "threadIdx.x", ha="right", va="center", fontsize=8)
    ax.text(-0.3, -0.45, "element i", ha="right", va="center", fontsize=8)
    ax.set_xlim(-0.2, blocks * threads + 0.2)
    ax.set_ylim(-0.9, 1.7)
    ax.axis("off")
    ax.set_title(f"{n} elements, blocks of {threads} threads: grid of {blocks} blocks", fontsize=10)
    plt.close(fig)   # shown once, as the cell's value, not again by the inline backend
    return fig


def reduction_tree(rounds: Sequence[Any], title: str | None = None) -> Figure:
    """A block's tree reduction, one row per round (from :func:`memlab.cuda.tree_rounds`): the
    shared array's values, the threads still working in colour, and an arrow from ``s[t + step]``
    into ``s[t]`` for each addition; ``s[0]`` of the last row is the total. Closed before it is
    returned, so a notebook shows it once."""
    threads = len(rounds[0])
    fig, ax = plt.subplots(figsize=(min(11, 0.8 * threads + 2.2), 0.75 * len(rounds) + 0.6))
    for r, row in enumerate(rounds):
        y = -1.4 * r
        working = threads if r == 0 else threads >> r        # threads that wrote in this round
        for t, v in enumerate(row):
            live = t < working
            ax.add_patch(Rectangle((t, y), 1, 0.8, facecolor=color(r) if live else "white",
                                   edgecolor="#555" if live else "#bbb", lw=0.8))
            ax.text(t + 0.5, y + 0.4, f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color="#000" if live else "#aaa")
        label = "partial sums" if r == 0 else f"step {threads >> r}"
        ax.text(-0.2, y + 0.4, label, ha="right", va="center", fontsize=8)
        if r:
            step = threads >> r
            for t in range(step):
                for src in (t, t + step):
                    ax.annotate("", xy=(t + 0.5, y + 0.8), xytext=(src + 0.5, y + 1.4),
                                arrowprops={"arrowstyle": "->", "lw": 0.6, "color": "#666"})
    for t in range(threads):
        ax.text(t + 0.5, 1.0, f"t={t}", ha="center", fontsize=7, color="#333")
    ax.set_xlim(-2.2, threads + 0.2)
    ax.set_ylim(-1.4 * (len(rounds) - 1) - 0.2, 1.4)
    ax.axis("off")
    ax.set_title(title or f"one block of {threads} threads: {len(rounds) - 1} halving rounds, "
                          f"total {rounds[-1][0]:.4f} in s[0]", fontsize=10)
    plt.close(fig)
    return fig


def _matrix(ax: Axes, name: str, rows: int, cols: int, x0: float, y0: float,
            box: tuple[tuple[int, int], tuple[int, int]] | None, fill: str, done: set | None = None,
            tile: int = 1) -> None:
    """A ``rows x cols`` grid at (x0, y0) (top left), ``box`` = ((r0, r1), (c0, c1)) highlighted."""
    for r in range(rows):
        for c in range(cols):
            fc = "white"
            if done is not None and (r // tile, c // tile) in done:
                fc = "#dddddd"
            if box and box[0][0] <= r < box[0][1] and box[1][0] <= c < box[1][1]:
                fc = fill
            ax.add_patch(Rectangle((x0 + c, y0 - r - 1), 1, 1, facecolor=fc, edgecolor="#999", lw=0.5))
    ax.text(x0 + cols / 2, y0 + 0.4, name, ha="center", fontsize=10)


def tile_frames(n: int, inner: int, m: int, tile: int, schedule: Sequence[dict[str, Any]]) -> list[Frame]:
    """One frame per step of ``schedule`` (:func:`~memlab.cuda.matmul.tile_schedule`): the block's
    tile of ``C`` (orange), the tiles of ``A`` and ``B`` it loads into shared memory at this
    step (blue, green); finished tiles of ``C`` are grey."""
    frames, done = [], set()
    for i, s in enumerate(schedule):
        fig, ax = plt.subplots(figsize=(6.4, 2.6))
        gap = 2
        _matrix(ax, f"A ({n}x{inner})", n, inner, 0, 0, (s["rows"], s["inner"]), PALETTE[4])
        _matrix(ax, f"B ({inner}x{m})", inner, m, inner + gap, 0, (s["inner"], s["cols"]), PALETTE[5])
        _matrix(ax, f"C = A @ B ({n}x{m})", n, m, inner + m + 2 * gap, 0, (s["rows"], s["cols"]),
                PALETTE[1], done, tile)
        ax.set_xlim(-0.5, inner + 2 * m + 2 * gap + 0.5)
        ax.set_ylim(-max(n, inner) - 0.5, 1.2)
        ax.set_aspect("equal")
        ax.axis("off")
        (r0, r1), (c0, c1), (k0, k1) = s["rows"], s["cols"], s["inner"]
        last = i + 1 == len(schedule) or schedule[i + 1]["block"] != s["block"]
        caption = (f"step {i + 1}/{len(schedule)}: block {s['block']} ({tile}x{tile} threads) "
                   f"loads A[{r0}:{r1}, {k0}:{k1}] and B[{k0}:{k1}, {c0}:{c1}] into shared "
                   f"memory, syncs, adds {k1 - k0} products per thread"
                   + (f"; C[{r0}:{r1}, {c0}:{c1}] is written" if last else ""))
        frames.append(Frame(fig, caption))
        if last:
            done.add(s["block"])
    return frames


def allocation_bars(rows: Sequence[tuple[str, int, int]]) -> Figure:
    """Two bar charts side by side: device allocations and bytes obtained, per memory scheme
    (``rows`` of (name, allocations, bytes)). Closed, like :func:`thread_map`: returned to be shown
    once."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 2.4))
    names = [r[0] for r in rows]
    for ax, k, title in ((a1, 1, "device allocations (cudaMalloc calls)"),
                         (a2, 2, "bytes obtained for intermediates")):
        vals = [r[k] for r in rows]
        ax.barh(names, vals, color=[color(i) for i in range(len(rows))], edgecolor="#555")
        for y, v in enumerate(vals):
            ax.text(v, y, f" {v:,}", va="center", fontsize=9)
        ax.set_title(title, fontsize=10)
        ax.set_xlim(0, max(vals) * 1.3 if max(vals) else 1)
        ax.invert_yaxis()
    a2.set_yticks([])
    fig.tight_layout()
    plt.close(fig)   # shown once, as the cell's value
    return fig

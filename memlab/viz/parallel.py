"""Pictures of parallel backpropagation (lesson 09): GPipe's schedule, memory per device, ZeRO's
stages. Numbers come from :mod:`memlab.checkpoint.parallel`."""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..checkpoint import parallel as par
from .palette import color
from .plots import finish


def gpipe_timeline(S: int, M: int, backward: float = 2.0) -> Figure:
    """GPipe on ``S`` devices with ``M`` micro-batches: forwards (light) fill the pipeline, then
    backwards (dark) drain it; white is the bubble."""
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * S + 1.0))
    for s in range(S):
        for m in range(M):
            ax.barh(s, 1.0, left=m + s, color=color(m), edgecolor="#333333", height=0.7)
            ax.text(m + s + 0.5, s, f"F{m}", ha="center", va="center", fontsize=7)
            start = (M + S - 1) + (m + (S - 1 - s)) * backward
            ax.barh(s, backward, left=start, color=color(m), edgecolor="#333333", height=0.7,
                    hatch="//")
            ax.text(start + backward / 2, s, f"B{m}", ha="center", va="center", fontsize=7)
    ax.set_yticks(range(S))
    ax.set_yticklabels([f"device {s}" for s in range(S)])
    ax.invert_yaxis()
    ax.set_xlabel("time (one micro-batch forward on one stage = 1)")
    return finish(fig, ax, f"GPipe, {S} stages, {M} micro-batches: bubble "
                           f"{par.bubble_fraction(S, M):.0%} of the time")


def device_bars(values: Sequence[float], labels: Sequence[str], title: str,
                unit: float = 1e9, budget: float | None = None) -> Figure:
    """Bars of bytes (in GB by default) per device or per strategy, a device's capacity dashed."""
    fig, ax = plt.subplots(figsize=(6.0, 2.6))
    ax.bar(range(len(values)), [v / unit for v in values],
           color=[color(k) for k in range(len(values))], edgecolor="#333333")
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("GB" if unit == 1e9 else "bytes")
    if budget is not None:
        ax.axhline(budget / unit, color="#c0392b", ls="--", lw=1)
    return finish(fig, ax, title)

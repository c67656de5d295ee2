"""Pictures of parallel backpropagation (lesson 09): GPipe's and 1F1B's schedules, memory per
device, ZeRO's stages. Numbers come from :mod:`memlab.checkpoint.parallel`."""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..checkpoint import parallel as par
from .palette import color
from .plots import finish


_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B"}


def pipeline_timeline(S: int, M: int, schedule: str = "gpipe", backward: float = 2.0) -> Figure:
    """A pipeline on ``S`` devices with ``M`` micro-batches, timed by
    :func:`~memlab.checkpoint.parallel.pipeline_timeline`: forwards plain, backwards hatched, one
    colour per micro-batch; white is the bubble. The title gives the most micro-batches in flight
    on any device."""
    tasks = par.pipeline_timeline(S, M, schedule, 1.0, backward)
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * S + 1.0))
    for s, kind, m, start, end in tasks:
        ax.barh(s, end - start, left=start, color=color(m), edgecolor="#333333", height=0.7,
                hatch="//" if kind == "B" else None)
        ax.text((start + end) / 2, s, f"{kind}{m}", ha="center", va="center", fontsize=7)
    ax.set_yticks(range(S))
    ax.set_yticklabels([f"device {s}" for s in range(S)])
    ax.invert_yaxis()
    ax.set_xlabel(f"time (forward of one micro-batch on one stage = 1, backward = {backward:g})")
    flying = max(par.in_flight(S, M, schedule))
    return finish(fig, ax, f"{_NAMES[schedule]}, {S} stages, {M} micro-batches: bubble "
                           f"{par.measured_bubble(S, M, schedule, 1.0, backward):.0%}, "
                           f"at most {flying} in flight")


def gpipe_timeline(S: int, M: int, backward: float = 2.0) -> Figure:
    """GPipe's timeline: :func:`pipeline_timeline` with ``schedule="gpipe"``."""
    return pipeline_timeline(S, M, "gpipe", backward)


def schedule_bars(per_schedule: dict[str, Sequence[float]], title: str,
                  unit: float = 1e9) -> Figure:
    """Bytes per device (GB by default), one group of bars per device, one bar per schedule."""
    fig, ax = plt.subplots(figsize=(6.0, 2.6))
    n = len(per_schedule)
    width = 0.8 / n
    for k, (name, values) in enumerate(per_schedule.items()):
        xs = [d + (k - (n - 1) / 2) * width for d in range(len(values))]
        ax.bar(xs, [v / unit for v in values], width, color=color(k), edgecolor="#333333",
               label=_NAMES.get(name, name))
    ax.set_xticks(range(len(next(iter(per_schedule.values())))))
    ax.set_xticklabels([f"device {d}" for d in range(len(next(iter(per_schedule.values()))))],
                       fontsize=8)
    ax.set_ylabel("GB" if unit == 1e9 else "bytes")
    ax.legend(fontsize=8)
    return finish(fig, ax, title)


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

"""Matplotlib pictures: memory over time, Gantt charts, memory rows.

Memory over time is a step plot with the peak marked and labelled
(LESSONS.md "Pictures").
"""
from __future__ import annotations

from typing import Sequence

import matplotlib

matplotlib.use("Agg") if matplotlib.get_backend().lower() == "agg" else None
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from .palette import color  # noqa: E402


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def memory_plot(values: Sequence[float], times: Sequence[float] | None = None,
                labels: Sequence[str] | None = None, ax: Axes | None = None, label: str | None = None,
                unit: str = "bytes", title: str | None = None, upto: int | None = None,
                figsize: tuple[float, float] = (5.5, 2.6)) -> Figure:
    """Step plot of memory held after each step (or at each time), peak marked.

    ``upto`` draws only the first ``upto`` steps (for steppers), on the full axes.
    """
    fig, ax = _axes(ax, figsize)
    xs = list(times) if times is not None else list(range(1, len(values) + 1))
    n = len(values) if upto is None else upto
    ax.step(xs[:n], list(values)[:n], where="post", label=label, lw=2)
    if values:
        peak = max(values)
        i = list(values).index(peak)
        if i < n:
            ax.plot([xs[i]], [peak], "o", color="#c0392b")
            ax.annotate(f"peak {peak:g}", (xs[i], peak), textcoords="offset points", xytext=(4, 4),
                        color="#c0392b", fontsize=9)
        ax.set_ylim(0, peak * 1.25 if peak > 0 else 1)
        ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
    if labels is not None:
        ax.set_xticks(xs[:len(labels)])
        ax.set_xticklabels(labels, fontsize=8, rotation=0 if max(map(len, labels), default=0) < 6 else 45)
    ax.set_ylabel(unit)
    ax.set_xlabel("step" if times is None else "time")
    return finish(fig, ax, title, legend=bool(label))


def finish(fig: Figure, ax: Axes, title: str | None = None, legend: bool = False) -> Figure:
    """The lessons' common last touches: a small title, a legend if asked, a tight layout."""
    if title:
        ax.set_title(title, fontsize=10)
    if legend:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def gantt(rows: Sequence[tuple[str, int, float, float]], ax: Axes | None = None,
          title: str | None = None, figsize: tuple[float, float] = (5.5, 2.2)) -> Figure:
    """Gantt chart from ``(task, processor, start, end)`` rows, one lane per processor."""
    fig, ax = _axes(ax, figsize)
    for k, (task, proc, start, end) in enumerate(rows):
        ax.barh(proc, end - start, left=start, color=color(k), edgecolor="#333333", height=0.6)
        ax.text((start + end) / 2, proc, str(task), ha="center", va="center", fontsize=8)
    procs = sorted({r[1] for r in rows})
    ax.set_yticks(procs)
    ax.set_yticklabels([f"P{p}" for p in procs])
    ax.invert_yaxis()
    ax.set_xlabel("time")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig

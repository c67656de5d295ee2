"""Plots of lesson 11 (the scheduling slides, part 1): list schedules on several processors,
schedules as makespan/peak points, the cost of the exact search, and the I/O volume against memory.

Drawing only: the schedules, points, counts and volumes are computed by the caller with
:mod:`memlab.scheduling` and passed in. Each function returns a closed figure, shown once as the
cell's value.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .palette import color
from .scheduling import schedule_figure

MARKERS = "os^Dv"


def schedules_figure(graph: Any, schedules: Mapping[int, Any]) -> Figure:
    """One row per number of processors P (``schedules[P]``, list schedules of ``graph``): the Gantt
    chart beside the memory held, on common time and memory axes."""
    fig, axes = plt.subplots(len(schedules), 2, figsize=(9, 2 * len(schedules)), sharex=True,
                             squeeze=False)
    longest = max(s.makespan for s in schedules.values())
    top = max(s.peak for s in schedules.values())
    for row, (P, s) in zip(axes, schedules.items()):
        schedule_figure(graph, s, f"P = {P}", axes=row)
        row[1].set_xlim(0, longest + 0.5)
        row[1].set_ylim(0, top * 1.25)
    fig.tight_layout()
    plt.close(fig)
    return fig


def schedule_points(points: Sequence[tuple[str, int, float, float]], title: str = "") -> Figure:
    """Schedules as points (makespan, peak): ``points`` of (priority name, P, makespan, peak);
    one marker per priority, one colour per P."""
    fig, ax = plt.subplots(figsize=(5, 3))
    names = list(dict.fromkeys(p[0] for p in points))
    for name, P, makespan, peak in points:
        ax.plot(makespan, peak, MARKERS[names.index(name) % len(MARKERS)], color=color(P - 1), ms=8)
        ax.annotate(f"P={P}", (makespan, peak), xytext=(4, 3), textcoords="offset points",
                    fontsize=8)
    handles = [plt.Line2D([], [], marker=MARKERS[k % len(MARKERS)], ls="", color="#555", label=n)
               for k, n in enumerate(names)]
    ax.legend(handles=handles, fontsize=8)
    ax.set_xlabel("makespan")
    ax.set_ylabel("peak memory")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    plt.close(fig)
    return fig


def search_cost_figure(states: Mapping[int, Sequence[int]], title: str = "") -> Figure:
    """States explored by the exact search against the number of tasks (one dot per graph, the
    mean as a line), beside 2^n, the number of all subsets."""
    fig, ax = plt.subplots(figsize=(5.5, 3))
    sizes = sorted(states)
    for n in sizes:
        ax.plot([n] * len(states[n]), states[n], ".", color=color(4), alpha=0.6)
    ax.plot(sizes, [np.mean(states[n]) for n in sizes], "-o", color=color(3),
            label="states explored (mean)")
    ax.plot(sizes, [2.0 ** n for n in sizes], "--", color="#777777", label="$2^n$ (all subsets)")
    ax.set_yscale("log")
    ax.set_xlabel("number of tasks n")
    ax.set_ylabel("count")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig


def io_curves(curves: Mapping[str, Sequence[tuple[float, float]]], title: str = "",
              ax: Any = None) -> Figure:
    """I/O volume against the memory available, one step line per ``curves[label]`` of
    (memory, volume) points (:func:`memlab.scheduling.iovolume.io_volume`)."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(5, 2.8))
    fig = ax.figure
    for k, (label, pts) in enumerate(curves.items()):
        xs, ys = zip(*pts)
        ax.plot(xs, ys, "-o", ms=4, color=color(k), label=label)
    ax.set_xlabel("memory available")
    ax.set_ylabel("I/O volume (written)")
    ax.set_ylim(0, None)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig

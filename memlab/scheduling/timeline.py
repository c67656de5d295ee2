"""Memory over time from allocation events, shared by the task-graph and tree simulators.

An event is ``(time, kind, delta)``: at ``time`` memory changes by
``delta``; events of kind 0 (frees) come before kind 1 (allocations) at the
same instant, so a task that starts exactly when another ends may reuse its
memory (scheduling slides, "Peak Memory: maximum memory usage").
"""
from __future__ import annotations

from typing import Iterable

import numpy as np


def step_curve(events: Iterable[tuple[float, int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Times and memory held after all events at each time (a step curve, frees first)."""
    times: list[float] = []
    mem: list[float] = []
    cur = 0.0
    for t, _, delta in sorted(events, key=lambda e: (e[0], e[1])):
        cur += delta
        if times and times[-1] == t:
            mem[-1] = cur
        else:
            times.append(t)
            mem.append(cur)
    return np.asarray(times, float), np.asarray(mem, float)

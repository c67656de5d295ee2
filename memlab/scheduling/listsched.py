"""List scheduling of a task graph on P processors, with its memory curve (seed 002).

With several processors a schedule has two costs, the makespan and the peak
memory, and they pull against each other (seed 002, "Trade-off between Peak
Memory and Performance"). :func:`list_schedule` is the classic greedy list
scheduler: whenever a processor is idle it starts the ready task that comes
first in a priority list.

Memory convention (exact):

* the datum on edge ``u -> v`` is allocated at ``start(u)`` and freed at
  ``end(v)``; the execution data ``memory[t]`` is held on ``[start(t), end(t))``;
* at an instant where some tasks end and others start, the frees happen
  first: the curve value at time ``t`` is the memory held just after ``t``,
  i.e. on ``[times[k], times[k+1])``;
* hence with P = 1, positive durations and a topological priority list the
  peak equals the sequential :func:`memlab.taskgraph.peak` of that order
  (a task of zero duration holds its data for no time, so the curve never
  shows them).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np

from ..errors import TreeError
from .taskgraph import TaskGraph
from .timeline import step_curve

__all__ = ["Schedule", "list_schedule", "bottom_levels", "memory_curve"]


@dataclass
class Schedule:
    """A parallel schedule: per-task ``start``, ``end``, ``proc``; its
    ``makespan``; the memory step curve ``times``/``memory`` (value held on
    ``[times[k], times[k+1])``) and its ``peak`` (seed 002, "Peak Memory")."""

    start: dict = field(default_factory=dict)
    end: dict = field(default_factory=dict)
    proc: dict = field(default_factory=dict)
    makespan: float = 0.0
    times: np.ndarray = field(default_factory=lambda: np.zeros(0))
    memory: np.ndarray = field(default_factory=lambda: np.zeros(0))
    peak: float = 0.0


def bottom_levels(graph: TaskGraph) -> dict[Hashable, float]:
    """Bottom level of each task: its duration plus the longest path (in
    durations) to an exit task; the usual critical-path priority."""
    bl: dict[Hashable, float] = {}
    for t in reversed(graph.topological_order()):
        bl[t] = graph.duration[t] + max((bl[v] for v in graph.succ[t]), default=0.0)
    return bl


def memory_curve(graph: TaskGraph, start: dict, end: dict) -> tuple[np.ndarray, np.ndarray]:
    """Memory step curve of given start/end times under the module's
    convention (edge data from producer start to consumer end; frees first)."""
    events: list[tuple[float, int, float]] = []
    for t in graph.tasks:
        events.append((start[t], 1, graph.memory[t] + graph.out_size(t)))
        events.append((end[t], 0, -(graph.memory[t] + graph.in_size(t))))
    return step_curve(events)


def _ranks(graph: TaskGraph, priority: Sequence | dict | None) -> dict:
    if priority is None:
        bl = bottom_levels(graph)
        return {t: (-bl[t], k) for k, t in enumerate(graph.tasks)}
    if isinstance(priority, dict):
        for t in graph.tasks:
            if t not in priority:
                raise TreeError(f"task {t!r} has no priority")
        return {t: (priority[t], k) for k, t in enumerate(graph.tasks)}
    prio = list(priority)
    ranks = {}
    for k, t in enumerate(prio):
        if t not in graph.duration:
            raise TreeError(f"unknown task {t!r} in the priority list")
        ranks.setdefault(t, (k, k))
    for t in graph.tasks:
        if t not in ranks:
            raise TreeError(f"task {t!r} is missing from the priority list")
    return ranks


def list_schedule(graph: TaskGraph, P: int = 1, priority: Sequence | dict | None = None) -> Schedule:
    """Greedy list schedule on ``P`` identical processors (seed 002, "Task graph
    scheduling and memory"): at every instant, idle processors (lowest index
    first) take the ready tasks in priority order. ``priority`` is a list of
    tasks (earlier = more urgent), a dict task -> rank (smaller = more
    urgent), or None for non-increasing bottom level. Returns per-task
    start/end/processor, the makespan and the memory curve (module doc)."""
    if int(P) != P or P < 1:
        raise TreeError(f"list_schedule: P must be a positive integer, got {P}")
    graph.topological_order()  # validates (cycle -> TreeError)
    rank = _ranks(graph, priority)
    waiting = {t: len(graph.pred[t]) for t in graph.tasks}
    ready = [(rank[t], t) for t in graph.tasks if waiting[t] == 0]
    heapq.heapify(ready)
    free = list(range(int(P)))
    running: list[tuple[float, int, int]] = []  # (end, seq, proc)
    who: dict[int, Hashable] = {}
    sched = Schedule()
    now = 0.0
    seq = 0
    done = 0
    n = len(graph.tasks)
    while done < n:
        while ready and free:
            _, t = heapq.heappop(ready)
            p = heapq.heappop(free)
            sched.start[t], sched.end[t], sched.proc[t] = now, now + graph.duration[t], p
            heapq.heappush(running, (now + graph.duration[t], seq, p))
            who[seq] = t
            seq += 1
        now = running[0][0]
        while running and running[0][0] == now:
            _, s, p = heapq.heappop(running)
            t = who.pop(s)
            heapq.heappush(free, p)
            done += 1
            for v in graph.succ[t]:
                waiting[v] -= 1
                if waiting[v] == 0:
                    heapq.heappush(ready, (rank[v], v))
    sched.makespan = max(sched.end.values(), default=0.0)
    sched.times, sched.memory = memory_curve(graph, sched.start, sched.end)
    sched.peak = float(sched.memory.max()) if len(sched.memory) else 0.0
    return sched

"""List scheduling of a task graph on P processors, with its memory curve (scheduling slides,
"Trade-off between Peak Memory and Performance").

With several processors a schedule has two costs, the makespan and the peak
memory, and they pull against each other (scheduling slides, "Trade-off between Peak
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
from typing import Callable, Hashable, Sequence

import numpy as np

from ..errors import TreeError
from .taskgraph import TaskGraph
from .timeline import step_curve

__all__ = ["Schedule", "run_list", "list_schedule", "bottom_levels", "memory_curve"]


@dataclass
class Schedule:
    """A parallel schedule: per-task ``start``, ``end``, ``proc``; its
    ``makespan``; the memory step curve ``times``/``memory`` (value held on
    ``[times[k], times[k+1])``) and its ``peak`` (scheduling slides, "Peak Memory")."""

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


def run_list(n: int, preds: Sequence[Sequence[int]], duration: Callable[[int], float], P: int,
             rank: Sequence, lanes: Sequence[tuple[int, int]] | None = None,
             ) -> tuple[list[float], list[float], list[tuple[int, int]]]:
    """The one list scheduler (scheduling slides, "Task graph scheduling and memory"; Graham's greedy).

    Tasks ``0..n-1`` wait for ``preds[i]``; whenever processors are idle, the ready tasks start in
    ``rank`` order (smaller first). A task takes one processor, the lowest idle one, unless
    ``lanes[i] = (lo, hi)`` fixes the processors it needs all of (a task whose lanes are busy is
    passed over for now). At an instant where tasks end and others could start, every ending is
    handled first. Returns per-task start, end and the lanes ``(lo, hi)`` it ran on.
    """
    waiting = [len(p) for p in preds]
    succ: list[list[int]] = [[] for _ in range(n)]
    for i, ps in enumerate(preds):
        for u in ps:
            succ[u].append(i)
    ready = [(rank[i], i) for i in range(n) if waiting[i] == 0]
    heapq.heapify(ready)
    busy = [False] * P
    running: list[tuple[float, int]] = []
    start, end = [0.0] * n, [0.0] * n
    used: list[tuple[int, int]] = [(0, 1)] * n
    now, done = 0.0, 0
    while done < n:
        passed = []
        while ready and not all(busy):
            item = heapq.heappop(ready)
            i = item[1]
            lo, hi = lanes[i] if lanes is not None else (busy.index(False), busy.index(False) + 1)
            if any(busy[lo:hi]):
                passed.append(item)
                continue
            busy[lo:hi] = [True] * (hi - lo)
            start[i], end[i], used[i] = now, now + duration(i), (lo, hi)
            heapq.heappush(running, (end[i], i))
        for item in passed:
            heapq.heappush(ready, item)
        if not running:
            raise TreeError("list scheduling is stuck: no task can start (a cycle in the "
                            "dependencies?)")
        now = running[0][0]
        while running and running[0][0] == now:
            _, i = heapq.heappop(running)
            lo, hi = used[i]
            busy[lo:hi] = [False] * (hi - lo)
            done += 1
            for v in succ[i]:
                waiting[v] -= 1
                if waiting[v] == 0:
                    heapq.heappush(ready, (rank[v], v))
    return start, end, used


def list_schedule(graph: TaskGraph, P: int = 1, priority: Sequence | dict | None = None) -> Schedule:
    """Greedy list schedule on ``P`` identical processors (scheduling slides, "Task graph
    scheduling and memory"): at every instant, idle processors (lowest index
    first) take the ready tasks in priority order. ``priority`` is a list of
    tasks (earlier = more urgent), a dict task -> rank (smaller = more
    urgent), or None for non-increasing bottom level. Returns per-task
    start/end/processor, the makespan and the memory curve (module doc)."""
    if int(P) != P or P < 1:
        raise TreeError(f"list_schedule: P must be a positive integer, got {P}")
    graph.topological_order()  # validates (cycle -> TreeError)
    rank = _ranks(graph, priority)
    tasks = list(graph.tasks)
    index = {t: k for k, t in enumerate(tasks)}
    preds = [[index[u] for u in graph.pred[t]] for t in tasks]
    start, end, used = run_list(len(tasks), preds, lambda k: graph.duration[tasks[k]], int(P),
                                [rank[t] for t in tasks])
    sched = Schedule()
    for k, t in enumerate(tasks):
        sched.start[t], sched.end[t], sched.proc[t] = start[k], end[k], used[k][0]
    sched.makespan = max(sched.end.values(), default=0.0)
    sched.times, sched.memory = memory_curve(graph, sched.start, sched.end)
    sched.peak = float(sched.memory.max()) if len(sched.memory) else 0.0
    return sched

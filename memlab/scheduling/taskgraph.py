"""Task graphs whose edges carry data, and their memory peak (the scheduling slides, part 1).

Model (scheduling slides, "Task graph scheduling and memory" and "Sequential problem").
A task graph is a DAG. A task has a ``duration`` (for parallel schedules, see
:mod:`memlab.listsched`) and optional execution data ``memory`` (0 by
default: in the slides' sequential problem tasks have no execution data). An
edge ``u -> v`` carries one datum of a given ``size``, produced by ``u`` and
consumed by ``v``:

* the datum is allocated when its producer starts and freed when its
  consumer finishes, so a task's output data stay in memory until every
  consumer of it has run;
* while task ``t`` runs, memory holds every live datum (its inputs among
  them), ``t``'s outputs and ``memory[t]``; when ``t`` ends its inputs and
  ``memory[t]`` are freed.

The peak of a sequential order is the most memory held at once. Finding the
order of minimum peak is NP-complete on general DAGs (scheduling slides, "Research
problems"); :func:`min_peak_order` solves small graphs exactly by dynamic
programming over the sets of processed tasks.
"""
from __future__ import annotations

from typing import Iterator, Hashable, Iterable, Sequence

import numpy as np

from ..plaindata import register as _register_plain
from ..errors import TreeError
from .subsets import ExactResult, min_peak_search

__all__ = ["TaskGraph", "peak", "memory_profile", "check_order", "min_peak_order", "width",
           "ExactResult", "sequential_example", "EXAMPLE_ORDERS", "random_taskgraph", "MAX_EXACT_TASKS"]

#: default limit on the number of tasks for :func:`min_peak_order`
MAX_EXACT_TASKS = 24

Task = Hashable


def _size(value: float, what: str) -> float:
    v = float(value)
    if not np.isfinite(v):
        raise TreeError(f"{what} = {value} is not finite")
    if v < 0:
        raise TreeError(f"{what} = {value} is negative")
    return v


class TaskGraph:
    """A DAG of tasks with durations and execution data, whose edges carry
    data of given sizes (scheduling slides, "Task graph scheduling and memory").

    Build it with :meth:`add_task` / :meth:`add_edge` or :meth:`from_edges`.
    Bad input raises :class:`~memlab.errors.TreeError` naming the task:
    unknown task, self-loop, duplicate edge, negative size or duration, and a
    cycle (reported by :meth:`topological_order`, which every algorithm calls).
    """

    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self.duration: dict[Task, float] = {}
        self.memory: dict[Task, float] = {}
        self.size: dict[tuple[Task, Task], float] = {}
        self.succ: dict[Task, list[Task]] = {}
        self.pred: dict[Task, list[Task]] = {}
        self._topo: list[Task] | None = None

    def __repr__(self) -> str:
        return f"TaskGraph({len(self.tasks)} tasks, {len(self.size)} edges)"

    def __len__(self) -> int:
        return len(self.tasks)

    def __contains__(self, task: object) -> bool:
        return task in self.duration

    def add_task(self, name: Task, duration: float = 1.0, memory: float = 0.0) -> "TaskGraph":
        """Add task ``name`` with a duration and execution data size (both >= 0)."""
        if name in self.duration:
            raise TreeError(f"task {name!r} is already in the graph")
        self.duration[name] = _size(duration, f"task {name!r}: duration")
        self.memory[name] = _size(memory, f"task {name!r}: memory")
        self.tasks.append(name)
        self.succ[name] = []
        self.pred[name] = []
        self._topo = None
        return self

    def add_edge(self, u: Task, v: Task, size: float = 1.0) -> "TaskGraph":
        """Add the datum ``u -> v`` of ``size`` (>= 0) produced by u, consumed by v."""
        for t in (u, v):
            if t not in self.duration:
                raise TreeError(f"unknown task {t!r} in edge {u!r} -> {v!r}")
        if u == v:
            raise TreeError(f"task {u!r}: self-loop {u!r} -> {v!r} (a task cannot consume its own output)")
        if (u, v) in self.size:
            raise TreeError(f"task {u!r}: duplicate edge {u!r} -> {v!r}")
        self.size[(u, v)] = _size(size, f"edge {u!r} -> {v!r}: size")
        self.succ[u].append(v)
        self.pred[v].append(u)
        self._topo = None
        return self

    @classmethod
    def from_edges(cls, edges: Iterable[tuple[Task, Task, float]],
                   durations: dict[Task, float] | None = None,
                   memory: dict[Task, float] | None = None,
                   tasks: Sequence[Task] | None = None) -> "TaskGraph":
        """Build a graph from ``(u, v, size)`` triples; tasks are ``tasks`` (in
        that order) or, by default, every endpoint in order of first appearance."""
        edges = [tuple(e) for e in edges]
        durations = dict(durations or {})
        memory = dict(memory or {})
        names: list[Task] = list(tasks) if tasks is not None else []
        if tasks is None:
            seen: set = set()
            for u, v, _ in edges:
                for t in (u, v):
                    if t not in seen:
                        seen.add(t)
                        names.append(t)
            for t in list(durations) + list(memory):
                if t not in seen:
                    seen.add(t)
                    names.append(t)
        g = cls()
        for t in names:
            g.add_task(t, durations.get(t, 1.0), memory.get(t, 0.0))
        for t in list(durations) + list(memory):
            if t not in g.duration:
                raise TreeError(f"unknown task {t!r} in durations/memory")
        for u, v, s in edges:
            g.add_edge(u, v, s)
        g.topological_order()
        return g

    def to_plain(self) -> dict:
        """The graph as plain data (its tasks in order, each task's duration and memory, the edges
        with their sizes), for another process; :meth:`from_plain` rebuilds it."""
        return {"tasks": list(self.tasks), "duration": [self.duration[t] for t in self.tasks],
                "memory": [self.memory[t] for t in self.tasks],
                "edges": [(u, v, s) for (u, v), s in self.size.items()]}

    @classmethod
    def from_plain(cls, data: dict) -> "TaskGraph":
        """The graph :meth:`to_plain` wrote, rebuilt with :meth:`add_task` and :meth:`add_edge`
        (which check every task, size and edge)."""
        if not isinstance(data, dict) or set(data) != {"tasks", "duration", "memory", "edges"}:
            raise TreeError(f"a plain task graph is a dict with 'tasks', 'duration', 'memory' and "
                            f"'edges', not {str(data)[:80]}")
        tasks, durations, memory = list(data["tasks"]), list(data["duration"]), list(data["memory"])
        if not len(tasks) == len(durations) == len(memory):
            raise TreeError("a plain task graph needs one duration and one memory per task")
        g = cls()
        for t, d, m in zip(tasks, durations, memory):
            g.add_task(t, d, m)
        for e in data["edges"]:
            if len(e) != 3:
                raise TreeError(f"an edge is (u, v, size), not {str(e)[:60]}")
            g.add_edge(*e)
        return g

    def out_size(self, t: Task) -> float:
        """Total size of the data ``t`` produces."""
        return sum(self.size[(t, v)] for v in self.succ[t])

    def in_size(self, t: Task) -> float:
        """Total size of the data ``t`` consumes."""
        return sum(self.size[(u, t)] for u in self.pred[t])

    def topological_order(self) -> list[Task]:
        """A topological order (Kahn, tasks in insertion order on ties); raises
        TreeError naming a task on a cycle if there is one."""
        if self._topo is not None:
            return list(self._topo)
        indeg = {t: len(self.pred[t]) for t in self.tasks}
        queue = [t for t in self.tasks if indeg[t] == 0]
        out: list[Task] = []
        k = 0
        while k < len(queue):
            t = queue[k]
            k += 1
            out.append(t)
            for v in self.succ[t]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    queue.append(v)
        if len(out) != len(self.tasks):
            left = {t for t in self.tasks if indeg[t] > 0}
            # walk back along predecessors inside the leftover set to land on a cycle
            t = next(iter(sorted(left, key=self.tasks.index)))
            path: list[Task] = []
            while t not in path:
                path.append(t)
                t = next(u for u in self.pred[t] if u in left)
            # path walked the cycle backwards from t: t <- path[i+1] <- ... ; print it forwards, closed
            cyc = [t] + path[path.index(t) + 1:][::-1] + [t]
            raise TreeError(f"task {t!r} is on a cycle: " + " -> ".join(map(repr, cyc)))
        self._topo = out
        return list(out)


def check_order(graph: TaskGraph, order: Sequence[Task]) -> list[Task]:
    """Check that ``order`` lists every task once, each after all its
    predecessors; raises TreeError naming the offending task."""
    graph.topological_order()
    order = list(order)
    pos: dict[Task, int] = {}
    for k, t in enumerate(order):
        if t not in graph.duration:
            raise TreeError(f"unknown task {t!r} in the order")
        if t in pos:
            raise TreeError(f"task {t!r} appears twice in the order")
        pos[t] = k
    for t in graph.tasks:
        if t not in pos:
            raise TreeError(f"task {t!r} is missing from the order")
    for t in order:
        for u in graph.pred[t]:
            if pos[u] > pos[t]:
                raise TreeError(f"task {t!r} comes before its predecessor {u!r}: "
                                "not a topological order")
    return order


def topological_orders(graph: TaskGraph, max_tasks: int = 12) -> Iterator[list[Task]]:
    """Every topological order of a small task graph, by exhaustive search.

    The brute force behind "Finding the topological order that minimizes peak
    memory is NP-complete" (scheduling slides, "Research problems"): the number of orders grows like n!.
    Raises TreeError beyond ``max_tasks`` tasks.
    """
    graph.topological_order()  # raises on a cycle
    if len(graph.tasks) > max_tasks:
        raise TreeError(f"{len(graph.tasks)} tasks is too many to enumerate every order "
                        f"(max_tasks={max_tasks})")
    tasks = list(graph.tasks)
    order: list[Task] = []
    done: set[Task] = set()

    def extend() -> Iterator[list[Task]]:
        if len(order) == len(tasks):
            yield list(order)
            return
        for t in tasks:
            if t not in done and all(u in done for u in graph.pred[t]):
                done.add(t)
                order.append(t)
                yield from extend()
                order.pop()
                done.discard(t)

    yield from extend()


def width(graph: TaskGraph) -> int:
    """The most tasks that can run at the same time: the largest set of tasks of which no
    one depends on another (an antichain), so more processors than this never help.

    By Dilworth's theorem it is the number of tasks minus a maximum matching between
    "u reaches v" pairs (Fulkerson's reduction), found with augmenting paths."""
    if not isinstance(graph, TaskGraph):
        raise TreeError(f"width: graph must be a TaskGraph, got {graph!r:.60}")
    topo = graph.topological_order()
    reach: dict[Task, set[Task]] = {}
    for t in reversed(topo):
        reach[t] = set()
        for v in graph.succ[t]:
            reach[t] |= {v} | reach[v]
    match: dict[Task, Task] = {}  # v -> the u it is matched to

    def augment(u: Task, seen: set[Task]) -> bool:
        for v in reach[u]:
            if v not in seen:
                seen.add(v)
                if v not in match or augment(match[v], seen):
                    match[v] = u
                    return True
        return False

    return len(topo) - sum(augment(u, set()) for u in topo)


def memory_profile(graph: TaskGraph, order: Sequence[Task]) -> tuple[np.ndarray, np.ndarray]:
    """Memory while and after each task of a sequential order (the scheduling slides,
    "Sequential problem"): ``during[k]`` while ``order[k]`` runs (live data +
    its outputs + its execution data), ``after[k]`` once its inputs are freed."""
    order = check_order(graph, order)
    during = np.empty(len(order))
    after = np.empty(len(order))
    live = 0.0
    for k, t in enumerate(order):
        out = graph.out_size(t)
        during[k] = live + out + graph.memory[t]
        live += out - graph.in_size(t)
        after[k] = live
    return during, after


def peak(graph: TaskGraph, order: Sequence[Task]) -> float:
    """Peak memory of a sequential order (scheduling slides, "Peak Memory: maximum memory usage")."""
    during, _ = memory_profile(graph, order)
    return float(during.max()) if len(during) else 0.0


def min_peak_order(graph: TaskGraph, max_tasks: int = MAX_EXACT_TASKS) -> ExactResult:
    """Minimum-peak sequential order by dynamic programming over the
    down-closed sets S of processed tasks (every predecessor of a task of S is
    in S). The live memory of S depends on S only, so the best peak to reach
    S is min over its last task t of max(best(S - t), live(S - t) + out(t) +
    memory(t)). Exponential (the problem is NP-complete, scheduling slides, "Research
    problems"): refuses graphs above ``max_tasks`` tasks."""
    topo = graph.topological_order()
    n = len(topo)
    if n > max_tasks:
        raise TreeError(f"min_peak_order: the graph has {n} tasks, above the limit of "
                        f"{max_tasks} (the search is exponential in the number of tasks)")
    index = {t: i for i, t in enumerate(graph.tasks)}
    tasks = graph.tasks
    needs = [sum(1 << index[u] for u in graph.pred[t]) for t in tasks]
    cost = [graph.out_size(t) + graph.memory[t] for t in tasks]
    delta = [graph.out_size(t) - graph.in_size(t) for t in tasks]
    res = min_peak_search(needs, cost, delta)
    return ExactResult([tasks[i] for i in res.order], res.peak, res.states)


#: edges of :func:`sequential_example` (producer, consumer, size): a reconstruction
_EXAMPLE_EDGES = [("A", "C", 2), ("B", "E", 1), ("C", "E", 3), ("E", "D", 1), ("D", "F", 4)]

#: the slides' orders: "bad" (its frames show Mem = 3, 6, 5, 5, 4, Mem Peak = 6)
#: and "good" (A C B E D F, Mem Peak = 5)
EXAMPLE_ORDERS = {"bad": list("ABCEDF"), "good": list("ACBEDF")}


def sequential_example() -> TaskGraph:
    """The six-task graph A..F of the scheduling slides ("Sequential problem", example),
    reconstructed: the slides' figure (graph, sizes, the bad order) is not in
    their text, which gives only the memory of the bad order's frames,
    Mem = 3, 6, 5, 5, 4 and "Mem Peak = 6", and "A C B E D F: Mem Peak = 5".

    Tasks have no execution data and each task here has one consumer, so the
    slides' "one output per task" and memlab's "one datum per edge" agree.
    With these sizes the bad order A B C E D F holds 2, 3, 6, 5, 5, 4 while
    each task runs: its last five frames are the slides' 3, 6, 5, 5, 4 (the
    first, A alone, is a frame the text does not show) and its peak is 6;
    A C B E D F peaks at 5, the least possible. Exhaustive searches over the
    DAGs on A..F where A C B E D F is topological (one output per task of
    size 1 to 4; or one datum per edge, up to 8 edges of size 1 to 3) found
    no graph whose *first* five frames are 3, 6, 5, 5, 4 with peaks 6 and 5.
    """
    return TaskGraph.from_edges(_EXAMPLE_EDGES, tasks=list("ABCDEF"))


def random_taskgraph(n: int, edge_prob: float = 0.3, seed: int | None = None,
                     max_size: int = 5, max_duration: int = 5) -> TaskGraph:
    """A random DAG on tasks 0..n-1: each pair i < j is an edge with
    probability ``edge_prob``, sizes and durations uniform integers from 1.
    Handy to plot how the exact search's state count grows with n (the
    problem is NP-complete, scheduling slides, "Research problems")."""
    if n < 0 or not 0 <= edge_prob <= 1:
        raise TreeError(f"random_taskgraph: need n >= 0 and 0 <= edge_prob <= 1, got {n}, {edge_prob}")
    rng = np.random.default_rng(seed)
    g = TaskGraph()
    for i in range(n):
        g.add_task(i, duration=float(rng.integers(1, max_duration + 1)))
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < edge_prob:
                g.add_edge(i, j, float(rng.integers(1, max_size + 1)))
    return g


_register_plain("taskgraph", TaskGraph, TaskGraph.to_plain, TaskGraph.from_plain)

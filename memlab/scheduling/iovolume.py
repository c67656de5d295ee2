"""Minimum I/O under memory shortage, for a given order (the scheduling slides, "Research problems":
"in case of memory shortage, minimum I/Os required").

When the memory ``M`` is below the peak of a sequential order, some data must go to disk and come
back before their consumer runs. The model is :mod:`.taskgraph`'s (one datum per edge, produced by
its tail, consumed by its head) with a disk beside the memory:

* before task ``t`` runs, its input data must be wholly in memory (what is on disk is read back),
  and room is made for its outputs and its execution data by **writing** other data to disk;
* a datum may be written in part (a datum is divisible, as a file written block by block); every
  byte written is read back once, by its consumer, so the **I/O volume** is the bytes written.

The order runs at all iff ``M`` is at least :func:`io_floor`: the largest inputs + outputs +
execution data of one task. For a given order the eviction rule **furthest in the future** (write
first the data whose consumer comes last) writes the least: it is Belady's rule for paging, applied
byte by byte (Jacquelin, Marchal, Robert and Ucar 2011 prove it optimal for tree traversals with
divisible data; with indivisible data the problem is NP-complete). :func:`io_volume` replays an
order with that rule or a simpler one; ``tests/scheduling/test_iovolume.py`` checks it against an
exhaustive search over every eviction.
"""
from __future__ import annotations

from typing import Hashable, NamedTuple, Sequence

from ..errors import BudgetError, TreeError, check_list, check_number
from .taskgraph import TaskGraph, check_order
from .treebase import Tree, check_tree

__all__ = ["IOResult", "io_floor", "io_volume", "RULES", "tree_taskgraph"]

Task = Hashable
Edge = tuple[Task, Task]

#: eviction rules: the optimal one, and two that ignore the future
RULES = ("furthest", "oldest", "largest")


class IOResult(NamedTuple):
    """An order replayed within ``memory``: ``volume`` (bytes written, each read back once),
    ``writes`` (task about to run, datum, bytes written then) and ``peak`` (most memory held)."""

    volume: float
    writes: list[tuple[Task, Edge, float]]
    peak: float


def _check_graph(graph: object, what: str) -> TaskGraph:
    if not isinstance(graph, TaskGraph):
        raise TreeError(f"{what}: graph must be a TaskGraph, got {type(graph).__name__} "
                        f"{graph!r:.60}")
    return graph


def io_floor(graph: TaskGraph, order: Sequence[Task]) -> float:
    """The least memory in which ``order`` can run with a disk: the most any one task needs at once
    (its inputs, its outputs and its execution data)."""
    order = check_order(_check_graph(graph, "io_floor"),
                        check_list(order, "io_floor: order (a list of tasks)", TreeError))
    return max((graph.in_size(t) + graph.out_size(t) + graph.memory[t] for t in order), default=0.0)


def io_volume(graph: TaskGraph, order: Sequence[Task], memory: float,
              rule: str = "furthest") -> IOResult:
    """Replay ``order`` within ``memory``, writing data to disk by ``rule`` when it runs short:
    ``"furthest"`` (the consumer that comes last first: the least volume), ``"oldest"`` (the
    datum produced first) or ``"largest"`` (the biggest datum in memory). BudgetError when
    ``memory`` is below :func:`io_floor`, naming the task that cannot fit."""
    order = check_order(_check_graph(graph, "io_volume"),
                        check_list(order, "io_volume: order (a list of tasks)", TreeError))
    M = check_number(memory, "io_volume: memory", 0, error=BudgetError)
    if rule not in RULES:
        raise TreeError(f"io_volume: rule must be one of {', '.join(RULES)}, got {rule!r}")
    pos = {t: k for k, t in enumerate(order)}
    key = {"furthest": lambda e: -pos[e[1]], "oldest": lambda e: pos[e[0]],
           "largest": lambda e: -resident[e]}[rule]
    resident: dict[Edge, float] = {}     # bytes of each live datum in memory
    on_disk: dict[Edge, float] = {}      # bytes of each live datum on disk
    writes: list[tuple[Task, Edge, float]] = []
    peak = 0.0
    for t in order:
        inputs = [(u, t) for u in graph.pred[t]]
        need = graph.in_size(t) + graph.out_size(t) + graph.memory[t]
        if need > M:
            raise BudgetError(f"task {t!r} needs {need:g} at once (inputs, outputs and execution "
                              f"data) but the memory is {M:g}: no eviction helps")
        short = sum(resident.values()) + sum(on_disk.get(e, 0.0) for e in inputs) \
            + graph.out_size(t) + graph.memory[t] - M
        for e in sorted((e for e in resident if e[1] != t and resident[e] > 0),
                        key=lambda e: (key(e), pos[e[0]], pos[e[1]])):
            if short <= 1e-12:
                break
            amount = min(resident[e], short)
            resident[e] -= amount
            on_disk[e] = on_disk.get(e, 0.0) + amount
            writes.append((t, e, amount))
            short -= amount
        for e in inputs:                 # read back what the task needs
            resident[e] = graph.size[e]
            on_disk.pop(e, None)
        peak = max(peak, sum(resident.values()) + graph.out_size(t) + graph.memory[t])
        for e in inputs:
            del resident[e]
        for v in graph.succ[t]:
            resident[(t, v)] = graph.size[(t, v)]
    return IOResult(sum(a for _, _, a in writes), writes, peak)


def tree_taskgraph(tree: Tree) -> TaskGraph:
    """An in-tree as a task graph: node ``i``'s output ``f_i`` is the datum on the edge to its
    parent, ``m_i`` its execution data (the root's output, consumed by no task, counts as the
    root's execution data), so every order has the tree's peak (lesson 12's model)."""
    check_tree(tree, "tree_taskgraph: tree")
    edges = [(i, p, tree.f[i]) for i, p in enumerate(tree.parent) if p >= 0]
    memory = {i: tree.m[i] + (tree.f[i] if tree.parent[i] < 0 else 0.0) for i in range(tree.n)}
    return TaskGraph.from_edges(edges, memory=memory, tasks=list(range(tree.n)))

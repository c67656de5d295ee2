"""The execution order of the op graph, chosen for its peak memory (seed 002, part 1; Liu 1987).

Seed 002's "Sequential problem": even on one processor, the order in which a task graph runs sets
its **peak memory**, and finding the order of least peak is NP-complete on general DAGs ("Research
problems"); on trees, Liu's best post-order is optimal and a plain depth-first post-order may not
be. The op graph of a training step is such a task graph: a computed value is alive from the step
that computes it to its last reader (graph outputs: to the end; placeholders and constants cost
nothing, as in the planners, :mod:`.liveness`). The depth-first order every planner used to take
(:func:`~memlab.graph.topo_order`) visits the outputs in the order they are listed, so on
``[loss, dW1, ..., dWn]`` it walks the whole chain of input gradients before it computes most
weight gradients, and holds them all.

:func:`memory_order` returns a topological order meant to keep that peak low:

* ``"greedy"``: a list scheduler that runs the ready op freeing the most bytes, net of what it
  allocates. It is not :func:`memlab.scheduling.listsched.run_list`: that one simulates ``P``
  processors over time with ranks fixed before the run, while this priority changes as the run
  goes (an input becomes freeable once its other readers have run), so it keeps its own heap
  with lazy updates, O((V + E) log V);
* ``"autograd"``: the order of an autograd engine (PyTorch's): the forward pass in creation
  order, then the backward ops grouped by the forward node whose gradient they read, groups in
  reverse creation order of those nodes, each op (weight gradients among them) in the group of
  the last gradient it needs, so it runs as soon as its inputs exist;
* ``"reverse_dfs"``: the depth-first post-order visiting the outputs last to first;
* ``"dfs"``: the depth-first post-order (:func:`~memlab.graph.topo_order`, the old default);
* ``"best"`` (default): the one of these with the least peak on the graph at hand (ties in that
  order of preference: dfs, reverse_dfs, autograd, greedy), so never above depth-first; on graphs
  of at most :data:`SIFT_NODES` nodes, then improved by moving single ops while the peak falls
  (a local search, not an exact one);
* ``"exact"``: the least peak over every order, by the one exact search of seed 002
  (:func:`~memlab.scheduling.subsets.min_peak_search`) on the op graph seen as a task graph
  (:func:`search_tasks`); exponential, so refused above :data:`MAX_EXACT_OPS` search tasks.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from heapq import heapify, heappop, heappush
from itertools import chain
from typing import Iterable, Iterator, Sequence

import numpy as np

from ..errors import PlanError
from ..graph import Node, adjoint_of, as_list, check_order, rebuilt_from, topo_order, workspace_of
from ..scheduling.subsets import min_peak_search
from .liveness import Liveness, live_curve, prepare

#: every method :func:`memory_order` takes
METHODS = ("best", "greedy", "autograd", "reverse_dfs", "dfs", "exact")
#: the methods ``"best"`` compares, in order of preference on a tie
PREFERENCE = ("dfs", "reverse_dfs", "autograd", "greedy")
#: the most search tasks (ops plus values read by several ops) ``method="exact"`` takes by default
MAX_EXACT_OPS = 24
#: ``"best"`` improves its order by sifting (:func:`_sift`) on graphs of at most this many nodes
SIFT_NODES = 32


def memory_order(outputs: Node | Iterable[Node], method: str = "best", *,
                 max_ops: int = MAX_EXACT_OPS) -> list[Node]:
    """A topological order of every node ``outputs`` need, chosen to keep the peak of live bytes
    low (seed 002, "Sequential problem"; methods in the module docstring). ``max_ops`` bounds the
    search of ``method="exact"``; a bigger graph raises :class:`~memlab.errors.PlanError`.
    """
    if method not in METHODS:
        raise PlanError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    outs = as_list(outputs)
    nodes = topo_order(outs)
    if method == "dfs":
        return nodes
    if method == "exact":
        return _exact(nodes, outs, max_ops)
    if method in _METHODS:
        return _METHODS[method](nodes, outs)
    with _collector_paused():
        graph = _Indexed(nodes, outs)
        if method == "greedy":
            return _greedy(graph)
        orders = [nodes, _reverse_dfs(nodes, outs), _autograd(graph), _greedy(graph)]
        best = min(range(len(orders)), key=lambda k: (graph.peak(orders[k]), k))
        return _sift(graph, orders[best]) if len(nodes) <= SIFT_NODES else orders[best]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while the orders are built: they allocate a list or a tuple
    per node and make no cycles, but each of those allocations counts towards a full collection,
    which walks every object alive (on a graph of 1e5 nodes, half the time of "best";
    bench/orders.py, table 4)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def resolve_order(outputs: Node | Iterable[Node], order: Sequence[Node] | str | None = None
                  ) -> list[Node]:
    """The execution order a caller asked for: None for :func:`memory_order`'s default, a method
    name (``"dfs"``: the old depth-first order), or an explicit order, checked
    (:func:`~memlab.graph.check_order`: the message names the first node before one of its inputs)."""
    if order is None or isinstance(order, str):
        return memory_order(outputs, check_order_name(order))
    return check_order(outputs, order)


def check_order_name(order: str | None) -> str:
    """The method of :func:`memory_order` an ``order=`` argument names (None: ``"best"``), else a
    :class:`PlanError` about ``order`` (not about ``method``: the caller passed ``order=``)."""
    if order is None:
        return "best"
    if order not in METHODS:
        raise PlanError(f"order must be None (memory_order's default), a list of nodes or one of "
                        f"{', '.join(map(repr, METHODS))}, got {order!r}")
    return order


def plan_liveness(outputs: Node | Iterable[Node], order: Sequence[Node] | str | None = None
                  ) -> Liveness:
    """What every planner starts from (:func:`~.liveness.prepare`) in the order a caller asked for
    (see :func:`resolve_order`): by default :func:`memory_order`'s, ``"dfs"`` the depth-first
    order found with the last readers in one walk of the graph."""
    outs = as_list(outputs)
    if isinstance(order, str):
        check_order_name(order)
    if order is None or (isinstance(order, str) and order != "dfs"):
        return prepare(outs, memory_order(outs, order or "best"), trusted=True)
    return prepare(outs, None if isinstance(order, str) else order)


def order_peak(outputs: Node | Iterable[Node], order: Sequence[Node] | str | None = None) -> int:
    """The peak of live bytes of an order (default: :func:`memory_order`'s), as the planners count
    liveness (:meth:`~memlab.memory.liveness.Liveness.peak`; seed 002 "Peak Memory")."""
    return plan_liveness(outputs, order).peak()


class _Indexed:
    """One graph on integers (node ``i`` of the depth-first order ``nodes``): each node's distinct
    inputs and bytes (0 for given values), and the outputs. :meth:`peak` is the peak of live bytes
    of an order in a few vectorised passes (the sweep is :func:`~.liveness.live_curve`), so
    ``"best"`` can compare orders of big graphs."""

    def __init__(self, nodes: list[Node], outs: list[Node]) -> None:
        self.nodes = nodes
        self.index = idx = dict(zip(nodes, range(len(nodes))))
        get = idx.__getitem__
        self.ins = [list(map(get, n.inputs)) for n in nodes]
        for xs in self.ins:
            if len(xs) > 1 and len(set(xs)) < len(xs):
                xs[:] = dict.fromkeys(xs)               # x * x reads x once
        self.size = [n.nbytes if n.op.computes else 0 for n in nodes]
        self.work = np.array([workspace_of(n) for n in nodes], np.int64)    # held while running
        self.outs = {idx[o] for o in outs}
        self.edges: tuple[np.ndarray, np.ndarray] | None = None    # (input, reader), when needed
        self._readers: list[list[int]] | None = None

    @property
    def readers(self) -> list[list[int]]:
        """Each node's readers, in the order of ``nodes`` (each once)."""
        if self._readers is None:
            self._readers = [[] for _ in self.ins]
            for i, xs in enumerate(self.ins):
                for x in xs:
                    self._readers[x].append(i)
        return self._readers

    def peak(self, order: list[Node]) -> int:
        """The most bytes alive at any step of ``order`` (a topological order of ``nodes``)."""
        v = len(order)
        if self.edges is None:
            self.edges = (np.fromiter(chain.from_iterable(self.ins), np.int64),
                          np.repeat(np.arange(v), [len(x) for x in self.ins]))
        src, dst = self.edges
        pos = np.empty(v, np.int64)
        pos[np.fromiter(map(self.index.__getitem__, order), np.int64, v)] = np.arange(v)
        last = pos.copy()                       # a value's last reader (itself when none)
        np.maximum.at(last, src, pos[dst])
        last[list(self.outs)] = v               # outputs live to the end
        curve = live_curve(pos, last, self.size, v + 1)
        if self.work.any():
            np.add.at(curve, pos, self.work)    # a workspace: alive during its op's step
        return int(curve.max(initial=0))


def _sift(graph: _Indexed, order: list[Node], passes: int = 8) -> list[Node]:
    """Local search on a small graph: move one op to another place between its last input and
    its first reader, keeping the first move that lowers the peak, until no move does (or
    ``passes`` sweeps). bench/orders.py: on random op graphs of 8-14 ops the best heuristic order
    is 7% above the exact minimum on average, sifted 4%."""
    index = graph.index
    cur = [index[n] for n in order]
    nodes = graph.nodes
    best = graph.peak(order)
    for _ in range(passes):
        moved = False
        for v in range(len(cur)):
            pos = {x: k for k, x in enumerate(cur)}
            i = pos[v]
            lo = max((pos[x] for x in graph.ins[v]), default=-1) + 1
            hi = min((k for k, x in enumerate(cur) if v in graph.ins[x]), default=len(cur))
            rest = cur[:i] + cur[i + 1:]
            for j in range(lo, hi):
                if j in (i, i + 1):
                    continue                    # the same order
                k = j if j < i else j - 1
                trial = rest[:k] + [v] + rest[k:]
                peak = graph.peak([nodes[x] for x in trial])
                if peak < best:
                    best, cur, moved = peak, trial, True
                    break
        if not moved:
            break
    return [nodes[x] for x in cur]


def _distinct(n: Node) -> list[Node]:
    """``n``'s inputs, each once (``x * x`` reads ``x`` once)."""
    return n.inputs if len(n.inputs) < 2 else list(dict.fromkeys(n.inputs))


def _greedy(graph: _Indexed) -> list[Node]:
    """Of the ready ops, run the one whose step changes the bytes held the least (its output, less
    the inputs it is the last to read); ties to the depth-first position. Each op's score is set
    when it gets ready and lowered (a new heap entry; the old one is skipped) when an input's
    other readers have all run."""
    ins, size, readers = graph.ins, graph.size, graph.readers
    left = [len(r) for r in readers]                        # readers yet to run
    waiting = [len(xs) for xs in ins]                       # inputs yet to run
    frees = size[:]                                         # bytes freed after the last reader
    for o in graph.outs:
        frees[o] = 0
    ready = {i: size[i] for i, xs in enumerate(ins) if not xs}   # ready op -> its score
    heap = [(s, i) for i, s in ready.items()]
    heapify(heap)
    order: list[int] = []
    while heap:
        s, n = heappop(heap)
        if ready.get(n) != s:
            continue                                        # run already, or a stale score
        del ready[n]
        order.append(n)
        for x in ins[n]:
            left[x] -= 1
            if left[x] == 1 and frees[x]:                   # its last reader now frees it
                r = next(r for r in readers[x] if r in ready or waiting[r])
                if r in ready:
                    ready[r] -= frees[x]
                    heappush(heap, (ready[r], r))
        for r in readers[n]:
            waiting[r] -= 1
            if not waiting[r]:
                s = size[r] - sum(frees[x] for x in ins[r] if left[x] == 1)
                ready[r] = s
                heappush(heap, (s, r))
    nodes = graph.nodes
    return [nodes[i] for i in order]


def _autograd(graph: _Indexed) -> list[Node]:
    """The autograd engine's order (module docstring). A backward op's group is the sequence
    number (creation id) of the forward node whose gradient it reads, the least over its inputs (a
    sum of gradient parts completes with its last part); an op made for the backward pass that
    reads only forward values (a softmax or a mask in a gradient, a recomputed copy) joins its
    first reader's group. Ops run by (forward first, group descending, creation id), each as soon
    as its inputs have run; a node rebuilt by a rewrite (:func:`~memlab.graph.rebuilt_from`) keeps
    the creation id and the gradient of the node it rebuilds."""
    nodes, outs = graph.nodes, [graph.nodes[o] for o in graph.outs]
    origin = [rebuilt_from(n) for n in nodes]
    ids = [o.id for o in origin]
    version = dict(zip(origin, nodes))                      # original -> its node in this graph
    grad_of = {version[a]: n for n, o in zip(nodes, origin)
               if (a := adjoint_of(o)) is not None and a in version}
    if not grad_of:
        return _by_key(graph, [(0, 0, i) for i in ids])
    group: dict[Node, int] = {}
    for n in nodes:
        seen = [grad_of[x].id if x in grad_of else group[x] for x in n.inputs
                if x in grad_of or x in group]
        if seen:
            group[n] = min(seen)
        elif n in grad_of:
            group[n] = grad_of[n].id                        # the seed of the backward pass
    first_reader: dict[Node, int] = {}
    forward_read: set[Node] = set(outs)
    for n in reversed(nodes):
        if n not in group:
            if n.op.computes and n not in forward_read and n in first_reader:
                group[n] = first_reader[n]                  # made for the backward pass
            else:
                forward_read.update(n.inputs)
                continue
        g = group[n]
        for x in n.inputs:
            if first_reader.get(x, -1) < g:
                first_reader[x] = g
    return _by_key(graph, [(1, -group[n], i) if n in group else (0, 0, i)
                           for n, i in zip(nodes, ids)])


def _by_key(graph: _Indexed, key: list[tuple[int, int, int]]) -> list[Node]:
    """The topological order that runs, at each step, the ready node of least ``key`` (ties to the
    depth-first position): a Kahn sort whose heap holds each node's rank in that sort order."""
    n = len(key)
    by_rank = sorted(range(n), key=key.__getitem__)        # stable: ties keep depth-first order
    rank = [0] * n
    for r, i in enumerate(by_rank):
        rank[i] = r
    waiting = [len(xs) for xs in graph.ins]
    readers = graph.readers
    heap = [rank[i] for i in range(n) if not waiting[i]]
    heapify(heap)
    order: list[int] = []
    while heap:
        i = by_rank[heappop(heap)]
        order.append(i)
        for r in readers[i]:
            waiting[r] -= 1
            if not waiting[r]:
                heappush(heap, rank[r])
    nodes = graph.nodes
    return [nodes[i] for i in order]


def _reverse_dfs(nodes: list[Node], outs: list[Node]) -> list[Node]:
    """The depth-first post-order visiting the outputs last to first."""
    return topo_order(outs[::-1])


_METHODS = {"autograd": lambda nodes, outs: _autograd(_Indexed(nodes, outs)),
            "reverse_dfs": _reverse_dfs}


def search_tasks(nodes: Sequence[Node], outputs: Iterable[Node]
                 ) -> tuple[list[Node | None], list[int], list[int], list[int]]:
    """The op graph as the task graph of seed 002's exact search (``needs``, ``cost``, ``delta`` of
    :func:`~memlab.scheduling.subsets.min_peak_search`), with the tasks: every computed node of
    ``nodes``, then one free task (None) per value read by several ops.

    Running op ``n`` needs its output's bytes and its workspace on top of what is held (``cost``);
    after it, the inputs it was the only reader of are freed (``delta``). A value with several readers is freed
    by its free task, which needs all of them and costs nothing: the search puts it right after
    the last one when that helps, so its least peak is the op graph's. Outputs are never freed.
    """
    ops = [n for n in nodes if n.op.computes]
    bit = {n: 1 << i for i, n in enumerate(ops)}
    outs = set(outputs)
    ins = {n: [x for x in _distinct(n) if x in bit] for n in ops}
    readers: dict[Node, list[Node]] = {n: [] for n in ops}
    for n in ops:
        for x in ins[n]:
            readers[x].append(n)
    once = {x for x in ops if x not in outs and len(readers[x]) == 1}
    tasks: list[Node | None] = list(ops)
    needs = [sum(bit[x] for x in ins[n]) for n in ops]
    cost = [n.nbytes + workspace_of(n) for n in ops]
    delta = [n.nbytes - sum(x.nbytes for x in ins[n] if x in once) for n in ops]
    for x in ops:
        if x not in outs and len(readers[x]) > 1:
            tasks.append(None)
            needs.append(sum(bit[r] for r in readers[x]))
            cost.append(0)
            delta.append(-x.nbytes)
    return tasks, needs, cost, delta


def _exact(nodes: list[Node], outs: list[Node], max_ops: int) -> list[Node]:
    """Given values first, then the ops in the order of least peak (:func:`search_tasks`)."""
    tasks, needs, cost, delta = search_tasks(nodes, outs)
    if len(tasks) > max_ops:
        ops = sum(t is not None for t in tasks)
        raise PlanError(f"method='exact' searches every set of ops that can run first; this graph has "
                        f"{len(tasks)} search tasks ({ops} ops and {len(tasks) - ops} values read by "
                        f"several ops), above the limit max_ops={max_ops}")
    found = min_peak_search(needs, cost, delta)
    return [n for n in nodes if not n.op.computes] + [tasks[i] for i in found.order
                                                       if tasks[i] is not None]

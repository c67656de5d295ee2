"""The execution order of the op graph, chosen for its peak memory (scheduling slides, part 1; Liu 1987).

Seed 002's "Sequential problem": even on one processor, the order in which a task graph runs sets
its **peak memory**, and finding the order of least peak is NP-complete on general DAGs ("Research
problems"); on trees, Liu's best post-order is optimal and a plain depth-first post-order may not
be. The op graph of a training step is such a task graph: a computed value is alive from the step
that computes it to its last reader (graph outputs: to the end; placeholders and constants cost
nothing: the one rule of :mod:`.liveness`). The depth-first order (:func:`~memlab.graph.topo_order`)
visits the outputs in the order they are listed, so on
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
* ``"dfs"``: the depth-first post-order (:func:`~memlab.graph.topo_order`);
* ``"best"`` (default): the one of these with the least peak on the graph at hand (ties in that
  order of preference: dfs, reverse_dfs, autograd, greedy), so never above depth-first; on graphs
  of at most :data:`SIFT_NODES` nodes, then improved by moving single ops while the peak falls
  (a local search, not an exact one);
* ``"exact"``: the least peak over every order, by the one exact search of the scheduling slides
  (:func:`~memlab.scheduling.subsets.min_peak_search`) on the op graph seen as a task graph
  (:func:`~.liveness.search_tasks`); exponential, so refused above :data:`MAX_EXACT_OPS` search tasks.

Every method works on the graph's integer form (:class:`~.liveness.IndexedGraph`, one walk) and
measures an order's peak with its one rule (:meth:`~.liveness.IndexedGraph.peak`).
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from heapq import heapify, heappop, heappush
from typing import Iterable, Iterator, Sequence

import numpy as np

from ..errors import PlanError
from ..graph import Node, as_list, check_order
from ..graph.autodiff import adjoints_for, rebuilt_from_each
from ..scheduling.subsets import min_peak_search
from .liveness import IndexedGraph, Liveness, prepare, search_tasks

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
    low (scheduling slides, "Sequential problem"; methods in the module docstring). ``max_ops`` bounds the
    search of ``method="exact"``; a bigger graph raises :class:`~memlab.errors.PlanError`.
    """
    if method not in METHODS:
        raise PlanError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    graph = IndexedGraph(outputs)
    nodes = graph.nodes
    return list(map(nodes.__getitem__, order_indices(graph, method, max_ops)))


def order_indices(graph: IndexedGraph, method: str, max_ops: int = MAX_EXACT_OPS) -> list[int]:
    """:func:`memory_order`'s order on the graph's integer form (indices of ``graph.nodes``)."""
    if method == "dfs":
        return list(range(len(graph)))
    if method == "exact":
        return _exact(graph, max_ops)
    if method == "reverse_dfs":
        return _postorder(graph, graph.outs[::-1])
    with _collector_paused():
        if method == "greedy":
            return _greedy(graph)
        if method == "autograd":
            return _autograd(graph)
        orders = [list(range(len(graph))), _postorder(graph, graph.outs[::-1]), _autograd(graph),
                  _greedy(graph)]
        best = min(range(len(orders)), key=lambda k: (graph.peak(orders[k]), k))
        return _sift(graph, orders[best]) if len(graph) <= SIFT_NODES else orders[best]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while the orders are built: they allocate a list or a tuple
    per node and make no cycles, but each of those allocations counts towards a full collection,
    which walks every object alive (on a graph of 1e5 nodes, half the time of "best")."""
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
    name (``"dfs"``: the depth-first order), or an explicit order, checked
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
    """What every planner starts from (:class:`~.liveness.Liveness`) in the order a caller asked
    for (see :func:`resolve_order`): by default :func:`memory_order`'s; the graph is walked once
    and the order chosen on its integer form."""
    if order is None or isinstance(order, str):
        method = check_order_name(order)
        graph = IndexedGraph(outputs)
        return Liveness(graph, order_indices(graph, method))
    return prepare(as_list(outputs), order)


def order_peak(outputs: Node | Iterable[Node], order: Sequence[Node] | str | None = None) -> int:
    """The peak of live bytes of an order (default: :func:`memory_order`'s), as the planners count
    liveness (:meth:`~memlab.memory.liveness.Liveness.peak`; the scheduling slides "Peak Memory")."""
    return plan_liveness(outputs, order).peak()


def _postorder(graph: IndexedGraph, roots: Sequence[int]) -> list[int]:
    """The depth-first post-order of the graph's integer form visiting ``roots`` in turn (as
    :func:`~memlab.graph.topo_order` does on the nodes)."""
    ins = graph.ins
    seen = bytearray(len(ins))
    order: list[int] = []
    append = order.append
    stack: list[tuple[int, Iterator[int]]] = []
    push, pop = stack.append, stack.pop
    for root in roots:
        if seen[root]:
            continue
        seen[root] = 1
        node, inputs = root, iter(ins[root])
        while True:
            for x in inputs:
                if not seen[x]:
                    seen[x] = 1
                    xs = ins[x]
                    if xs:
                        push((node, inputs))
                        node, inputs = x, iter(xs)
                        break
                    append(x)                       # no inputs: done at once
            else:
                append(node)
                if not stack:
                    break
                node, inputs = pop()
    return order


def _sift(graph: IndexedGraph, order: list[int], passes: int = 8) -> list[int]:
    """Local search on a small graph: move one op to another place between its last input and
    its first reader, keeping the first move that lowers the peak, until no move does (or
    ``passes`` sweeps). bench/orders.py: on random op graphs of 8-14 ops the best heuristic order
    is 7% above the exact minimum on average, sifted 4%."""
    cur = list(order)
    best = graph.peak(cur)
    ins = graph.ins
    for _ in range(passes):
        moved = False
        for v in range(len(cur)):
            pos = {x: k for k, x in enumerate(cur)}
            i = pos[v]
            lo = max((pos[x] for x in ins[v]), default=-1) + 1
            hi = min((k for k, x in enumerate(cur) if v in ins[x]), default=len(cur))
            rest = cur[:i] + cur[i + 1:]
            for j in range(lo, hi):
                if j in (i, i + 1):
                    continue                    # the same order
                k = j if j < i else j - 1
                trial = rest[:k] + [v] + rest[k:]
                peak = graph.peak(trial)
                if peak < best:
                    best, cur, moved = peak, trial, True
                    break
        if not moved:
            break
    return cur


def _greedy(graph: IndexedGraph) -> list[int]:
    """Of the ready ops, run the one whose step changes the bytes held the least (its output, less
    the inputs it is the last to read); ties to the depth-first position. Each op's score is set
    when it gets ready and lowered (a new heap entry; the stale one is skipped) when an input's
    other readers have all run. Plain integer loops over the graph's index lists; a heap entry is
    the one integer ``score * V + node`` (``V`` nodes), which orders as ``(score, node)``."""
    ins, size, readers = graph.ins, graph.size, graph.readers
    v = len(ins)
    left = [len(r) for r in readers]                        # readers yet to run
    waiting = [len(xs) for xs in ins]                       # inputs yet to run
    frees = size[:]                                         # bytes freed after the last reader
    for o in graph.outs:
        frees[o] = 0
    entry: list[int | None] = [None] * v                    # a ready op's heap entry, else None
    heap = []
    order: list[int] = []                                   # given values first (see below)
    append = order.append
    for i, w in enumerate(waiting):
        if not w:
            if size[i]:
                entry[i] = e = size[i] * v + i
                heap.append(e)
            else:
                append(i)
    # Their entry would be their index, below every op's (an op's score is at least its bytes
    # until an op has run), so they would leave the heap first, in index order: they skip it
    # unless an op of 0 bytes could tie with them.
    if not all(size[i] for i, w in enumerate(waiting) if w):
        for i in order:
            entry[i] = i
        heap += order
        order.clear()
    for n in order:
        for r in readers[n]:
            w = waiting[r] = waiting[r] - 1
            if not w:
                entry[r] = t = size[r] * v + r
                heap.append(t)
    heapify(heap)
    while heap:
        e = heappop(heap)
        n = e % v
        if entry[n] != e:
            continue                                        # run already, or a stale score
        entry[n] = None
        append(n)
        for x in ins[n]:
            k = left[x] = left[x] - 1
            if k == 1 and frees[x]:                         # its last reader will free it
                for r in readers[x]:
                    if waiting[r]:
                        break                               # not ready yet: scored when it is
                    t = entry[r]
                    if t is not None:
                        t = entry[r] = t - frees[x] * v
                        heappush(heap, t)
                        break
        for r in readers[n]:
            w = waiting[r] = waiting[r] - 1
            if not w:
                t = size[r]
                for x in ins[r]:
                    if left[x] == 1:
                        t -= frees[x]
                entry[r] = t = t * v + r
                heappush(heap, t)
    return order


def _autograd(graph: IndexedGraph) -> list[int]:
    """The autograd engine's order (module docstring). A backward op's group is the sequence
    number (creation id) of the forward node whose gradient it reads, the least over its inputs (a
    sum of gradient parts completes with its last part); an op made for the backward pass that
    reads only forward values (a softmax or a mask in a gradient, a recomputed copy) joins its
    first reader's group. Ops run by (forward first, group descending, creation id), each as soon
    as its inputs have run; a node rebuilt by a rewrite (:func:`~memlab.graph.rebuilt_from`) keeps
    the creation id and the gradient of the node it rebuilds."""
    nodes, ins = graph.nodes, graph.ins
    v = len(nodes)
    origin = rebuilt_from_each(nodes)
    ids = [o.id for o in origin]
    # original -> its index here (the graph's own index when no node is a rebuilt copy)
    version = (graph.index if origin is nodes else dict(zip(origin, range(v)))).get
    grad_of = [-1] * v                                      # a gradient -> its value's id
    start = v                                               # the first gradient's index
    for k, targets in adjoints_for(origin).items():         # the adjoints of this graph
        at = [i for i in map(version, targets) if i is not None]
        if at:
            grad_of[k] = nodes[max(at)].id                  # shared: the last of its values
            if k < start:
                start = k
    if start == v:
        return _by_key(graph, ids)
    none = 1 << 62                                          # no group: a forward node
    group = [none] * v                                      # a backward op's group
    inherit = [none] * v                                    # what a reader's group takes from it
    # a group comes from a gradient up the inputs: every node before the first one has none
    for i in range(start, v):
        xs = ins[i]
        if len(xs) == 1:
            g = inherit[xs[0]]
        elif xs:
            g = min([inherit[x] for x in xs])
        else:
            g = none
        s = grad_of[i]
        if s >= 0:
            inherit[i] = s
            if g == none:
                g = s                                       # the seed of the backward pass
        else:
            inherit[i] = g
        group[i] = g
    first_reader = [-1] * v
    forward_read = bytearray(v)
    for o in graph.outs:
        forward_read[o] = 1
    for i, g, xs in zip(range(v - 1, -1, -1), reversed(group), reversed(ins)):
        if g == none:
            if first_reader[i] >= 0 and not forward_read[i] and nodes[i].op.computes:
                g = group[i] = first_reader[i]              # made for the backward pass
            else:
                for x in xs:
                    forward_read[x] = 1
                continue
        for x in xs:
            if first_reader[x] < g:
                first_reader[x] = g
    span = max(ids) + 1                     # the key (forward first, -group, id) as one int
    top = (max(g for g in group if g != none) + 1) * span
    return _by_key(graph, [k if g == none else top - g * span + k for g, k in zip(group, ids)])


def _by_key(graph: IndexedGraph, key: list[int]) -> list[int]:
    """The topological order that runs, at each step, the ready node of least ``key`` (ties to the
    depth-first position): a Kahn sort whose heap holds each node's rank in that sort order. When
    every node ranks after its inputs, the least unrun node is always ready, and that order is
    the sorted one itself (the autograd key on a training graph: no heap needed)."""
    n = len(key)
    try:
        keys = np.array(key, np.int64)
    except OverflowError:                                   # ids beyond 64 bits: sort in Python
        keys = None
    if keys is not None:
        ranked = np.argsort(keys, kind="stable")           # stable: ties keep depth-first order
        rank_of = np.empty(n, np.int64)
        rank_of[ranked] = np.arange(n)
        src, dst = graph.edges
        by_rank = ranked.tolist()
        if bool((rank_of[src] < rank_of[dst]).all()):
            return by_rank
        rank = rank_of.tolist()
    else:
        by_rank = sorted(range(n), key=key.__getitem__)
        rank = [0] * n
        for r, i in enumerate(by_rank):
            rank[i] = r
        if all(rank[x] < r for r, xs in zip(rank, graph.ins) for x in xs):
            return by_rank
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
    return order


def _exact(graph: IndexedGraph, max_ops: int) -> list[int]:
    """Given values first, then the ops in the order of least peak (:func:`~.liveness.search_tasks`)."""
    tasks, needs, cost, delta = search_tasks(graph)
    if len(tasks) > max_ops:
        ops = sum(t is not None for t in tasks)
        raise PlanError(f"method='exact' searches every set of ops that can run first; this graph has "
                        f"{len(tasks)} search tasks ({ops} ops and {len(tasks) - ops} values read by "
                        f"several ops), above the limit max_ops={max_ops}")
    found = min_peak_search(needs, cost, delta)
    given = [i for i, n in enumerate(graph.nodes) if not n.op.computes]
    return given + [t for t in (tasks[i] for i in found.order) if t is not None]

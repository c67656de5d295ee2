"""Liveness: which values are alive at each step of an order, and their bytes (CSE599G1 lecture 7,
p.17-22; the scheduling slides, "Peak Memory").

The one rule of memory in memlab, written here once and called by every order, planner, bound,
solver and report:

* a computed value costs its bytes; a **given** value (placeholder, constant) costs nothing;
* an op reads each of its inputs once, even ``x * x`` (:func:`distinct_inputs`), so a value's
  **reference count** is its number of distinct consumers (p.22's initial state);
* a value is alive from the step that computes it to the step of its **last reader**, both
  included; a graph output to the end (step ``len(order)``);
* an op's **workspace** (:mod:`memlab.graph.workspace`, scratch such as cuDNN's) is alive during
  its own step only;
* **in place** (p.19-20): when an op is the last reader of an input it may overwrite, of its own
  size (:meth:`IndexedGraph.partners`), the two may share one block, and the bytes of that step
  count it once.

:class:`IndexedGraph` holds a graph on integers (one depth-first walk); :meth:`IndexedGraph.steps`
gives each value's first and last step in an order, :meth:`IndexedGraph.step_bytes` the bytes alive
at every step (its maximum: the order's **peak**), :func:`search_tasks` the incremental form the
exact order search runs on. :class:`Liveness` is the same for one order, node by node, as the
planners and runners read it (:func:`prepare`).
"""
from __future__ import annotations

from functools import cached_property
from itertools import chain, compress
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..errors import PlanError
from ..graph import Node, as_list, check_order
from ..graph.traverse import indexed_walk
from ..graph.node import Op


def distinct_inputs(node: Node) -> Sequence[Node]:
    """``node``'s inputs, each once: ``x * x`` reads ``x`` once (one reference, p.22)."""
    inputs = node.inputs
    if len(inputs) < 2:
        return inputs
    if len(inputs) == 2:
        return inputs if inputs[0] is not inputs[1] else inputs[:1]
    return tuple(dict.fromkeys(inputs))


class IndexedGraph:
    """The graph ``outputs`` need, on integers: node ``i`` is the ``i``-th of the depth-first
    post-order ``nodes`` (:func:`~memlab.graph.topo_order`'s, found by the same walk); ``ins[i]``
    its distinct inputs, ``readers[i]`` its distinct readers, ``size[i]`` its bytes (0 for a given
    value), ``work[i]`` its workspace, ``outs`` the outputs. Raises
    :class:`~memlab.errors.CycleError` naming a node on a cycle."""

    def __init__(self, outputs: Node | Iterable[Node]) -> None:
        self.outputs = outs = as_list(outputs)
        nodes, state, self.ins, self.readers = indexed_walk(outs)
        self.nodes, self.index = nodes, state
        self.size = [n.nbytes if n.op.computes else 0 for n in nodes]
        # ``op.workspace(node)``, read from ``attrs`` without the call when the op keeps Op's rule
        base = Op.workspace
        self.work = [0 if not n.op.computes else
                     (n.attrs.get("workspace", 0) if n.attrs else 0)
                     if type(n.op).workspace is base else n.op.workspace(n) for n in nodes]
        self.outs = list(dict.fromkeys(state[o] for o in outs))
        self._edges: tuple[np.ndarray, np.ndarray] | None = None
        self._bytes: np.ndarray | None = None          # ``size`` as an array (every peak reads it)
        self._candidates: dict[int, list[int]] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """``(src, dst)``: one entry per input of every node, ``src[e]`` read by ``dst[e]``."""
        if self._edges is None:
            counts = np.fromiter(map(len, self.ins), np.int64, len(self.ins))
            self._edges = (np.fromiter(chain.from_iterable(self.ins), np.int64, int(counts.sum())),
                           np.repeat(np.arange(len(self.ins)), counts))
        return self._edges

    def positions(self, order: Sequence[Node]) -> list[int]:
        """The indices of the nodes of ``order`` (a node order of this graph)."""
        return list(map(self.index.__getitem__, order))

    def steps(self, order: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """``(first, last)``: the step of each node in ``order`` (a permutation of ``range(len)``
        with inputs first) and the step of its last reader: itself when nothing reads it,
        ``len(order)`` for an output (kept to the end)."""
        v = len(self.nodes)
        src, dst = self.edges
        first = np.empty(v, np.int64)
        first[np.asarray(order, np.int64)] = np.arange(v)
        last = first.copy()
        np.maximum.at(last, src, first[dst])
        last[self.outs] = v
        return first, last

    def candidates(self, i: int) -> list[int]:
        """The computed inputs op ``i`` may write its output over if it is their last reader
        (:func:`inplace_candidates`), as indices."""
        c = self._candidates.get(i)
        if c is None:
            index = self.index
            c = self._candidates[i] = [index[x] for x in inplace_candidates(self.nodes[i])]
        return c

    def partner(self, i: int, step: int, last: Sequence[int],
                accept: Callable[[int, int], bool] | None = None) -> int:
        """The input op ``i`` writes its output over at ``step`` (p.19-20), or -1 (the rule of
        :meth:`partners`, at one step)."""
        return self.partners([i], last, accept, step)[0]

    def partners(self, order: Sequence[int], last: Sequence[int],
                 accept: Callable[[int, int], bool] | None = None, start: int = 0) -> list[int]:
        """For each step of ``order`` (numbered from ``start``), the input its op writes its output
        over (p.19-20), or -1: the first of the op's :meth:`candidates` whose last reader
        (``last``: steps, :meth:`steps`) is this step, so never an output (kept to the end) nor
        a value read again later; ``accept(i, x)`` may refuse a candidate ``x`` of op ``i``
        (colours, p.24). A given value (0 bytes) has none. The candidates are looked up only at
        a step where some input of the op's size dies (on a big graph, most steps have none)."""
        size, ins, found = self.size, self.ins, self._candidates
        out = [-1] * len(order)
        for k, i in enumerate(order):
            s = size[i]
            if not s:
                continue
            step = start + k
            for x in ins[i]:
                if last[x] == step and size[x] == s:
                    break
            else:
                continue
            c = found.get(i)
            if c is None:
                c = self.candidates(i)
            for x in c:
                if last[x] == step and (accept is None or accept(i, x)):
                    out[k] = x
                    break
        return out

    def step_bytes(self, order: Sequence[int], inplace: bool = False) -> np.ndarray:
        """**The rule**: bytes alive at each step ``0 .. len(order)`` of ``order`` (the last entry:
        the outputs kept to the end): every computed value from its step to its last reader's,
        each op's workspace at its step, and, with ``inplace``, an input the op writes over
        (:meth:`partners`) counted once with its output at that step (p.20). Its maximum is the
        order's peak (scheduling slides, "Sequential problem")."""
        first, last = self.steps(order)
        v = len(self.nodes)
        if self._bytes is None:
            self._bytes = np.asarray(self.size, np.int64)
        curve = live_curve(first, last, self._bytes, v + 1)
        if any(self.work):
            np.add.at(curve, first, np.asarray(self.work, np.int64))
        if inplace:
            size = self.size
            for step, x in enumerate(self.partners(order, last.tolist())):
                if x >= 0:
                    curve[step] -= size[x]
        return curve

    def peak(self, order: Sequence[int], inplace: bool = False) -> int:
        """The most bytes alive at any step of ``order`` (:meth:`step_bytes`)."""
        return int(self.step_bytes(order, inplace).max(initial=0))


def live_curve(first: Sequence[int] | np.ndarray, last: Sequence[int] | np.ndarray,
               size: Sequence[int] | np.ndarray, steps: int) -> np.ndarray:
    """Bytes alive at each of ``steps`` steps when value ``k`` of ``size[k]`` bytes is alive from
    step ``first[k]`` to step ``last[k]`` included: the sweep of :meth:`IndexedGraph.step_bytes`."""
    first, last, size = (np.asarray(v, np.int64) for v in (first, last, size))
    delta = np.zeros(steps + 1, np.int64)
    np.add.at(delta, first, size)
    np.add.at(delta, last + 1, -size)
    return np.cumsum(delta[:steps])


class Liveness:
    """One order of one graph, as every planner starts from it (:func:`prepare`): the graph's
    ``outputs``, the ``order`` (nodes; ``indices``: the same as :class:`IndexedGraph` indices),
    ``first`` and ``last_step`` (lists, by index: :meth:`IndexedGraph.steps`). Worked out when
    first asked: ``last``, the **last reader** of each value (the op at whose step its reference
    count reaches 0, the value itself when nothing reads it, None for a graph output), ``sizes``,
    ``refcounts`` and ``workspaces``. Plans keep the liveness they were made from
    (``plan.liveness``; :func:`liveness_of`)."""

    def __init__(self, graph: IndexedGraph, indices: list[int]) -> None:
        self.graph, self.indices = graph, indices
        self.outputs = graph.outputs
        nodes = graph.nodes
        self.order = list(map(nodes.__getitem__, indices))
        first, last = graph.steps(indices)
        self.first, self.last_step = first.tolist(), last.tolist()

    @cached_property
    def last(self) -> dict[Node, Node | None]:
        """The last reader of every node of the order (None for a graph output)."""
        order, end = self.order, len(self.order)
        return {n: None if s == end else order[s]
                for n, s in zip(self.graph.nodes, self.last_step)}

    @cached_property
    def sizes(self) -> dict[Node, int]:
        """Bytes of every computed value, in order; :class:`PlanError` for a size of 0 or less."""
        sizes = {n: n.nbytes for n in self.order if n.op.computes}
        if sizes and min(sizes.values()) <= 0:
            check_size(next(n for n, b in sizes.items() if b <= 0))
        return sizes

    @cached_property
    def computed(self) -> list[Node]:
        """The computed values of the order, in order (after :meth:`check_sizes`: the nodes of
        positive size)."""
        return list(compress(self.order, map(self.graph.size.__getitem__, self.indices)))

    @cached_property
    def refcounts(self) -> dict[Node, int]:
        """Reference counts before the first step (:func:`reference_counts`, p.22), worked out
        when first asked and shared by the plan (``initial_refcount``) and its runner."""
        return reference_counts(self.order)

    @cached_property
    def workspaces(self) -> dict[Node, int]:
        """Bytes of workspace of every op that has one, in order: alive during its step only."""
        work = self.graph.work
        return {self.order[s]: work[i] for s, i in enumerate(self.indices) if work[i] > 0}

    def lifetimes(self) -> dict[Node, tuple[int, int]]:
        """``(first, last)`` step of each computed value, in order (see :func:`lifetimes`)."""
        first, last, nodes = self.first, self.last_step, self.graph.nodes
        return {nodes[i]: (first[i], last[i]) for i in self.indices if nodes[i].op.computes}

    def clusters(self, inplace: bool = True) -> list[list[int]]:
        """Computed values (indices) grouped into in-place chains (p.19), in order: each op
        joins the chain of the input it writes over (:meth:`IndexedGraph.partners`) when that
        input ends its chain. Each chain can live in one block."""
        g, order = self.graph, self.indices
        size = g.size
        partners = g.partners(order, self.last_step) if inplace else [-1] * len(order)
        chain_of: dict[int, int] = {}
        chains: list[list[int]] = []
        for i, x in zip(order, partners):
            if not size[i]:
                continue
            if x >= 0 and chains[chain_of[x]][-1] == x:
                chain_of[i] = chain_of[x]
                chains[chain_of[x]].append(i)
            else:
                chain_of[i] = len(chains)
                chains.append([i])
        return chains

    def live_bytes(self, inplace: bool = False) -> np.ndarray:
        """Bytes alive at each step ``0 .. len(order)`` (:meth:`IndexedGraph.step_bytes`); its
        maximum is the order's **peak memory**; ``inplace``: in-place pairs counted once."""
        return self.graph.step_bytes(self.indices, inplace)

    def peak(self, inplace: bool = False) -> int:
        """The most bytes alive at any step of the order (:meth:`live_bytes`)."""
        return int(self.live_bytes(inplace).max(initial=0))

    def check_sizes(self) -> None:
        """:class:`PlanError` naming a computed value of 0 bytes or less (a planned value needs
        a positive size)."""
        for i in self.indices:
            n = self.graph.nodes[i]
            if n.nbytes <= 0 and n.op.computes:
                check_size(n)


def check_size(node: Node) -> int:
    """``node.nbytes``, or a :class:`PlanError` naming the node when it is 0 or less."""
    if node.nbytes <= 0:
        raise PlanError(f"node {node.name!r} has size {node.nbytes} bytes (shape "
                        f"{list(node.shape)}); a planned value needs a positive size")
    return node.nbytes


def prepare(outputs: Node | Iterable[Node], order: Sequence[Node] | None = None,
            trusted: bool = False, graph: IndexedGraph | None = None) -> Liveness:
    """The :class:`Liveness` of ``order`` (default: the depth-first order, found by the walk that
    indexes the graph). Planners start from :func:`~memlab.memory.order.plan_liveness`, which
    picks the memory-aware order by default.

    Raises :class:`~memlab.errors.CycleError` or :class:`PlanError` naming the node when the graph
    has a cycle or the order is not topological; ``trusted``: an order the library has just built,
    not checked again; ``graph``: the :class:`IndexedGraph` of ``outputs`` when already built.
    """
    graph = graph if graph is not None else IndexedGraph(outputs)
    if order is None:
        return Liveness(graph, list(range(len(graph))))
    order = list(order) if trusted else check_order(graph.outputs, order)
    return Liveness(graph, graph.positions(order))


def reference_counts(order: Sequence[Node]) -> dict[Node, int]:
    """Reference counts before the first step: distinct consumers of every value (p.22)."""
    ref: dict[Node, int] = {}
    get = ref.get
    for n in order:
        for x in distinct_inputs(n):
            ref[x] = get(x, 0) + 1
    return ref


def lifetimes(order: Sequence[Node], outputs: Iterable[Node]) -> dict[Node, tuple[int, int]]:
    """``(first, last)`` step of each computed value in ``order``: from the step that computes it to
    the step of its last consumer (graph outputs: to ``len(order)``, the end)."""
    return prepare(outputs, order).lifetimes()


def inplace_candidates(node: Node) -> list[Node]:
    """The computed inputs ``node`` may write its output over if it is their last reader: in the
    positions ``node.op.inplace(node)`` allows, of ``node``'s bytes (each once). The rule of
    :meth:`IndexedGraph.partners`, before knowing which inputs die at ``node``."""
    op = node.op
    if type(op).inplace is Op.inplace:
        return []                                # the op keeps Op's rule: never in place
    found: list[Node] = []
    inputs, nbytes = node.inputs, node.nbytes
    for i in op.inplace(node):
        x = inputs[i]
        if x.nbytes == nbytes and x.op.computes and x not in found:
            found.append(x)
    return found


def inplace_clusters(liveness: Liveness, inplace: bool = True) -> list[list[Node]]:
    """Computed values grouped into in-place chains (p.19): each chain can live in one block
    (:meth:`Liveness.clusters`, as nodes)."""
    nodes = liveness.graph.nodes
    return [[nodes[i] for i in c] for c in liveness.clusters(inplace)]


def search_tasks(graph: IndexedGraph) -> tuple[list[int | None], list[int], list[int], list[int]]:
    """The rule in the incremental form of the scheduling slides' exact search (``needs``, ``cost``, ``delta``
    of :func:`~memlab.scheduling.subsets.min_peak_search`), with the tasks: every computed node
    (its index), then one free task (None) per value read by several ops.

    Running op ``i`` holds its output's bytes and its workspace on top of what is held (``cost``);
    after it, the inputs it was the only reader of are freed (``delta``). A value with several
    readers is freed by its free task, which needs all of them and costs nothing: the search puts
    it right after the last one when that helps, so its least peak is the least
    :meth:`IndexedGraph.peak` over the orders of the graph. Outputs are never freed.
    """
    size, work, ins = graph.size, graph.work, graph.ins
    ops = [i for i, n in enumerate(graph.nodes) if n.op.computes]
    bit = {i: 1 << k for k, i in enumerate(ops)}
    outs = set(graph.outs)
    readers = graph.readers
    shared = [x for x in ops if x not in outs and len(readers[x]) > 1]
    once = {x for x in ops if x not in outs and len(readers[x]) == 1}
    tasks: list[int | None] = list(ops)
    needs = [sum(bit[x] for x in ins[i] if x in bit) for i in ops]
    cost = [size[i] + work[i] for i in ops]
    delta = [size[i] - sum(size[x] for x in ins[i] if x in once) for i in ops]
    for x in shared:
        tasks.append(None)
        needs.append(sum(bit[r] for r in readers[x]))
        cost.append(0)
        delta.append(-size[x])
    return tasks, needs, cost, delta


def kept_liveness(plan: Any) -> Liveness | None:
    """The :class:`Liveness` a planner kept in ``plan`` (``plan.liveness``), or None for a plan
    without one or whose outputs or order were replaced since."""
    live = getattr(plan, "liveness", None)
    if live is not None and live.order is plan.order and live.outputs is plan.outputs:
        return live
    return None


def liveness_of(plan: Any) -> Liveness:
    """The liveness of ``plan``: the one its planner kept (:func:`kept_liveness`), else
    :func:`prepare`'s for its outputs and order."""
    return kept_liveness(plan) or prepare(plan.outputs, plan.order)

"""Traversal of the op graph: topological order, consumers, user-given orders.

The executor and every planner walk the graph "by topo order" (CSE599G1
lecture 7, p.12); :func:`consumers` gives who reads each value, the basis of
reference counts (p.22) and lifetimes.
"""
from __future__ import annotations

import heapq
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..errors import CycleError, GraphError, PlanError, check_callable, check_list
from .node import Node


def as_list(outputs: Node | Iterable[Node]) -> list[Node]:
    """``outputs`` as a list of nodes (one node or a list of them), else :class:`GraphError`."""
    if isinstance(outputs, Node):
        return [outputs]
    if isinstance(outputs, (str, bytes, dict)) or not isinstance(outputs, Iterable):
        raise GraphError(f"outputs must be a Node or a list of Nodes, got {type(outputs).__name__} "
                         f"{outputs!r:.60}")
    out = list(outputs)
    for i, x in enumerate(out):
        if not isinstance(x, Node):
            raise GraphError(f"output {i} is {type(x).__name__}, not a Node")
    return out


def topo_order(outputs: Node | Iterable[Node]) -> list[Node]:
    """Every node the outputs depend on, each after its inputs (p.12 "traverse by topo order").

    Depth-first post-order, iterative so deep graphs do not hit the recursion
    limit. Raises :class:`CycleError` naming a node on the cycle.
    """
    return indexed_walk(as_list(outputs), edges=False)[0]


def last_readers(outputs: Node | Iterable[Node], order: Sequence[Node] | None = None,
                 trusted: bool = False) -> tuple[list[Node], dict[Node, Node]]:
    """An execution order (``order``, else :func:`topo_order`'s) and the **last reader** of every
    node in it: the last node of the order that takes it as an input, or the node itself when
    nothing reads it. A value's reference count (p.22) reaches 0 at its last reader; planners
    release its memory there. Without ``order``: one walk of the graph, then one pass over its
    order. ``order`` is checked (:func:`check_order`) unless ``trusted`` (an order this library
    has just built)."""
    if order is None:
        order = topo_order(outputs)
    elif not trusted:
        order = check_order(outputs, order)
    else:
        order = list(order)
    last: dict[Node, Node] = {}
    for n in order:
        last[n] = n
        for x in n.inputs:           # the order is topological, so the last reader wins
            last[x] = n
    return order, last


def indexed_walk(outputs: list[Node], edges: bool = True
                 ) -> tuple[list[Node], dict[Node, int], list[list[int]], list[list[int]]]:
    """The one depth-first walk of the graph, behind :func:`topo_order`, :func:`last_readers` and
    the planners' integer form (:class:`~memlab.memory.liveness.IndexedGraph`): ``(nodes, index,
    ins, readers)``, the post-order, each node's position in it and, with ``edges``, each node's
    distinct inputs and distinct readers as positions (``x * x`` reads ``x`` once; without
    ``edges`` both lists stay empty). Iterative, so deep graphs do not hit the recursion limit.
    Raises :class:`CycleError` naming a node on a cycle."""
    nodes: list[Node] = []
    ins: list[list[int]] = []
    readers: list[list[int]] = []        # each node's distinct readers, in the order of nodes
    state: dict[Node, int] = {}          # -1 while its inputs are visited, then its index
    get = state.get
    stack: list[tuple[Node, Iterator[Node]]] = []   # the nodes being visited, and where
    push, pop = stack.append, stack.pop
    for root in outputs:
        if root in state:
            continue
        state[root] = -1
        node, inputs = root, iter(root.inputs)
        while True:
            for child in inputs:         # resumes where this node's last visit stopped
                s = get(child)
                if s is None:
                    xs = child.inputs
                    if xs:
                        state[child] = -1
                        push((node, inputs))
                        node, inputs = child, iter(xs)
                        break
                    state[child] = len(nodes)   # a node without inputs is done at once
                    nodes.append(child)
                    if edges:
                        ins.append([])
                        readers.append([])
                elif s < 0:
                    raise CycleError(f"the graph has a cycle through node {child.name!r}")
            else:
                i = state[node] = len(nodes)
                nodes.append(node)
                if edges:
                    readers.append([])
                    xs = node.inputs     # each input once, as positions
                    if len(xs) == 1:
                        a = state[xs[0]]
                        ins.append([a])
                        readers[a].append(i)
                    elif len(xs) == 2:
                        a, b = state[xs[0]], state[xs[1]]
                        readers[a].append(i)
                        if a == b:
                            ins.append([a])
                        else:
                            ins.append([a, b])
                            readers[b].append(i)
                    elif xs:
                        xs = list(dict.fromkeys([state[x] for x in xs]))
                        ins.append(xs)
                        for a in xs:
                            readers[a].append(i)
                    else:
                        ins.append([])
                if not stack:
                    break
                node, inputs = pop()
    return nodes, state, ins, readers


def priority_order(outputs: Node | Iterable[Node], key: Callable[[Node], Any]) -> list[Node]:
    """A topological order that, of the nodes ready to run, always runs the one of smallest
    ``key(node)`` first (ties: the node built first). Kahn's algorithm with a heap.

    With a key by timestep this is the order a module framework runs an unrolled network in:
    forward step by step, then backward from the last step to the first (OpenNMT).
    """
    check_callable(key, "priority_order: key", GraphError)
    nodes = topo_order(outputs)
    waiting = {n: len(set(n.inputs)) for n in nodes}
    readers: dict[Node, list[Node]] = {n: [] for n in nodes}
    for n in nodes:
        for x in set(n.inputs):
            readers[x].append(n)
    ready = [(key(n), n.id, n) for n in nodes if waiting[n] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        *_, n = heapq.heappop(ready)
        order.append(n)
        for r in readers[n]:
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(ready, (key(r), r.id, r))
    return order


def consumers(order: Sequence[Node]) -> dict[Node, list[Node]]:
    """For each node of ``order``, the nodes of ``order`` that read it (once per use)."""
    out: dict[Node, list[Node]] = {n: [] for n in order}
    for n in order:
        for x in n.inputs:
            if x in out:
                out[x].append(n)
    return out


def check_order(outputs: Node | Iterable[Node], order: Sequence[Node]) -> list[Node]:
    """Validate a user-given execution order: every needed node once, inputs first.

    Raises :class:`~memlab.errors.PlanError` naming the first offending node.
    """
    needed = topo_order(outputs)
    need = set(needed)
    seen: set[Node] = set()
    result = []
    for n in check_list(order, "order", PlanError):
        if not isinstance(n, Node):
            raise PlanError(f"order contains {type(n).__name__}, not a Node")
        if n in seen:
            raise PlanError(f"order lists node {n.name!r} twice")
        if n not in need:
            raise PlanError(f"order lists node {n.name!r}, which the outputs do not need")
        for x in n.inputs:
            if x not in seen:
                raise PlanError(f"order is not topological: node {n.name!r} comes before its input {x.name!r}")
        seen.add(n)
        result.append(n)
    missing = [n.name for n in needed if n not in seen]
    if missing:
        raise PlanError(f"order is missing node(s) {', '.join(map(repr, missing[:5]))}")
    return result

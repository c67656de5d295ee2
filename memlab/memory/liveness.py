"""Liveness: how long each value of the op graph must be kept (CSE599G1 lecture 7, p.17-22).

Written once, used by every planner and runner: the bytes of each computed value, its
**reference count** (how many distinct consumers have yet to run, p.22's initial state) and its
**lifetime** (from the step that computes it to the step of its last consumer; graph outputs live
to the end). An op may write its output over an input it is allowed to overwrite when it is that
input's last consumer (**in-place**, p.19-20); chains of such pairs can share one block.
The independent verifier :mod:`memlab.memory.checkplan` deliberately does not use this module.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

from ..errors import PlanError
from ..graph import Node, as_list, check_order, topo_order


def node_bytes(node: Node) -> int:
    """Bytes of a node's value (``math.prod``: cheaper than ``Node.nbytes`` in the planner's loop)."""
    return math.prod(node.shape) * node.dtype.itemsize


def prepare(outputs: Node | Iterable[Node], order: Sequence[Node] | None) -> tuple[list[Node], list[Node], dict[Node, int]]:
    """Outputs, a validated execution order and the bytes of every computed node.

    Raises :class:`~memlab.errors.CycleError` or :class:`PlanError` naming the
    node when the graph has a cycle, the order is not topological, or a
    computed value has a size of zero or less (nothing to plan for).
    """
    outs = as_list(outputs)
    order = topo_order(outs) if order is None else check_order(outs, order)
    sizes: dict[Node, int] = {}
    for n in order:
        if n.op.computes:
            b = node_bytes(n)
            if b <= 0:
                raise PlanError(f"node {n.name!r} has size {b} bytes (shape {list(n.shape)}); "
                                f"a planned value needs a positive size")
            sizes[n] = b
    return outs, order, sizes


def reference_counts(order: Sequence[Node]) -> dict[Node, int]:
    """Reference counts before the first step: distinct consumers of every value (p.22)."""
    ref: dict[Node, int] = {}
    get = ref.get
    for n in order:
        inputs = n.inputs
        for x in (inputs if len(inputs) < 2 else dict.fromkeys(inputs)):  # x * x: one read
            ref[x] = get(x, 0) + 1
    return ref


def lifetimes(order: Sequence[Node], outputs: Iterable[Node]) -> dict[Node, tuple[int, int]]:
    """``(first, last)`` step of each computed value in ``order``: from the step that computes it to
    the step of its last consumer (graph outputs: to ``len(order)``, the end)."""
    life = {n: [i, i] for i, n in enumerate(order) if n.op.computes}
    for i, n in enumerate(order):
        for x in n.inputs:  # steps only grow, so the last reader wins
            if x in life:
                life[x][1] = i
    for o in outputs:
        if o in life:
            life[o][1] = len(order)
    return {n: (a, b) for n, (a, b) in life.items()}


def inplace_partner(node: Node, life: dict[Node, tuple[int, int]], step: int,
                    sizes: dict[Node, int], outputs: set[Node]) -> Node | None:
    """The input ``node`` may take in place at ``step``: allowed position, dies here, same size."""
    for i in node.op.inplace(node):
        x = node.inputs[i]
        if x in life and x not in outputs and life[x][1] == step and sizes[x] == sizes[node]:
            return x
    return None


def inplace_clusters(order: Sequence[Node], sizes: dict[Node, int], life: dict[Node, tuple[int, int]],
                     outputs: set[Node], inplace: bool = True) -> list[list[Node]]:
    """Computed values grouped into in-place chains (p.19): each chain can live in one block."""
    cluster_of: dict[Node, int] = {}
    clusters: list[list[Node]] = []
    for i, n in enumerate(order):
        if n not in sizes:
            continue
        x = inplace_partner(n, life, i, sizes, outputs) if inplace else None
        if x is not None and clusters[cluster_of[x]][-1] is x:
            cluster_of[n] = cluster_of[x]
            clusters[cluster_of[x]].append(n)
        else:
            cluster_of[n] = len(clusters)
            clusters.append([n])
    return clusters

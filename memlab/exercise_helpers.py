"""The exercises' inputs and brute-force references, which hidden tests import fresh in every tests
cell rather than trusting names of the notebook that a student's cell could have redefined.

* :class:`TagLayout` lays out exercise 03's tag plan (storages one after another, aligned as the
  planner aligns them, lecture 7 p.22) so that :func:`memlab.check_plan` and the arena runner read it;
* :func:`random_graph` draws the random graphs of exercises 03 and 04;
* :func:`all_paths` lists every path of a graph by brute force (exercise 04's check).

:mod:`memlab.testing` exports them too, under the names the hidden tests import.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from .graph import Node, add, exp, matmul, mul, placeholder, pool, relu, sigmoid, sub, tanh
from .memory.plan import align

__all__ = ["TagLayout", "random_graph", "all_paths"]


class TagLayout:
    """A tag plan in the form :func:`memlab.check_plan` and ``Executor(plan=...)`` read: storages laid
    out one after another in the order of their tags, each starting at a multiple of the planner's
    :data:`~memlab.memory.plan.ALIGN` bytes (exercise 03's ``TagPlan``, lecture 7 p.22)."""

    def __init__(self, outputs: Sequence[Node], order: Sequence[Node], storage: dict,
                 storage_bytes: dict, inplace: bool = True) -> None:
        self.outputs, self.order = list(outputs), list(order)
        self.storage, self.storage_bytes, self.inplace = dict(storage), dict(storage_bytes), inplace
        start, pos = {}, 0
        for tag in sorted(self.storage_bytes):
            start[tag] = pos
            pos += align(int(self.storage_bytes[tag]))
        self.offset = {n: start[t] for n, t in self.storage.items()}
        self.total_bytes = pos
        self.num_storages = len(self.storage_bytes)


def random_graph(seed: int, n: int = 30, shape: Sequence[int] = (8, 8), branchy: bool = False) -> list[Node]:
    """A random graph of *n* ops on values of one shape (the exercises' test graphs).

    ``branchy=False`` (exercise 03): ops read the last six values, outputs are the last value and two
    random ones.  ``branchy=True`` (exercise 04): ops read any value, every value nobody reads is an output.
    """
    rng = np.random.default_rng(seed)
    nodes = [placeholder(f"in{i}", shape) for i in range(2 if branchy else 3)]
    unary = [exp, sigmoid, relu, pool] if branchy else [exp, sigmoid, tanh, pool, relu]
    binary = [add, mul] if branchy else [add, mul, matmul, sub]
    for i in range(n):
        def pick() -> Node:
            lo = 0 if branchy else max(0, len(nodes) - 6)
            return nodes[int(rng.integers(lo, len(nodes)))]
        if rng.random() < (0.6 if branchy else 0.5):
            nodes.append(unary[int(rng.integers(len(unary)))](pick(), name=f"v{i}"))
        else:
            nodes.append(binary[int(rng.integers(len(binary)))](pick(), pick(), name=f"v{i}"))
    if branchy:
        used = {id(x) for v in nodes for x in v.inputs}
        return [v for v in nodes[2:] if id(v) not in used]
    outs = [nodes[-1]] + [nodes[int(k)] for k in rng.integers(3, len(nodes) - 1, 2)]
    return list({id(v): v for v in outs}.values())


def all_paths(order: Sequence[Node]) -> Iterator[list[Node]]:
    """Every path of the graph (lists of nodes, each an input of the next), by brute force."""
    readers: dict[int, list[Node]] = {id(n): [] for n in order}
    for n in order:
        for x in {id(x): x for x in n.inputs}.values():
            readers[id(x)].append(n)
    stack = [[n] for n in order]
    while stack:
        p = stack.pop()
        yield p
        stack.extend(p + [r] for r in readers[id(p[-1])])

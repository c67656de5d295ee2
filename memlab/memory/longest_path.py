"""Longest-path colouring (CSE599G1 lecture 7, p.24): the concurrency-aware sharing heuristic.

Take the longest path (reward 1 per op), give it a colour, reset its nodes' rewards to 0, repeat;
the planner then shares memory only within a colour, so the coloured paths can run in parallel.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..graph import Node, topo_order


def node_colors(order: Sequence[Node], colors: int) -> dict[Node, int]:
    """Colour of every computed node: ``colors - 1`` longest paths, the rest the last colour (p.24)."""
    reward = {n: (1 if n.op.computes else 0) for n in order}
    color: dict[Node, int] = {}
    for c in range(colors - 1):
        best: dict[Node, int] = {}
        prev: dict[Node, Node | None] = {}
        for n in order:
            p = max(n.inputs, key=lambda x: best.get(x, 0), default=None)
            base = best.get(p, 0) if p is not None else 0
            best[n] = base + reward[n]
            prev[n] = p if base > 0 else None
        end = max(order, key=lambda n: best[n], default=None)
        if end is None or best[end] == 0:
            break
        n: Node | None = end
        while n is not None:
            if reward[n]:
                color.setdefault(n, c)
                reward[n] = 0
            n = prev[n]
    last = colors - 1
    return {n: color.get(n, last) for n in order if n.op.computes}


def longest_path_coloring(outputs: Node | Iterable[Node], colors: int,
                          order: Sequence[Node] | None = None) -> dict[str, Any]:
    """The colouring of p.24 as data: ``{"color": {node: c}, "paths": [[nodes of colour c], ...]}``."""
    order = list(order) if order is not None else topo_order(outputs)
    color = node_colors(order, colors)
    paths: list[list[Node]] = [[] for _ in range(colors)]
    for n in order:
        if n in color:
            paths[color[n]].append(n)
    return {"color": color, "paths": paths}

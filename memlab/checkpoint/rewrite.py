"""Recomputation on the op graph: drop forward values, recompute them in the backward pass (CSE599G1
lecture 7, p.31-32; Chen, Xu, Zhang and Guestrin 2016, "Training deep nets with sublinear memory").

:func:`recompute_graph` takes a training graph (the loss, then gradients built by
:func:`memlab.graph.gradients`) and a set of forward nodes to **keep**. Every other forward value that
a backward op reads is replaced by a recomputed copy, built from the nearest kept values (one copy
per dropped node, shared by all its backward readers). The copies of one connected group of dropped
nodes also wait, by **control dependencies**, for the gradient that enters the group from above: so
the recomputation runs when the backward pass reaches the group, not earlier (the dashed edges of the
figure of p.32). The result is an ordinary graph: :func:`memlab.memory.plan_memory`,
:func:`memlab.memory.plan_offsets` and the arena :class:`~memlab.execute.Executor` run it unchanged,
and since every copy runs its op's own numpy code on the same inputs, losses and gradients are
identical bit for bit.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..errors import GraphError, PlanError
from ..graph import Node, Op, adjoint_of, as_list, topo_order


class Recompute(Op):
    """A copy of forward node ``attrs["of"]``: its op on the first ``attrs["arity"]`` inputs; the
    remaining inputs are control dependencies, read for ordering only (p.32)."""

    name = "recompute"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return node.attrs["of"].shape, node.attrs["of"].dtype

    def compute(self, node: Node, inputs, out: np.ndarray) -> None:
        original = node.attrs["of"]
        original.op.compute(original, list(inputs)[:node.attrs["arity"]], out)

    def inplace(self, node: Node) -> tuple[int, ...]:
        original = node.attrs["of"]
        return original.op.inplace(original)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        raise NotImplementedError("a recomputed copy is not differentiated again")


RECOMPUTE = Recompute()


def forward_nodes(outputs: Sequence[Node]) -> list[Node]:
    """The computed nodes the loss (``outputs[0]``) depends on, in topological order."""
    return [n for n in topo_order(outputs[0]) if n.op.computes]


def _check_keep(outputs: Sequence[Node], keep: Iterable[Node]) -> set[Node]:
    forward = set(forward_nodes(outputs))
    keep = set(keep)
    for k in keep:
        if not isinstance(k, Node):
            raise PlanError(f"keep holds {type(k).__name__}, not a Node")
        if k not in forward:
            raise PlanError(f"keep names node {k.name!r}, which is not a forward node of this "
                            f"training graph (loss {outputs[0].name!r})")
    return keep


def recompute_graph(outputs: Sequence[Node], keep: Iterable[Node]) -> list[Node]:
    """The training graph with every forward value not in ``keep`` recomputed in the backward pass.

    ``outputs`` is ``[loss, *gradients]``; the result has the same order. Graph outputs among the
    forward nodes are always kept.
    """
    outputs = as_list(outputs)
    if not outputs:
        raise GraphError("recompute_graph needs the loss and its gradients")
    keep = _check_keep(outputs, keep) | set(outputs)
    forward = forward_nodes(outputs)
    is_forward = set(forward)
    dropped = [n for n in forward if n not in keep]
    if not dropped:
        return list(outputs)
    group = _groups(dropped)
    # control dependencies: the gradients of the kept nodes that read a group (p.32's dashed edges)
    readers: dict[int, set[Node]] = {}
    for n in forward:
        for x in n.inputs:
            if x in group and n not in group:
                readers.setdefault(group[x], set()).add(n)
    copies: dict[Node, Node] = {}
    roots: dict[int, list[Node]] = {}

    def copy_of(d: Node) -> Node:
        stack = [d]
        while stack:  # iteratively: deep chains must not hit the recursion limit
            top = stack[-1]
            missing = [x for x in top.inputs if x in group and x not in copies]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            if top in copies:
                continue
            ins = [copies.get(x, x) for x in top.inputs]
            copies[top] = Node(RECOMPUTE, ins, name=f"{top.name}'",
                               attrs={"of": top, "arity": len(ins)})
            if not any(x in group for x in top.inputs):
                roots.setdefault(group[top], []).append(copies[top])
        return copies[d]

    rebuilt: dict[Node, Node] = {}
    for n in topo_order(outputs):  # the backward part, reading copies instead of dropped values
        if n in is_forward or not n.op.computes:
            continue
        ins = [copy_of(x) if x in group else rebuilt.get(x, x) for x in n.inputs]
        if all(a is b for a, b in zip(ins, n.inputs)):
            continue
        rebuilt[n] = Node(n.op, ins, name=n.name, attrs=n.attrs, shape=n.shape, dtype=n.dtype,
                          value=n.value)
    # attach the control dependencies, skipping any that would close a cycle
    for g, rs in roots.items():
        deps = [rebuilt.get(a, a) for a in (adjoint_of(e) for e in readers.get(g, ())) if a is not None]
        mine = {c for d, c in copies.items() if group[d] == g}
        safe = [a for a in deps if not (set(topo_order(a)) & mine)]
        for r in rs:
            r.inputs.extend(safe)
    return [rebuilt.get(o, o) for o in outputs]


def _groups(dropped: Sequence[Node]) -> dict[Node, int]:
    """Connected groups of dropped nodes (joined by forward edges between dropped nodes)."""
    parent = {d: d for d in dropped}

    def find(x: Node) -> Node:
        while parent[x] is not x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for d in dropped:
        for x in d.inputs:
            if x in parent:
                parent[find(x)] = find(d)
    ids: dict[Node, int] = {}
    return {d: ids.setdefault(find(d), len(ids)) for d in dropped}


def recomputed_nodes(outputs: Sequence[Node]) -> list[Node]:
    """The recomputed copies in a rewritten graph (their count is the extra forward work)."""
    return [n for n in topo_order(outputs) if n.op is RECOMPUTE]

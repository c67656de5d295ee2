"""Issue 23, item 4: ``recompute_graph`` as it was before its cycle check was made near-linear,
kept verbatim (only the imports differ, and the readers of a group are a list in forward order, not
a set: a set of nodes iterates in the order of their addresses, which made the control inputs vary
from run to run) as the reference the fast rewrite must equal exactly."""
from __future__ import annotations

from typing import Iterable, Sequence

from memlab.checkpoint.rewrite import RECOMPUTE
from memlab.errors import GraphError, PlanError
from memlab.graph import Node, adjoint_for, as_list, topo_order


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


def recompute_graph(outputs: Sequence[Node], keep: Iterable[Node] | Sequence[Iterable[Node]]
                    ) -> list[Node]:
    """The training graph with every forward value not in ``keep`` recomputed in the backward pass.

    ``outputs`` is ``[loss, *gradients]``; the result has the same order. Graph outputs among the
    forward nodes are always kept. ``keep`` may also be a list of sets, ``[K1, K2, ...]``: Chen et
    al.'s recursion (p.34). ``K1`` is kept from the forward pass; the values of ``K2`` are
    recomputed once per group of ``K1`` and held as inner checkpoints, from which the rest of a
    group is recomputed again, group by group; and so on for further levels.
    """
    outputs = as_list(outputs)
    if not outputs:
        raise GraphError("recompute_graph needs the loss and its gradients")
    levels = _levels(outputs, keep)
    forward = forward_nodes(outputs)
    is_forward = set(forward)
    top = levels[0] | set(outputs)
    # the level at which each dropped value is recomputed: its first inner set, else the deepest
    level = {n: next((k for k in range(1, len(levels)) if n in levels[k]), len(levels))
             for n in forward if n not in top}
    if not level:
        return list(outputs)
    copies: dict[tuple[Node, int], Node] = {}

    def at(x: Node, k: int) -> int:  # a value read by a level-k copy comes from level min(k, its own)
        return min(k, level[x])

    def copy_of(d: Node, k: int) -> Node:
        stack = [(d, k)]
        while stack:  # iteratively: deep chains must not hit the recursion limit
            node, lv = stack[-1]
            missing = [(x, at(x, lv)) for x in node.inputs if x in level and (x, at(x, lv)) not in copies]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            if (node, lv) in copies:
                continue
            ins = [copies[x, at(x, lv)] if x in level else x for x in node.inputs]
            copies[node, lv] = Node(RECOMPUTE, ins, name=f"{node.name}" + "'" * lv,
                                    attrs={"of": node, "arity": len(ins)})
        return copies[d, k]

    rebuilt: dict[Node, Node] = {}
    for n in topo_order(outputs):  # the backward part, reading copies instead of dropped values
        if n in is_forward or not n.op.computes:
            continue
        ins = [copy_of(x, level[x]) if x in level else rebuilt.get(x, x) for x in n.inputs]
        if all(a is b for a, b in zip(ins, n.inputs)):
            continue
        rebuilt[n] = Node(n.op, ins, name=n.name, attrs=n.attrs, shape=n.shape, dtype=n.dtype,
                          value=n.value)
    _control_dependencies(forward, copies, rebuilt, topo_order(outputs))
    return [rebuilt.get(o, o) for o in outputs]


def _levels(outputs: Sequence[Node], keep: object) -> list[set[Node]]:
    """``keep`` as a list of sets of forward nodes (one set: one level), validated."""
    if isinstance(keep, (set, frozenset)) or not isinstance(keep, (list, tuple)) or \
            not keep or isinstance(next(iter(keep)), Node):
        return [_check_keep(outputs, keep)]  # type: ignore[arg-type]
    return [_check_keep(outputs, k) for k in keep]


def _control_dependencies(forward: Sequence[Node], copies: dict[tuple[Node, int], Node],
                          rebuilt: dict[Node, Node], step: list[Node]) -> None:
    """Make each group of same-level copies wait for the gradient entering the group from above
    (the adjoints, in the training ``step``, of the forward nodes outside the group that read it);
    skip any dependency that would close a cycle."""
    group = _groups([(n, k) for n, k in copies])
    members: dict[int, list[Node]] = {}
    roots: dict[int, list[Node]] = {}
    for (n, k), c in copies.items():
        members.setdefault(group[n, k], []).append(c)
        if not any((x, k) in group for x in n.inputs):
            roots.setdefault(group[n, k], []).append(c)
    originals: dict[int, set[Node]] = {}
    for (n, k) in copies:
        originals.setdefault(group[n, k], set()).add(n)
    for g, rs in roots.items():
        inside = originals[g]
        readers = [e for e in forward if e not in inside and any(x in inside for x in e.inputs)]
        held = [[a for a in step if e in adjoint_for(a)] for e in readers]    # e's adjoints here
        deps = [rebuilt.get(a[-1], a[-1]) for a in held if a]
        mine = set(members[g])
        safe = [a for a in deps if not (set(topo_order(a)) & mine)]
        for r in rs:
            r.inputs.extend(safe)


def _groups(copies: Sequence[tuple[Node, int]]) -> dict[tuple[Node, int], int]:
    """Connected groups of copies of one level (joined by their forward edges)."""
    parent = {c: c for c in copies}

    def find(x: tuple[Node, int]) -> tuple[Node, int]:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for n, k in copies:
        for x in n.inputs:
            if (x, k) in parent:
                parent[find((x, k))] = find((n, k))
    ids: dict[tuple[Node, int], int] = {}
    return {c: ids.setdefault(find(c), len(ids)) for c in copies}

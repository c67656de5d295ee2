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

A dropped **dropout mask** can be recomputed in two ways (``mask=``):

* ``"seed"``: from its seed alone, one random draw (what Megatron-LM's RNG tracker allows: the
  mask is a function of the seed and the op, so nothing else is rerun);
* ``"replay"``: by rerunning the dropout itself, so its input is recomputed too. A fused dropout
  kernel (PyTorch's ``native_dropout``) makes the mask and the output in one pass from the input,
  and ``torch.utils.checkpoint`` reruns the segment's forward with the saved RNG state: the mask
  of a dropout after ``fc2`` costs ``fc2``'s matrix product again. The copy of the mask then reads
  the dropout's input (recomputed when dropped), so the planners hold it until the mask is made.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..errors import GraphError, PlanError, check_choice, check_list
from ..graph import Node, Op, as_list, note_rebuilt, topo_order
from ..graph.autodiff import adjoints_for


class Recompute(Op):
    """A copy of forward node ``attrs["of"]``: its op on the first ``attrs["arity"]`` inputs; the
    remaining inputs are read for ordering and lifetime only: control dependencies (p.32), and a
    replayed dropout mask's input (``mask="replay"``)."""

    name = "recompute"

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return node.attrs["of"].shape, node.attrs["of"].dtype

    def compute(self, node: Node, inputs, out: np.ndarray) -> None:
        original = node.attrs["of"]
        original.op.compute(original, list(inputs)[:node.attrs["arity"]], out)

    def inplace(self, node: Node) -> tuple[int, ...]:
        original = node.attrs["of"]
        return original.op.inplace(original)

    def workspace(self, node: Node) -> int:
        original = node.attrs["of"]
        return original.op.workspace(original)

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        raise NotImplementedError("a recomputed copy is not differentiated again")


RECOMPUTE = Recompute()


def training_outputs(outputs: Node | Sequence[Node], what: str) -> list[Node]:
    """``outputs`` as ``[loss, *gradients]`` (at least the loss), else :class:`GraphError`."""
    outputs = as_list(outputs)
    if not outputs:
        raise GraphError(f"{what}: outputs must hold the loss and its gradients, got none")
    return outputs


def forward_nodes(outputs: Sequence[Node]) -> list[Node]:
    """The computed nodes the loss (``outputs[0]``) depends on, in topological order."""
    return [n for n in topo_order(outputs[0]) if n.op.computes]


def _check_keep(outputs: Sequence[Node], keep: Iterable[Node],
                forward: set[Node] | None = None) -> set[Node]:
    forward = set(forward_nodes(outputs)) if forward is None else forward
    keep = set(check_list(keep, "recompute_graph: keep (nodes, or a list of sets of them)",
                          PlanError))
    for k in keep:
        if not isinstance(k, Node):
            raise PlanError(f"keep holds {type(k).__name__}, not a Node")
        if k not in forward:
            raise PlanError(f"keep names node {k.name!r}, which is not a forward node of this "
                            f"training graph (loss {outputs[0].name!r})")
    return keep


#: how a dropped dropout mask is recomputed (module docstring)
MASK_MODES = ("seed", "replay")


def _dropout_inputs(forward: Sequence[Node]) -> dict[Node, Node]:
    """Each dropout mask of the forward pass -> the input of the dropout that applies it (an op
    named ``"dropout"`` reading ``(x, mask)``: :func:`memlab.graph.dropout`, the shape-only one)."""
    return {n.inputs[1]: n.inputs[0] for n in forward
            if n.op.name == "dropout" and len(n.inputs) == 2}


def recompute_graph(outputs: Sequence[Node], keep: Iterable[Node] | Sequence[Iterable[Node]],
                    mask: str = "seed") -> list[Node]:
    """The training graph with every forward value not in ``keep`` recomputed in the backward pass.

    ``outputs`` is ``[loss, *gradients]``; the result has the same order. Graph outputs among the
    forward nodes are always kept. ``keep`` may also be a list of sets, ``[K1, K2, ...]``: Chen et
    al.'s recursion (p.34). ``K1`` is kept from the forward pass; the values of ``K2`` are
    recomputed once per group of ``K1`` and held as inner checkpoints, from which the rest of a
    group is recomputed again, group by group; and so on for further levels.

    ``mask``: how a dropped dropout mask is recomputed, ``"seed"`` (from its seed alone) or
    ``"replay"`` (by rerunning the dropout, its input recomputed too); see the module docstring.
    Either way the mask's values are the same, drawn from the same seed.
    """
    outputs = training_outputs(outputs, "recompute_graph")
    check_choice(mask, "recompute_graph: mask", MASK_MODES, PlanError)
    forward = forward_nodes(outputs)
    is_forward = set(forward)
    levels = _levels(outputs, keep, is_forward)
    step = topo_order(outputs)                   # the graph is not changed until the copies exist
    if all(n in is_forward for n in step if n.op.computes):
        raise PlanError(f"recompute_graph: outputs hold no backward pass (loss "
                        f"{outputs[0].name!r} and no gradient of it): pass [loss, *gradients], "
                        f"as ml.gradients builds them")
    replay = _dropout_inputs(forward) if mask == "replay" else {}
    top = levels[0] | set(outputs)
    # the level at which each dropped value is recomputed: its first inner set, else the deepest
    level = {n: next((k for k in range(1, len(levels)) if n in levels[k]), len(levels))
             for n in forward if n not in top}
    if not level:
        return list(outputs)
    copies: dict[tuple[Node, int], Node] = {}

    def at(x: Node, k: int) -> int:  # a value read by a level-k copy comes from level min(k, its own)
        return min(k, level[x])

    def reads(node: Node) -> list[Node]:  # a replayed mask also reads its dropout's input
        return node.inputs + [replay[node]] if node in replay else node.inputs

    def copy_of(d: Node, k: int) -> Node:
        stack = [(d, k)]
        while stack:  # iteratively: deep chains must not hit the recursion limit
            node, lv = stack[-1]
            missing = [(x, at(x, lv)) for x in reads(node)
                       if x in level and (x, at(x, lv)) not in copies]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            if (node, lv) in copies:
                continue
            ins = [copies[x, at(x, lv)] if x in level else x for x in reads(node)]
            copies[node, lv] = Node(RECOMPUTE, ins, name=f"{node.name}" + "'" * lv,
                                    attrs={"of": node, "arity": len(node.inputs)})
        return copies[d, k]

    rebuilt: dict[Node, Node] = {}
    for n in step:  # the backward part, reading copies instead of dropped values
        if n in is_forward or not n.op.computes:
            continue
        ins = [copy_of(x, level[x]) if x in level else rebuilt.get(x, x) for x in n.inputs]
        if all(a is b for a, b in zip(ins, n.inputs)):
            continue
        rebuilt[n] = Node(n.op, ins, name=n.name, attrs=n.attrs, shape=n.shape, dtype=n.dtype,
                          value=n.value)
        note_rebuilt(rebuilt[n], n)
    _control_dependencies(forward, copies, rebuilt, step)
    return [rebuilt.get(o, o) for o in outputs]


def _levels(outputs: Sequence[Node], keep: object, forward: set[Node]) -> list[set[Node]]:
    """``keep`` as a list of sets of the ``forward`` nodes (one set: one level), validated."""
    if isinstance(keep, (set, frozenset)) or not isinstance(keep, (list, tuple)) or \
            not keep or isinstance(next(iter(keep)), Node):
        return [_check_keep(outputs, keep, forward)]  # type: ignore[arg-type]
    return [_check_keep(outputs, k, forward) for k in keep]


def _control_dependencies(forward: Sequence[Node], copies: dict[tuple[Node, int], Node],
                          rebuilt: dict[Node, Node], step: Sequence[Node]) -> None:
    """Make each group of same-level copies wait for the gradient entering the group from above
    (the adjoints, in this training ``step``, of the forward nodes outside the group that read
    it: :func:`~memlab.graph.adjoint_for`, so a later :func:`~memlab.graph.gradients` of the same
    forward graph changes nothing); skip any dependency that would close a cycle.

    The groups are taken one after another; a dependency ``a`` of group ``g`` is skipped when a
    copy of ``g`` already reaches ``a``, in the graph that holds the control edges of the groups
    before ``g``. Deciding that by a walk of the graph per dependency is quadratic. Instead:

    - every copy of ``g`` is reached from a root of ``g``: a level-``k`` copy that is not a root
      has an input ``x`` with a level-``k`` copy, in its group, and reads that copy (copies of ``x``
      exist only up to ``x``'s own level, so ``min(k, level[x]) = k``); following such inputs back
      ends at a root. So ``g`` reaches ``a`` if and only if one of its roots does;
    - ``order`` is kept a topological order of the graph as it grows (Pearce and Kelly's dynamic
      topological sort, 2006), so a root can reach ``a`` only through nodes placed between them:
      ``a`` placed before every root is safe at once, and otherwise a forward search from the
      roots that stops at nodes placed after ``a`` decides it exactly;
    - adding a safe edge ``a -> r`` with ``a`` placed after ``r`` re-places only the nodes between
      them that reach ``a`` or are reached from ``r``, keeping the order topological.

    Each decision is the one a plain backward walk from the group's roots would make (same graph,
    same question, same group and dependency order).
    The work is one pass over the graph, plus, per dependency placed after a root of its group, a
    walk forward from the roots through the nodes placed before it, which stops when it reaches
    the dependency; the initial order (depth-first from the dependencies, group by group) places
    most dependencies before their group's copies. Not linear in the worst case, but on the zoo's
    training steps these walks visit at most a few tens of nodes per node of the graph
    (bench/checkpoint_graphs.py, table 5: every-4 on LSTM-400 in 0.13 s).
    """
    group = _groups([(n, k) for n, k in copies])
    roots: dict[int, list[Node]] = {}
    originals: dict[int, set[Node]] = {}
    for (n, k), c in copies.items():
        originals.setdefault(group[n, k], set()).add(n)
        if not any((x, k) in group for x in n.inputs):
            roots.setdefault(group[n, k], []).append(c)
    position = {n: i for i, n in enumerate(forward)}
    readers_of: dict[Node, list[Node]] = {}
    for e in forward:
        for x in set(e.inputs):
            readers_of.setdefault(x, []).append(e)
    adjoint = {t: step[k] for k, ts in adjoints_for(step).items() for t in ts}
    deps_of: dict[int, list[Node]] = {}
    for g in roots:
        inside = originals[g]
        outside = {e for n in inside for e in readers_of.get(n, ()) if e not in inside}
        # in forward order, as the reference: a set of nodes would iterate in the order of their
        # addresses, so the control inputs (and the depth-first order) would change from run to run
        readers = sorted(outside, key=position.__getitem__)
        deps_of[g] = [rebuilt.get(a, a) for a in map(adjoint.get, readers) if a is not None]
    order = _DynamicOrder([a for g in roots for a in deps_of[g]] + list(copies.values()))
    for g, rs in roots.items():
        safe = [a for a in deps_of[g] if not order.reaches(rs, a)]
        for r in rs:
            for a in safe:
                order.add_edge(a, r)
            r.inputs.extend(safe)


class _DynamicOrder:
    """A topological order of the nodes ``starts`` depend on, kept as edges are added (Pearce and
    Kelly, "A dynamic topological sort algorithm for directed acyclic graphs", 2006)."""

    def __init__(self, starts: list[Node]) -> None:
        nodes = topo_order(starts)
        self.place = {n: i for i, n in enumerate(nodes)}
        self.readers: dict[Node, list[Node]] = {n: [] for n in nodes}
        for n in nodes:
            for x in n.inputs:
                self.readers[x].append(n)

    def _ahead(self, sources: Iterable[Node], bound: int) -> list[Node]:
        """The nodes reached from ``sources`` (included) placed before ``bound``."""
        place, seen = self.place, set()
        stack = [s for s in sources if place[s] < bound]
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(r for r in self.readers[n] if place[r] < bound and r not in seen)
        return list(seen)

    def reaches(self, sources: Sequence[Node], target: Node) -> bool:
        """Whether a path leads from one of ``sources`` to ``target``: a walk forward from the
        sources through the nodes placed before ``target``, stopping when it reads ``target``."""
        place, bound = self.place, self.place[target]
        stack = [s for s in sources if place[s] < bound]
        seen = set(stack)
        while stack:
            for r in self.readers[stack.pop()]:
                if r is target:
                    return True
                if place[r] < bound and r not in seen:
                    seen.add(r)
                    stack.append(r)
        return False

    def add_edge(self, a: Node, r: Node) -> None:
        """Record that ``r`` reads ``a`` (``r`` must not reach ``a``), re-placing what lies
        between them if ``a`` was placed after ``r``."""
        self.readers[a].append(r)
        place = self.place
        lo, hi = place[r], place[a]
        if hi < lo:
            return
        after = self._ahead([r], hi)             # reached from r, placed before a
        before, stack = set(), [a]                # reaching a, placed after r
        while stack:
            n = stack.pop()
            if n not in before:
                before.add(n)
                stack.extend(x for x in n.inputs if place[x] > lo and x not in before)
        moved = sorted(before, key=place.__getitem__) + sorted(after, key=place.__getitem__)
        for n, p in zip(moved, sorted(place[n] for n in moved)):
            place[n] = p


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


def recomputed_nodes(outputs: Sequence[Node]) -> list[Node]:
    """The recomputed copies in a rewritten graph (their count is the extra forward work)."""
    return [n for n in topo_order(outputs) if n.op is RECOMPUTE]

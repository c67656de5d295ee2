"""OpenNMT's memory sharing, as rules of the lecture's planner (OpenNMT's notes, "Further Memory
Optimization").

A module framework keeps, for every node of every timestep replica, its output and the gradient
of its input. The seed shares their storage in four ways; the first two change the graph (see
:func:`memlab.models.seq2seq`: ``share_params``, ``connect``), the others are planning rules,
each one :func:`~memlab.memory.planner.plan_memory` with a restriction (with shared parameters,
every rule, even "none", lets the gradient accumulation add into its one buffer):

* **local tricks**: an op that adds a constant may write over its input (in place);
* **vertical sharing**: a storage is reused inside one replica (one module at one timestep),
  once its value is dead: not read later in the forward pass (condition 1), not needed by the
  backward pass (2), and of a compatible size (3); :func:`conditions` checks the three;
* **horizontal sharing**: a storage is reused by the same node of another replica (OpenNMT Lua
  up to v0.7), under condition 2 again;
* both: a storage may travel anywhere inside one module's replicas;
* the lecture's general planner lifts the last restriction: any dead storage, any module.

Liveness decides conditions 1 and 2 for every rule, so a plan never breaks them:
:func:`~memlab.memory.checkplan.check_plan` verifies each.
"""
from __future__ import annotations

from typing import Hashable, Iterable, NamedTuple, Sequence

from ..errors import PlanError, check_bool, check_list
from ..graph import CONSTANT, Node, as_list, topo_order
from .plan import ALIGN
from .planner import TagPlan, plan_memory

def adds_constant(node: Node) -> bool:
    """The local trick's ops: ``x + c`` or ``x - c`` with a constant ``c`` (the gradient of the
    input is the output's gradient, so the input need not be kept)."""
    return node.op.name in ("add", "sub") and any(x.op is CONSTANT for x in node.inputs)


def accumulates(node: Node) -> bool:
    """A shared parameter's gradient accumulation (:func:`memlab.graph.accumulate`): it adds
    each replica's contribution into the one gradient buffer, always in place."""
    return node.op.name == "accumulate"


def _replica(node: Node) -> Hashable:
    return None if node.scope is None else node.scope.replica


def _role(node: Node) -> Hashable:
    s = node.scope
    return None if s is None else (s.module, s.backward, s.role)


def _module(node: Node) -> Hashable:
    return None if node.scope is None else node.scope.module


def plan_sharing(outputs: Node | Iterable[Node], order: Sequence[Node] | str | None = None, *,
                 local: bool = False, vertical: bool = False, horizontal: bool = False,
                 trace: bool = False, alignment: int = ALIGN) -> TagPlan:
    """A tag plan using only the chosen techniques (none: every value its own storage).

    Nodes need scopes (:func:`memlab.graph.scope`) for vertical and horizontal sharing; values
    outside any scope share only among themselves. ``order`` and ``alignment``: as for
    :func:`~memlab.memory.planner.plan_memory` (default: the memory-aware order; 256 for a GPU).
    """
    for what, flag in (("local", local), ("vertical", vertical), ("horizontal", horizontal)):
        check_bool(flag, f"plan_sharing: {what}", PlanError)
    base = _module if vertical and horizontal else (
        _replica if vertical else (_role if horizontal else None))

    def in_place(n: Node) -> bool:
        return accumulates(n) or (local and adds_constant(n))

    group = None
    if base is not None:
        def group(n: Node) -> Hashable:
            while in_place(n):           # file an in-place op with the storage it writes over
                over = n.inputs[0] if accumulates(n) else \
                    next((x for x in n.inputs if x.op is not CONSTANT), None)
                if over is None:         # constant + constant: nothing to write over
                    break
                n = over
            return base(n)
    return plan_memory(outputs, inplace=True if vertical else in_place,
                       share=vertical or horizontal, order=order, group=group, trace=trace,
                       match="exact", alignment=alignment)


class Conditions(NamedTuple):
    """The seed's three conditions for ``later`` to reuse the storage of ``first``."""

    not_read_later: bool      #: 1. no forward op reads ``first`` after ``later`` is computed
    backward_free: bool       #: 2. no backward op needs ``first``
    size_compatible: bool     #: 3. both values have the same number of bytes

    def __bool__(self) -> bool:
        return all(self)


def conditions(loss: Node, order: Sequence[Node], first: Node, later: Node) -> Conditions:
    """Check the seed's conditions for vertical sharing of ``first``'s storage by ``later``.

    ``order`` runs the training step (forward and backward); the forward pass is every node the
    ``loss`` depends on. ``later`` may read ``first`` itself (then it would work in place).
    """
    _check_node(loss, "conditions: loss")
    pos = {n: i for i, n in enumerate(check_list(order, "conditions: order", PlanError))}
    for what, n in (("first", first), ("later", later)):
        _check_node(n, f"conditions: {what}")
        if n not in pos or not n.op.computes:
            raise PlanError(f"conditions: {n.name!r} is not a computed value of the order")
    if pos[later] <= pos[first]:
        raise PlanError(f"conditions: {later.name!r} must come after {first.name!r}")
    forward = set(topo_order(loss))
    readers = [n for n in order if first in n.inputs]
    return Conditions(
        not_read_later=all(pos[r] <= pos[later] for r in readers if r in forward),
        backward_free=not any(r not in forward for r in readers),
        size_compatible=first.nbytes == later.nbytes)


def _check_node(x: object, what: str) -> None:
    if not isinstance(x, Node):
        raise PlanError(f"{what} must be a Node, got {type(x).__name__} {x!r:.60}")


def usage_table(loss: Node, grads: Sequence[Node], by: str = "module") -> list[dict]:
    """Bytes of one training step by module (``by="module"``) or node type (``by="op"``), in
    the seed's words: ``params`` (given weights), ``grad_params`` (their gradients, the
    accumulations included), ``outputs`` (forward values) and ``grad_inputs`` (the other
    backward values), with ``nodes`` the computed values counted; no sharing assumed."""
    if by not in ("module", "op"):
        raise PlanError(f"usage_table: by must be 'module' or 'op', got {by!r}")
    _check_node(loss, "usage_table: loss")
    grads = as_list(grads)
    forward = set(topo_order(loss))
    chains = set()                                     # each gradient and what it accumulates
    for g in grads:
        while accumulates(g):
            chains.add(g)
            g = g.inputs[0]
        chains.add(g)
    rows: dict[str, dict] = {}
    for n in topo_order([loss, *grads]):
        if n.is_leaf and (n.dtype.kind != "f" or n.op is CONSTANT):
            continue                                   # token ids, constants: not parameters
        key = (n.scope.module if n.scope else "-") if by == "module" else n.op.name
        row = rows.setdefault(key, {by: key, "nodes": 0, "params": 0, "grad_params": 0,
                                    "outputs": 0, "grad_inputs": 0})
        if n.is_leaf:
            row["params"] += n.nbytes
            continue
        row["nodes"] += 1
        if n in forward:
            row["outputs"] += n.nbytes
        elif n in chains:
            row["grad_params"] += n.nbytes
        else:
            row["grad_inputs"] += n.nbytes
    return list(rows.values())

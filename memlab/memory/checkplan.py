"""A verifier of memory plans (tags or offsets), independent of the planners.

:func:`check_plan` trusts nothing the planners computed except the answer:
it re-validates the order against the graph, takes every value's lifetime
from the graph and the order by the one rule of :mod:`.liveness` (itself
checked against a count from the definition in the tests), and checks with its
own sweep that no two values alive at the same step overlap in the arena. The one exception
is the in-place pair of p.19-20: an op may write its output exactly over an
input it is allowed to overwrite (``node.op.inplace(node)``), when that op
is the input's last consumer. An op's workspace (``op.workspace(node)`` bytes, read from the op,
not from the plan) must have a place (``plan.workspace_offset``) overlapping no value alive at
the op's step, the op's inputs and output among them. The tests use it; the planners do not.
"""
from __future__ import annotations

import math
from bisect import bisect_left, insort

from ..errors import PlanError
from ..graph import Node, check_order
from .liveness import prepare
from .plan import Plan, PlanWithTags, check_is_plan


def check_plan(plan: Plan) -> None:
    """Raise :class:`PlanError` naming two nodes if values alive together overlap in memory.

    Works for any plan with ``outputs``, ``order``, ``offset`` (node -> byte
    offset) and ``total_bytes``; for tag plans it also checks every value
    fits its storage (``storage``, ``storage_bytes``). Also raises on a
    non-topological order, a missing or misaligned offset, or a value that
    runs past the arena.
    """
    check_is_plan(plan, "check_plan: plan")
    outputs = list(plan.outputs)
    order = check_order(outputs, list(plan.order))
    offset: dict[Node, int] = dict(plan.offset)
    total = int(plan.total_bytes)
    storage = plan.storage if isinstance(plan, PlanWithTags) else None
    sbytes = plan.storage_bytes if isinstance(plan, PlanWithTags) else None
    life = prepare(outputs, order, trusted=True).lifetimes()   # the one rule of liveness
    born = {n: a for n, (a, _) in life.items()}
    dies = {n: b for n, (_, b) in life.items()}
    size = {n: math.prod(n.shape) * n.dtype.itemsize for n in born}
    work = {n: int(n.op.workspace(n)) for n in born}
    work_at = dict(getattr(plan, "workspace_offset", None) or {})
    for n, w in work.items():
        if w <= 0:
            continue
        if n not in work_at:
            raise PlanError(f"node {n.name!r} needs a workspace of {w} bytes while it runs, and "
                            f"the plan gives it no place")
        o = work_at[n]
        if o < 0 or o + w > total:
            raise PlanError(f"the workspace of node {n.name!r} ({w} bytes at offset {o}) does "
                            f"not fit the arena of {total} bytes")
    for n in born:
        if n not in offset:
            raise PlanError(f"node {n.name!r} has no place in the plan")
        o = offset[n]
        if o < 0 or o % n.dtype.itemsize:
            raise PlanError(f"node {n.name!r} has a bad offset {o} (negative or not aligned "
                            f"to its itemsize {n.dtype.itemsize})")
        if size[n] <= 0 or o + size[n] > total:
            raise PlanError(f"node {n.name!r} ({size[n]} bytes at offset {o}) does not fit "
                            f"the arena of {total} bytes")
        if storage is not None and sbytes is not None and size[n] > sbytes[storage[n]]:
            raise PlanError(f"node {n.name!r} ({size[n]} bytes) does not fit its storage "
                            f"{storage[n]} of {sbytes[storage[n]]} bytes")
    # Sweep the steps keeping the alive values sorted by offset; they never
    # overlap one another, so a new value only needs its neighbours checked.
    alive: list[tuple[int, int, int, Node]] = []  # (offset, end, serial, node)
    dying: dict[int, list[Node]] = {}
    for n, d in dies.items():
        dying.setdefault(d, []).append(n)
    for i, n in enumerate(order):
        if n in born:
            lo, hi = offset[n], offset[n] + size[n]
            j = bisect_left(alive, (hi, -1))
            while j > 0 and alive[j - 1][1] > lo:
                j -= 1
                x = alive[j][3]
                if not _inplace_ok(n, x, i, offset, size, dies):
                    raise PlanError(
                        f"nodes {x.name!r} and {n.name!r} are alive together at step {i} "
                        f"({n.name!r} is computed while {x.name!r} is needed until step {dies[x]}) "
                        f"and overlap in memory: [{alive[j][0]}, {alive[j][1]}) and [{lo}, {hi})")
        if n in born and work[n] > 0:
            _check_workspace(n, i, work_at[n], work[n], alive, offset, size)
        for x in dying.pop(i, ()):
            if x is not n:
                k = bisect_left(alive, (offset[x], offset[x] + size[x], born[x]))
                del alive[k]
        if n in born and dies[n] > i:
            insort(alive, (offset[n], offset[n] + size[n], born[n], n))


def _check_workspace(n: Node, step: int, lo: int, w: int, alive: list, offset: dict[Node, int],
                     size: dict[Node, int]) -> None:
    """The workspace ``[lo, lo + w)`` of op ``n`` overlaps neither ``n``'s output nor a value
    alive at its step (``alive``: sorted by offset, inputs dying here still in it)."""
    hi = lo + w
    if offset[n] < hi and lo < offset[n] + size[n]:
        raise PlanError(f"the workspace of node {n.name!r} [{lo}, {hi}) overlaps its own output "
                        f"[{offset[n]}, {offset[n] + size[n]})")
    j = bisect_left(alive, (hi, -1))
    if j > 0 and alive[j - 1][1] > lo:
        x = alive[j - 1]
        raise PlanError(f"the workspace of node {n.name!r} [{lo}, {hi}) overlaps {x[3].name!r}, "
                        f"alive at step {step}: [{x[0]}, {x[1]})")


def _inplace_ok(node: Node, x: Node, step: int, offset: dict[Node, int],
                size: dict[Node, int], dies: dict[Node, int]) -> bool:
    """May ``node`` share ``x``'s memory? Only exactly, as an allowed in-place input dying here."""
    if dies[x] != step or offset[x] != offset[node] or size[x] != size[node]:
        return False
    return any(node.inputs[p] is x for p in node.op.inplace(node))

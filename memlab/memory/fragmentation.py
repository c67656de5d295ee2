"""Where a tag plan loses bytes: values held in tags much bigger than themselves.

NNVM's ``PlanMemory`` (and :func:`~memlab.memory.plan_memory`) gives a value a free tag whose size
is within ``match_range`` (16) times its own, so that a freed storage is reused instead of a new
one opened. The price: a small value may take a big tag, and while it lives nobody else can use
the rest. When the small value is a graph output (a weight gradient, held to the end of the
step), the big tag is lost for the whole step. :func:`oversized` lists such values; an offset
planner (:func:`~memlab.memory.plan_offsets`), which places each value at a byte offset of its own
size, has no such loss.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import PlanError, check_number
from ..graph import Node


@dataclass(frozen=True)
class Oversized:
    """A value in a tag at least ``factor`` times its size: ``node``, its ``nbytes``, the tag's
    ``tag_bytes``, and whether it is a graph ``output`` (held to the end of the plan)."""

    node: Node
    nbytes: int
    tag_bytes: int
    output: bool


def oversized(plan: object, factor: float = 4.0) -> list[Oversized]:
    """The values of a tag plan (:func:`~memlab.memory.plan_memory`) whose storage is at least
    ``factor`` times their own size, in the plan's order."""
    storage, sizes = getattr(plan, "storage", None), getattr(plan, "storage_bytes", None)
    if not isinstance(storage, dict) or not isinstance(sizes, dict):
        raise PlanError(f"oversized: plan must be a tag plan from plan_memory, got "
                        f"{type(plan).__name__}")
    factor = check_number(factor, "oversized: factor", above=1.0, error=PlanError)
    outs = {id(o) for o in plan.outputs}
    return [Oversized(n, n.nbytes, sizes[t], id(n) in outs) for n, t in storage.items()
            if n.nbytes and sizes[t] >= factor * n.nbytes]

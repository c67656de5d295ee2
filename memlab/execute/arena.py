"""Running inside a static memory plan (CSE599G1 lecture 7, p.17-22): one arena, views at offsets.

:class:`ArenaRunner` allocates **one arena**, a numpy byte buffer of ``plan.total_bytes``, and
computes every op with ``out=`` into a view at the node's planned offset (tag plans lay their
storages out one after another). Nothing else is allocated for intermediates, so a wrong plan gives
wrong numbers. Offsets are multiples of 64 bytes and numpy's buffers are at least 16-byte aligned,
so every view is aligned to its dtype's itemsize. The arena is kept between runs; outputs are
returned as copies, so they stay right when the arena is overwritten.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import PlanError
from ..graph import Node, as_list, workspace_of
from ..memory.liveness import kept_liveness
from ..memory.plan import Plan, check_is_plan
from .runner import Runner


def check_placement(outputs: Sequence[Node], plan: Plan) -> None:
    """Raise :class:`PlanError` unless ``plan`` is a plan for ``outputs`` placing every value.

    Checks what a runner needs (a plan for these outputs, an offset for every computed value,
    aligned to its itemsize, inside the arena); :func:`~memlab.memory.checkplan.check_plan`
    checks the rest (no two live values overlap).
    """
    check_is_plan(plan, "plan=")
    outputs = as_list(outputs)
    if list(plan.outputs) != list(outputs) and set(plan.outputs) != set(outputs):
        names, theirs = (", ".join(o.name for o in outs) for outs in (outputs, plan.outputs))
        raise PlanError(f"the plan was made for other outputs ({theirs}), not for {names}: pass the "
                        f"plan's outputs, or only the plan (Executor(plan=plan))")
    offset, total = plan.offset, plan.total_bytes
    for n in plan.order:
        if n.op.computes:
            o = offset.get(n)
            if o is None:
                raise PlanError(f"node {n.name!r} has no place in the plan")
            if o < 0 or o % n.dtype.itemsize or o + n.nbytes > total:
                raise PlanError(f"node {n.name!r} cannot be placed at offset {o} "
                                f"of an arena of {total} bytes")
            w = workspace_of(n)
            if w:
                o = (getattr(plan, "workspace_offset", None) or {}).get(n)
                if o is None or o < 0 or o + w > total:
                    raise PlanError(f"node {n.name!r} needs a workspace of {w} bytes, which the "
                                    f"plan does not place inside its arena of {total} bytes: "
                                    f"plan again after setting workspaces")


class ArenaRunner(Runner):
    """Run ``outputs`` inside ``plan`` (a tag or an offset plan): one arena, views at offsets."""

    def __init__(self, outputs: Sequence[Node], plan: Plan) -> None:
        check_placement(outputs, plan)
        super().__init__(outputs, plan.order, kept_liveness(plan))
        self.plan = plan
        self.offset: dict[Node, int] = dict(plan.offset)
        self.total_bytes = int(plan.total_bytes)
        self.arena: np.ndarray | None = None
        self._views: dict[Node, np.ndarray] = {}

    @property
    def arena_bytes(self) -> int:
        """Bytes of the arena actually allocated (0 before the first run)."""
        return 0 if self.arena is None else int(self.arena.nbytes)

    def start(self) -> None:
        if self.arena is None:
            self.arena = arena = np.empty(self.total_bytes, np.uint8)
            self._views = {n: np.ndarray(n.shape, n.dtype, buffer=arena, offset=o)
                           for n, o in self.offset.items()}
        self._first = True

    def allocate(self, node: Node) -> tuple[np.ndarray, int]:
        new, self._first = (self.arena_bytes if self._first else 0), False
        return self._views[node], new

    def held_bytes(self) -> int:
        return self.arena_bytes

    def fetch(self, node: Node, value: Any) -> np.ndarray:
        return value.copy() if node in self._views else value

"""The allocation trace of a graph run, and its replay through any allocator.

:func:`allocation_trace` lists the requests an executor makes running ``outputs`` (the rule of
:class:`~memlab.execute.runner.Runner`, written here for allocators that do not compute): in the
order (default: :func:`~memlab.memory.order.memory_order`'s), a block for each computed value,
its op's workspace taken and given back around it, then every input whose reference count
reached 0 freed; graph outputs are kept, or freed at the end with ``release_outputs`` (a
training step whose gradients the optimizer has consumed). :func:`replay` runs such a trace
through a :class:`~memlab.memory.caching.CachingAllocator`, a
:class:`~memlab.memory.bfc.BFCAllocator` or a :class:`~memlab.memory.pool.MemoryPool`;
:func:`replay_table` gives the numbers that compare them.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..errors import PlanError
from ..graph import Node, as_list, workspace_of
from .liveness import reference_counts
from .order import resolve_order
from .pool import MemoryPool
from .offsets import live_bytes_lower_bound, plan_offsets

Event = tuple[bool, int, int, str]   # (is an allocation, key, bytes, owner)


def allocation_trace(outputs: Node | Iterable[Node], order: Sequence[Node] | str | None = None,
                     release_outputs: bool = False, start: int = 0) -> list[Event]:
    """The requests of one run of ``outputs``: ``(True, key, nbytes, owner)`` to allocate,
    ``(False, key, 0, owner)`` to free the block allocated under ``key``; keys count from
    ``start``, so traces of several steps can be joined."""
    outs = as_list(outputs)
    steps = resolve_order(outs, order)
    refs, keep = reference_counts(steps), set(outs)
    key, held, events = start, {}, []
    for node in steps:
        if not node.op.computes:
            continue
        events.append((True, key, max(node.nbytes, 1), node.name))
        held[node], key = key, key + 1
        w = workspace_of(node)
        if w:
            events.append((True, key, w, f"{node.name}.workspace"))
            events.append((False, key, 0, f"{node.name}.workspace"))
            key += 1
        for x in dict.fromkeys(node.inputs):
            refs[x] -= 1
            if refs[x] == 0 and x.op.computes and x not in keep:
                events.append((False, held.pop(x), 0, x.name))
    if release_outputs:
        events.extend((False, held.pop(o), 0, o.name) for o in dict.fromkeys(outs)
                      if o.op.computes)
    return events


def replay(events: Iterable[Event], allocator: Any) -> Any:
    """Run ``events`` through ``allocator`` (``malloc``/``free``, or a MemoryPool's
    ``allocate``/``free``); returns the allocator."""
    malloc = getattr(allocator, "malloc", None) or getattr(allocator, "allocate", None)
    free = getattr(allocator, "free", None)
    if malloc is None or free is None:
        raise PlanError(f"replay: allocator must have malloc (or allocate) and free, got "
                        f"{type(allocator).__name__}")
    handles: dict[int, Any] = {}
    for is_alloc, key, nbytes, owner in events:
        if is_alloc:
            handles[key] = malloc(nbytes, owner)
        else:
            free(handles.pop(key))
    return allocator


def peaks(allocator: Any) -> dict[str, int | None]:
    """``reserved`` and ``allocated`` peaks of a replayed allocator, and its peak of
    ``inactive_split`` bytes (None for the simple pool, which never splits)."""
    if isinstance(allocator, MemoryPool):
        s = allocator.stats
        return {"reserved": s.peak_reserved, "allocated": s.peak_in_use, "inactive_split": None}
    stats = allocator.memory_stats()
    return {"reserved": allocator.max_memory_reserved(),
            "allocated": allocator.max_memory_allocated(),
            "inactive_split": stats["inactive_split_bytes.all.peak"]}


def allocators() -> dict[str, Any]:
    """A fresh allocator of each kind, by the name the replay table gives it."""
    from .bfc import BFCAllocator
    from .caching import CachingAllocator
    return {"simple pool": MemoryPool(trace=False), "BFC": BFCAllocator(trace=False),
            "caching": CachingAllocator(trace=False),
            "caching, expandable": CachingAllocator(expandable_segments=True, trace=False)}


def replay_table(outputs: Node | Iterable[Node], order: Sequence[Node] | str | None = None
                 ) -> dict[str, dict[str, int | None]]:
    """For one run of ``outputs`` in ``order``: the live-bytes bound and the static offset plan
    (``total``; both without in-place, as the allocators do not write in place), then each
    allocator's :func:`peaks` after replaying the run's :func:`allocation_trace`."""
    plan = plan_offsets(outputs, order, inplace=False)
    rows: dict[str, dict[str, int | None]] = {
        "live-bytes bound": {"total": live_bytes_lower_bound(plan)},
        "offset plan": {"total": plan.total_bytes}}
    events = allocation_trace(outputs, plan.order)
    for name, alloc in allocators().items():
        rows[name] = peaks(replay(events, alloc))
    return rows

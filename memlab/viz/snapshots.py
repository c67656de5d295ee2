"""Memory snapshots drawn as PyTorch's memory viewer draws them, and memory over time.

:func:`draw_snapshot` draws each segment as a bar (its length the segment's size), the blocks
inside it coloured by owner and the free ones hatched, as the "segments" view of PyTorch's
``torch.cuda.memory._snapshot()`` viewer (pytorch.org/memory_viz) shows them.
:func:`memory_over_time` draws the allocated and reserved bytes after each event of the trace.
Both take a memlab allocator (:class:`~memlab.memory.caching.CachingAllocator`,
:class:`~memlab.memory.bfc.BFCAllocator`), its ``memory_snapshot()`` list, or a snapshot dict in
PyTorch's format (``{"segments": [...], "device_traces": [[...]]}``, what
``torch.cuda.memory._snapshot()`` returns and ``pickle`` or ``json`` saves), so a snapshot taken
on a GPU draws the same way; torch is not needed. :func:`allocator_frames` makes stepper frames
of a sequence of requests.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..errors import MemlabError
from .palette import PALETTE
from .render import to_svg
from .stepper import Frame

MiB = 1 << 20


def segments_of(snapshot: Any) -> list[Mapping]:
    """The segment dicts of an allocator, a ``memory_snapshot()`` list or a PyTorch snapshot
    dict, by address."""
    if hasattr(snapshot, "memory_snapshot"):
        snapshot = snapshot.memory_snapshot()
    if isinstance(snapshot, Mapping):
        if "segments" not in snapshot:
            raise MemlabError("draw_snapshot: a snapshot dict needs 'segments' (what "
                              "torch.cuda.memory._snapshot() returns)")
        snapshot = snapshot["segments"]
    if isinstance(snapshot, (str, bytes)) or not isinstance(snapshot, Iterable):
        raise MemlabError(f"draw_snapshot: snapshot must be an allocator, a list of segments or "
                          f"a snapshot dict, got {type(snapshot).__name__}")
    return sorted(snapshot, key=lambda s: s["address"])


def owner_of(block: Mapping) -> str:
    """Who a block belongs to: memlab's ``owner``, else the top frame PyTorch recorded, else its
    address."""
    if block.get("owner"):
        return str(block["owner"])
    frames = block.get("frames") or []
    if frames:
        f = frames[0]
        return f"{f.get('name', '?')} {f.get('filename', '')}:{f.get('line', '')}".strip()
    return f"{block['address']:#x}"


def _active(block: Mapping) -> bool:
    return block.get("state", "inactive") != "inactive"


def draw_snapshot(snapshot: Any, title: str | None = None, ax: Axes | None = None,
                  colors: dict[str, int] | None = None, unit: int = MiB, width: float = 7.0,
                  legend: bool = True) -> Figure:
    """Segments as bars, blocks coloured by owner, free blocks hatched (PyTorch's viewer).

    ``colors``: owner -> palette index, kept between calls so an owner keeps its colour across a
    stepper's frames (new owners are added to it); ``unit``: bytes per unit of the x axis."""
    segs = segments_of(snapshot)
    colors = {} if colors is None else colors
    if ax is None:
        fig, ax = plt.subplots(figsize=(width, 0.5 + 0.42 * max(1, len(segs))))
    else:
        fig = ax.figure
    longest = max((s["total_size"] for s in segs), default=unit) / unit
    for row, seg in enumerate(segs):
        y = len(segs) - 1 - row
        for b in seg["blocks"]:
            x, w = (b["address"] - seg["address"]) / unit, b["size"] / unit
            if _active(b):
                who = owner_of(b)
                k = colors.setdefault(who, len(colors))
                ax.add_patch(Rectangle((x, y - 0.35), w, 0.7, facecolor=PALETTE[k % len(PALETTE)],
                                       edgecolor="#333333", lw=0.6))
                if w > longest * 0.06:
                    ax.text(x + w / 2, y, who, ha="center", va="center", fontsize=7, clip_on=True)
            else:
                ax.add_patch(Rectangle((x, y - 0.35), w, 0.7, facecolor="white",
                                       edgecolor="#999999", hatch="///", lw=0.6))
        kind = seg.get("segment_type", "")
        grow = ", expandable" if seg.get("is_expandable") else ""
        ax.text(-longest * 0.01, y, f"{kind}{grow} {seg['total_size'] / unit:g}", ha="right",
                va="center", fontsize=7)
    ax.set_xlim(0, longest * 1.02)
    ax.set_ylim(-0.6, max(1, len(segs)) - 0.4)
    ax.set_yticks([])
    ax.set_xlabel("MiB into the segment" if unit == MiB else f"x {unit} bytes into the segment")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    if not segs:
        ax.text(longest / 2, 0, "no segments", ha="center", va="center", color="#777777")
    if title:
        ax.set_title(title, fontsize=9, loc="left")
    if legend:
        ax.add_patch(Rectangle((0, 0), 0, 0, facecolor="white", edgecolor="#999999",
                               hatch="///", label="free (cached)"))
        ax.legend(loc="lower right", fontsize=7, frameon=False, bbox_to_anchor=(1, 1))
    return fig


def _events(snapshot: Any) -> list[Mapping]:
    trace = getattr(snapshot, "trace", None)
    if isinstance(trace, list):
        return trace
    if isinstance(snapshot, Mapping) and "device_traces" in snapshot:
        traces = snapshot["device_traces"]
        return list(traces[0]) if traces else []
    if isinstance(snapshot, list) and all(isinstance(e, Mapping) and "action" in e
                                          for e in snapshot):
        return snapshot
    raise MemlabError(f"memory_over_time: needs an allocator, a trace or a snapshot dict with "
                      f"'device_traces', got {type(snapshot).__name__}")


def timeline(snapshot: Any) -> tuple[list[int], list[int]]:
    """Allocated and reserved bytes after each event: memlab's recorded values, or for a PyTorch
    trace a recount (``alloc`` and ``free_completed`` sizes, which PyTorch records as requested
    bytes; ``segment_alloc``/``segment_map`` and ``segment_free``/``segment_unmap``)."""
    allocated, reserved, a, r = [], [], 0, 0
    for e in _events(snapshot):
        if "allocated" in e and "reserved" in e:
            a, r = e["allocated"], e["reserved"]
        else:
            act, size = e["action"], e.get("size", 0)
            a += size if act == "alloc" else -size if act == "free_completed" else 0
            r += size if act in ("segment_alloc", "segment_map") else \
                -size if act in ("segment_free", "segment_unmap") else 0
        allocated.append(a)
        reserved.append(r)
    return allocated, reserved


def memory_over_time(snapshot: Any, title: str | None = None, ax: Axes | None = None,
                     unit: int = MiB, figsize: tuple[float, float] = (6.0, 2.4)) -> Figure:
    """Allocated and reserved memory after each event, as step curves."""
    allocated, reserved = timeline(snapshot)
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=figsize)
    xs = list(range(1, len(allocated) + 1))
    ax.step(xs, [r / unit for r in reserved], where="post", lw=2, label="reserved")
    ax.step(xs, [a / unit for a in allocated], where="post", lw=1.5, label="allocated")
    ax.fill_between(xs, [a / unit for a in allocated], [r / unit for r in reserved], step="post",
                    alpha=0.15, label="reserved but unallocated")
    ax.set_xlabel("event")
    ax.set_ylabel("MiB" if unit == MiB else f"x {unit} bytes")
    ax.legend(fontsize=7, frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if title:
        ax.set_title(title, fontsize=9, loc="left")
    return fig


def allocator_frames(requests: Sequence[tuple], make: Callable[[], Any],
                     width: float = 6.0) -> list[Frame]:
    """One stepper frame per request on a fresh allocator from ``make()``: ``("alloc", name,
    nbytes)`` or ``("free", name)``; a request that raises an out-of-memory error is shown with
    its message. Each frame's caption says the step and the allocated and reserved bytes."""
    from ..errors import OutOfMemoryError
    alloc, held, colors, frames = make(), {}, {}, []
    for i, req in enumerate(requests):
        if req[0] == "alloc":
            _, name, nbytes = req
            try:
                held[name] = alloc.malloc(nbytes, name)
                what = f"malloc {name} ({nbytes / MiB:g} MiB)"
            except OutOfMemoryError as e:
                what = f"malloc {name} ({nbytes / MiB:g} MiB): out of memory ({str(e)[:60]}...)"
        else:
            alloc.free(held.pop(req[1]))
            what = f"free {req[1]}"
        caption = (f"{i + 1}. {what}: allocated {alloc.memory_allocated() / MiB:g} MiB, "
                   f"reserved {alloc.memory_reserved() / MiB:g} MiB")
        fig = draw_snapshot(alloc, colors=colors, width=width, legend=False)
        frames.append(Frame(to_svg(fig), caption))
    return frames

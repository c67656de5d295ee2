"""An independent check of a memory snapshot in PyTorch's format (``torch.cuda.memory_snapshot()``).

It reads only the list of segment dicts (``address``, ``total_size``, ``blocks`` with ``address``,
``size``, ``state``), so it checks :class:`~memlab.memory.caching.CachingAllocator`,
:class:`~memlab.memory.bfc.BFCAllocator`, a student's pool written out in that format, or a
snapshot taken on a real GPU with PyTorch: segments do not overlap; the blocks of a segment tile
it (every byte in exactly one block); with ``merged``, no two neighbouring blocks of a segment are
both free. :func:`snapshot_totals` recounts what the statistics should say.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..errors import PlanError

ACTIVE = ("active_allocated", "active_pending_free")


def _segments(snapshot: Any) -> list[Mapping]:
    if isinstance(snapshot, Mapping) and "segments" in snapshot:
        snapshot = snapshot["segments"]
    if not isinstance(snapshot, Iterable) or isinstance(snapshot, (str, bytes, Mapping)):
        raise PlanError(f"check_snapshot: snapshot must be a list of segments (or a dict with "
                        f"'segments'), got {type(snapshot).__name__}")
    return list(snapshot)


def check_snapshot(snapshot: Any, merged: bool = True) -> None:
    """Raise :class:`~memlab.errors.PlanError` naming the first segment or block at fault unless
    the segments do not overlap, each segment's blocks tile it and (``merged``) no two free
    blocks are neighbours."""
    segs = sorted(_segments(snapshot), key=lambda s: s["address"])
    end = None
    for seg in segs:
        a, n = seg["address"], seg["total_size"]
        if n <= 0:
            raise PlanError(f"segment at {a:#x} has total_size {n}")
        if end is not None and a < end:
            raise PlanError(f"segment at {a:#x} overlaps the segment before it (ends at {end:#x})")
        end, at, prev_free = a + n, a, False
        for b in seg["blocks"]:
            if b["address"] != at:
                what = "overlaps the block before it" if b["address"] < at else "leaves a gap"
                raise PlanError(f"block at {b['address']:#x} of segment {a:#x} {what} "
                                f"(expected {at:#x})")
            if b["size"] <= 0:
                raise PlanError(f"block at {at:#x} of segment {a:#x} has size {b['size']}")
            free = b["state"] not in ACTIVE
            if merged and free and prev_free:
                raise PlanError(f"free block at {at:#x} of segment {a:#x} follows a free block: "
                                f"they should have been merged")
            at, prev_free = at + b["size"], free
        if at != a + n:
            raise PlanError(f"the blocks of segment {a:#x} cover {at - a} of its {n} bytes")


def snapshot_totals(snapshot: Any) -> dict[str, int]:
    """What a snapshot says the statistics are: ``allocated_bytes``, ``reserved_bytes``,
    ``requested_bytes``, ``inactive_split_bytes`` (free blocks of segments that are not one free
    block, expandable segments left out as PyTorch does), ``segment``, ``allocation``, and the
    ``largest_free`` block."""
    out = dict.fromkeys(("allocated_bytes", "reserved_bytes", "requested_bytes",
                         "inactive_split_bytes", "segment", "allocation", "largest_free"), 0)
    for seg in _segments(snapshot):
        out["segment"] += 1
        out["reserved_bytes"] += seg["total_size"]
        blocks = seg["blocks"]
        for b in blocks:
            if b["state"] in ACTIVE:
                out["allocated_bytes"] += b["size"]
                out["requested_bytes"] += b.get("requested_size", 0)
                out["allocation"] += 1
            else:
                out["largest_free"] = max(out["largest_free"], b["size"])
                if len(blocks) > 1 and not seg.get("is_expandable", False):
                    out["inactive_split_bytes"] += b["size"]
    return out

"""Segments and blocks: what a splitting, merging allocator hands out, counts and shows.

A **segment** is one piece of memory the allocator obtained from the device (a ``cudaMalloc`` in
PyTorch, a region in TensorFlow); it is cut into **blocks** (PyTorch's word; TensorFlow says
chunks) that tile it: every byte of a segment is in exactly one block, each block handed out
("active_allocated") or cached ("inactive"). Blocks of one segment are linked in address order
(``prev``/``next``), so a freed block merges with its free neighbours and never with a block of
another segment (PyTorch's ``c10/cuda/CUDACachingAllocator.cpp``: ``Block``, ``free_block``,
``try_merge_blocks``; TensorFlow's ``bfc_allocator.cc``: ``Chunk``, ``Merge``).

:class:`SegmentAllocator` holds what :class:`~memlab.memory.caching.CachingAllocator` and
:class:`~memlab.memory.bfc.BFCAllocator` share: splitting, merging, the statistics under
PyTorch's names (``torch.cuda.memory_stats()``: each a current, peak, allocated and freed count,
for all pools and for each pool), the trace of events (the actions of PyTorch's
``device_traces``) and ``memory_snapshot()`` in the format of ``torch.cuda.memory_snapshot()``.
Addresses are virtual: segments are laid out one after another in an address space of their own;
a segment's bytes are a numpy buffer made the first time a block is viewed.
"""
from __future__ import annotations

from bisect import bisect_left, insort
from typing import Any, Sequence

import numpy as np

from ..errors import MemlabError, check_int

STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
         "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes")
ACTIONS = ("alloc", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "oom")


def format_size(nbytes: int) -> str:
    """A size as PyTorch's out-of-memory message writes it (``format_size``): bytes up to
    1 KiB, then KiB, MiB or GiB with two decimals."""
    if nbytes <= 1024:
        return f"{nbytes} bytes"
    for unit, scale in (("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)):
        if nbytes <= scale << 10 or unit == "GiB":
            return f"{nbytes / scale:.2f} {unit}"
    raise AssertionError  # pragma: no cover


class Segment:
    """One piece of device memory: ``size`` bytes at ``address``, in pool ``pool``, its blocks
    linked from ``head``. ``expandable``: grown by mapping pages at its end."""

    __slots__ = ("address", "size", "pool", "expandable", "head", "allocator", "space",
                 "_buffer")

    def __init__(self, allocator: "SegmentAllocator", address: int, size: int, pool: int,
                 expandable: bool = False, space: int = 0) -> None:
        self.allocator, self.address, self.size, self.pool = allocator, address, size, pool
        self.expandable, self.space, self.head = expandable, max(space, size), None
        self._buffer: np.ndarray | None = None

    def blocks(self) -> list["Block"]:
        """The blocks of the segment in address order."""
        out, b = [], self.head
        while b is not None:
            out.append(b)
            b = b.next
        return out

    def buffer(self) -> np.ndarray:
        """The segment's bytes (made on first use; an expandable segment's covers its whole
        address space, so blocks keep their views while it grows)."""
        if self._buffer is None:
            self._buffer = np.empty(self.space, np.uint8)
        if self.size > self._buffer.nbytes:
            raise MemlabError(f"the expandable segment at {self.address:#x} grew to {self.size} "
                              f"bytes, past the {self._buffer.nbytes} bytes of its address space")
        return self._buffer


class Block:
    """``size`` bytes at ``address`` of ``segment``; ``allocated`` when handed out, with the
    ``requested`` bytes and the ``owner`` named in ``malloc``."""

    __slots__ = ("address", "size", "requested", "owner", "allocated", "segment", "prev", "next")

    def __init__(self, segment: Segment, address: int, size: int) -> None:
        self.segment, self.address, self.size = segment, address, size
        self.requested, self.owner, self.allocated = 0, "", False
        self.prev: Block | None = None
        self.next: Block | None = None

    @property
    def offset(self) -> int:
        """Where the block starts inside its segment."""
        return self.address - self.segment.address

    def is_split(self) -> bool:
        """Whether the block shares its segment with another block."""
        return self.prev is not None or self.next is not None

    def view(self, shape: Sequence[int], dtype: Any) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` at the block's offset in its segment's buffer."""
        dtype = np.dtype(dtype)
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize > self.size:
            raise MemlabError(f"a view of shape {tuple(shape)} and dtype {dtype} does not fit "
                              f"in a block of {self.size} bytes")
        return np.ndarray(tuple(shape), dtype, buffer=self.segment.buffer(), offset=self.offset)

    def __repr__(self) -> str:
        state = "allocated" if self.allocated else "free"
        return f"Block({self.owner!r}, {self.size} bytes at {self.address:#x}, {state})"


class Stat:
    """A counter as PyTorch keeps it: current, peak, and the totals added and removed."""

    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self) -> None:
        self.current = self.peak = self.allocated = self.freed = 0


class SegmentAllocator:
    """Splitting and merging blocks over segments, with PyTorch's statistics and snapshots.

    A subclass says which free block serves a request (:meth:`_find`), whether to split it
    (:meth:`_should_split`), which free list a block goes in (:meth:`_list_of`) and how to get a
    new segment (``malloc`` itself)."""

    POOLS: tuple[str, ...] = ()          #: names of the pools, for the statistics' keys
    SEGMENT_ALIGN = 2 << 20              #: segments start at multiples of this address

    def __init__(self, capacity: int | None, trace: bool) -> None:
        self.capacity = None if capacity is None else check_int(
            capacity, f"{type(self).__name__}: capacity", 0)
        self.record_trace = bool(trace)
        self.segments: dict[int, Segment] = {}          # address -> segment
        self._free: dict[int, Block] = {}               # address -> free block
        self._next_address = self.SEGMENT_ALIGN
        self._stats = {name: [Stat() for _ in range(1 + len(self.POOLS))] for name in STATS}
        self.counts = {"num_alloc_retries": 0, "num_ooms": 0, "num_device_alloc": 0,
                       "num_device_free": 0, "num_sync_all_streams": 0}
        self._events: list[tuple] = []

    # -- statistics -----------------------------------------------------------------------------
    def _inc(self, name: str, pool: int, amount: int) -> None:
        pair = self._stats[name]
        for s in (pair[0], pair[pool + 1]) if self.POOLS else (pair[0],):
            s.current += amount
            if amount >= 0:
                s.allocated += amount
                if s.current > s.peak:
                    s.peak = s.current
            else:
                s.freed -= amount

    def memory_allocated(self) -> int:
        """Bytes of the blocks handed out (``torch.cuda.memory_allocated``)."""
        return self._stats["allocated_bytes"][0].current

    def memory_reserved(self) -> int:
        """Bytes of all segments (``torch.cuda.memory_reserved``)."""
        return self._stats["reserved_bytes"][0].current

    def max_memory_allocated(self) -> int:
        """The peak of :meth:`memory_allocated`."""
        return self._stats["allocated_bytes"][0].peak

    def max_memory_reserved(self) -> int:
        """The peak of :meth:`memory_reserved`."""
        return self._stats["reserved_bytes"][0].peak

    def memory_stats(self) -> dict[str, int]:
        """The counters under ``torch.cuda.memory_stats()``'s keys, sorted, such as
        ``allocated_bytes.all.current`` or ``reserved_bytes.large_pool.peak``."""
        out: dict[str, int] = dict(self.counts)
        for name, stats in self._stats.items():
            for pool, s in zip(("all",) + self.POOLS, stats):
                for field in Stat.__slots__:
                    out[f"{name}.{pool}.{field}"] = getattr(s, field)
        return dict(sorted(out.items()))

    # -- trace ----------------------------------------------------------------------------------
    def _log(self, action: str, address: int, size: int, owner: str = "") -> None:
        if self.record_trace:
            self._events.append((action, address, size, owner,
                                 self._stats["allocated_bytes"][0].current,
                                 self._stats["reserved_bytes"][0].current))

    @property
    def trace(self) -> list[dict]:
        """Every event in order, as ``device_traces`` entries of PyTorch's snapshot (``action``,
        ``addr``, ``size``) with memlab's ``owner`` and the ``allocated`` and ``reserved``
        bytes after it."""
        return [{"action": a, "addr": addr, "size": size, "stream": 0, "frames": [],
                 "owner": owner, "allocated": al, "reserved": re, "time_us": i}
                for i, (a, addr, size, owner, al, re) in enumerate(self._events)]

    # -- snapshot -------------------------------------------------------------------------------
    def memory_snapshot(self) -> list[dict]:
        """The segments as ``torch.cuda.memory_snapshot()`` lists them, by address: each with
        ``address``, ``total_size``, ``segment_type``, ``allocated_size``, ``requested_size``,
        ``is_expandable`` and its ``blocks`` (``address``, ``size``, ``requested_size``,
        ``state`` "active_allocated" or "inactive", and memlab's ``owner``)."""
        out = []
        for addr in sorted(self.segments):
            seg = self.segments[addr]
            blocks = [{"address": b.address, "size": b.size,
                       "requested_size": b.requested if b.allocated else 0,
                       "state": "active_allocated" if b.allocated else "inactive",
                       "owner": b.owner if b.allocated else "", "frames": []}
                      for b in seg.blocks()]
            used = [b for b in blocks if b["state"] == "active_allocated"]
            out.append({"device": 0, "address": addr, "total_size": seg.size, "stream": 0,
                        "segment_type": self._segment_type(seg), "segment_pool_id": [0, 0],
                        "is_expandable": seg.expandable, "frames": [],
                        "allocated_size": sum(b["size"] for b in used),
                        "active_size": sum(b["size"] for b in used),
                        "requested_size": sum(b["requested_size"] for b in used),
                        "blocks": blocks})
        return out

    def snapshot(self) -> dict:
        """What ``torch.cuda.memory._snapshot()`` returns: ``segments`` and ``device_traces``."""
        return {"segments": self.memory_snapshot(), "device_traces": [self.trace]}

    def _segment_type(self, seg: Segment) -> str:
        return self.POOLS[seg.pool].removesuffix("_pool") if self.POOLS else "large"

    # -- blocks ---------------------------------------------------------------------------------
    def _list_of(self, block: Block) -> list[tuple[int, int]]:
        """The sorted ``(size, address)`` free list ``block`` belongs in."""
        raise NotImplementedError

    def _insert_free(self, block: Block) -> None:
        insort(self._list_of(block), (block.size, block.address))
        self._free[block.address] = block

    def _remove_free(self, block: Block) -> None:
        lst = self._list_of(block)
        del lst[bisect_left(lst, (block.size, block.address))]
        del self._free[block.address]

    def _new_segment(self, size: int, pool: int, expandable: bool = False,
                     space: int = 0) -> Segment:
        """A segment of ``size`` bytes with one free block (not yet in a free list)."""
        align = self.SEGMENT_ALIGN
        seg = Segment(self, self._next_address, size, pool, expandable, space)
        self._next_address += -(-max(size, space) // align) * align + align
        seg.head = Block(seg, seg.address, size)
        self.segments[seg.address] = seg
        self._inc("segment", pool, 1)
        self._inc("reserved_bytes", pool, size)
        self.counts["num_device_alloc"] += 1
        self._log("segment_map" if expandable else "segment_alloc", seg.address, size)
        return seg

    def _release_segment(self, seg: Segment) -> None:
        """Give back a segment that is one free block."""
        self._remove_free(seg.head)
        del self.segments[seg.address]
        self._inc("segment", seg.pool, -1)
        self._inc("reserved_bytes", seg.pool, -seg.size)
        self.counts["num_device_free"] += 1
        self._log("segment_unmap" if seg.expandable else "segment_free", seg.address, seg.size)

    def _take(self, block: Block, size: int, nbytes: int, owner: str, split: bool) -> Block:
        """Hand out the front ``size`` bytes of the free ``block`` (already out of its free
        list), the rest becoming a free block when ``split`` (PyTorch's ``alloc_found_block``)."""
        seg, pool = block.segment, block.segment.pool
        was_split, counted = block.is_split(), not seg.expandable
        out = Block(seg, block.address, block.size)
        out.prev, out.next = block.prev, block.next
        if out.prev is None:
            seg.head = out
        else:
            out.prev.next = out
        if out.next is not None:
            out.next.prev = out
        if split:
            rest = Block(seg, block.address + size, block.size - size)
            rest.prev, rest.next, out.size = out, out.next, size
            if rest.next is not None:
                rest.next.prev = rest
            out.next = rest
            self._insert_free(rest)
            if counted:
                if was_split:
                    self._inc("inactive_split_bytes", pool, -size)
                else:
                    self._inc("inactive_split_bytes", pool, rest.size)
                    self._inc("inactive_split", pool, 1)
        elif was_split and counted:
            self._inc("inactive_split_bytes", pool, -out.size)
            self._inc("inactive_split", pool, -1)
        out.allocated, out.requested, out.owner = True, nbytes, owner
        for name in ("allocation", "active"):
            self._inc(name, pool, 1)
        for name in ("allocated_bytes", "active_bytes"):
            self._inc(name, pool, out.size)
        self._inc("requested_bytes", pool, nbytes)
        self._log("alloc", out.address, out.size, owner)
        return out

    def _check_block(self, block: object, what: str) -> Block:
        if not isinstance(block, Block):
            raise MemlabError(f"{type(self).__name__}.{what}: block must be a Block from "
                              f"malloc(), got {type(block).__name__}")
        if block.segment.allocator is not self:
            raise MemlabError(f"{type(self).__name__}.{what}: block {block.owner!r} at "
                              f"{block.address:#x} belongs to another allocator")
        if not block.allocated:
            raise MemlabError(f"{type(self).__name__}.{what}: block {block.owner!r} at "
                              f"{block.address:#x} is freed twice")
        return block

    def free(self, block: Block) -> None:
        """Give ``block`` back: it merges with its free neighbours in its segment and is cached
        (PyTorch's ``free_block``)."""
        block = self._check_block(block, "free")
        seg, pool = block.segment, block.segment.pool
        block.allocated = False
        for name in ("allocation", "active"):
            self._inc(name, pool, -1)
        for name in ("allocated_bytes", "active_bytes"):
            self._inc(name, pool, -block.size)
        self._inc("requested_bytes", pool, -block.requested)
        self._log("free_completed", block.address, block.size, block.owner)
        merged_blocks = merged_bytes = 0
        for other in (block.prev, block.next):
            if other is not None and not other.allocated:
                self._remove_free(other)
                if other is block.prev:
                    block.address, block.prev = other.address, other.prev
                    if block.prev is None:
                        seg.head = block
                    else:
                        block.prev.next = block
                else:
                    block.next = other.next
                    if block.next is not None:
                        block.next.prev = block
                block.size += other.size
                merged_blocks, merged_bytes = merged_blocks + 1, merged_bytes + other.size
        block.requested, block.owner = 0, ""
        self._insert_free(block)
        if not seg.expandable:
            if block.is_split():
                merged_blocks, merged_bytes = merged_blocks - 1, merged_bytes - block.size
            if merged_blocks:
                self._inc("inactive_split", pool, -merged_blocks)
            if merged_bytes:
                self._inc("inactive_split_bytes", pool, -merged_bytes)

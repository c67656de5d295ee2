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

STATS = ("allocation", "segment", "inactive_split", "allocated_bytes", "reserved_bytes",
         "inactive_split_bytes", "requested_bytes")
ALLOCATION, SEGMENT, INACTIVE_SPLIT, ALLOCATED, RESERVED, INACTIVE_SPLIT_BYTES, REQUESTED = \
    range(len(STATS))
assert (3 * ALLOCATION, 3 * INACTIVE_SPLIT, 3 * ALLOCATED, 3 * RESERVED, 3 * INACTIVE_SPLIT_BYTES,
        3 * REQUESTED) == (0, 6, 9, 12, 15, 18)          # slots inlined in _take and free
#: one stream and no pending events: "active" is "allocated" (PyTorch's when no block waits)
DERIVED = {"active": "allocation", "active_bytes": "allocated_bytes"}
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

    def __init__(self, segment: Segment, address: int, size: int, requested: int = 0,
                 owner: str = "", allocated: bool = False) -> None:
        self.segment, self.address, self.size = segment, address, size
        self.requested, self.owner, self.allocated = requested, owner, allocated
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
        n = 3 * len(STATS)      # slot 3 * stat: all pools; + 1 + pool: one pool
        self._cur, self._peak, self._added = [0] * n, [0] * n, [0] * n   # freed: added - cur
        self.counts = {"num_alloc_retries": 0, "num_ooms": 0, "num_device_alloc": 0,
                       "num_device_free": 0, "num_sync_all_streams": 0}
        self._events: list[tuple] = []

    # -- statistics -----------------------------------------------------------------------------
    def _inc(self, stat: int, pool: int, amount: int) -> None:
        i = 3 * stat
        j = i + 1 + pool
        cur = self._cur
        cur[i] += amount
        cur[j] += amount
        if amount >= 0:
            added, peak = self._added, self._peak
            added[i] += amount
            added[j] += amount
            if cur[i] > peak[i]:
                peak[i] = cur[i]
            if cur[j] > peak[j]:
                peak[j] = cur[j]

    def memory_allocated(self) -> int:
        """Bytes of the blocks handed out (``torch.cuda.memory_allocated``)."""
        return self._cur[3 * ALLOCATED]

    def memory_reserved(self) -> int:
        """Bytes of all segments (``torch.cuda.memory_reserved``)."""
        return self._cur[3 * RESERVED]

    def max_memory_allocated(self) -> int:
        """The peak of :meth:`memory_allocated`."""
        return self._peak[3 * ALLOCATED]

    def max_memory_reserved(self) -> int:
        """The peak of :meth:`memory_reserved`."""
        return self._peak[3 * RESERVED]

    def memory_stats(self) -> dict[str, int]:
        """The counters under ``torch.cuda.memory_stats()``'s keys, sorted, such as
        ``allocated_bytes.all.current`` or ``reserved_bytes.large_pool.peak``."""
        out: dict[str, int] = dict(self.counts)
        freed = [a - c for a, c in zip(self._added, self._cur)]
        fields = (("current", self._cur), ("peak", self._peak), ("allocated", self._added),
                  ("freed", freed))
        for k, name in enumerate(STATS):
            for slot, pool in enumerate(("all",) + self.POOLS):
                for field, values in fields:
                    out[f"{name}.{pool}.{field}"] = values[3 * k + slot]
        for alias, name in DERIVED.items():
            for key in [key for key in out if key.startswith(name + ".")]:
                out[alias + key[len(name):]] = out[key]
        return dict(sorted(out.items()))

    # -- trace ----------------------------------------------------------------------------------
    def _log(self, action: str, address: int, size: int, owner: str = "") -> None:
        if self.record_trace:
            cur = self._cur
            self._events.append((action, address, size, owner, cur[3 * ALLOCATED],
                                 cur[3 * RESERVED]))

    @property
    def trace(self) -> list[dict]:
        """Every event in order, as ``device_traces`` entries of PyTorch's snapshot (``action``,
        ``addr``, ``size``: the requested bytes of an allocation or free, as PyTorch records
        them, the bytes of a segment) with memlab's ``owner`` and the ``allocated`` and
        ``reserved`` bytes after it."""
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
        self._inc(SEGMENT, pool, 1)
        self._inc(RESERVED, pool, size)
        self.counts["num_device_alloc"] += 1
        self._log("segment_map" if expandable else "segment_alloc", seg.address, size)
        return seg

    def _release_segment(self, seg: Segment) -> None:
        """Give back a segment that is one free block."""
        self._remove_free(seg.head)
        del self.segments[seg.address]
        self._inc(SEGMENT, seg.pool, -1)
        self._inc(RESERVED, seg.pool, -seg.size)
        self.counts["num_device_free"] += 1
        self._log("segment_unmap" if seg.expandable else "segment_free", seg.address, seg.size)

    def _take(self, block: Block, size: int, nbytes: int, owner: str, split: bool) -> Block:
        """Hand out the front ``size`` bytes of the free ``block`` (already out of its free
        list), the rest staying a free block when ``split`` (PyTorch's ``alloc_found_block``).
        The block handed out is always a new object, so a handle kept after ``free`` is never
        handed out again and freeing it twice is caught."""
        seg = block.segment
        pool, prev, nxt = seg.pool, block.prev, block.next
        out = Block(seg, block.address, size if split else block.size, nbytes, owner, True)
        out.prev = prev
        if prev is None:
            seg.head = out
        else:
            prev.next = out
        if split:
            out.next, block.prev = block, out
            block.address += size
            block.size -= size
            self._insert_free(block)
        else:
            out.next = nxt
            if nxt is not None:
                nxt.prev = out
            block.prev = block.next = None
        # the statistics below are :meth:`_inc` inlined (it would run several times per event);
        # slots 3 * stat (all pools) and 3 * stat + 1 + pool (this pool), a decrease without peaks
        cur, j, got = self._cur, 1 + pool, out.size
        if not seg.expandable:
            if prev is not None or nxt is not None:      # taken from a split block
                cur[15] -= got                           # INACTIVE_SPLIT_BYTES
                cur[15 + j] -= got
                if not split:
                    cur[6] -= 1                          # INACTIVE_SPLIT
                    cur[6 + j] -= 1
            elif split:
                self._inc(INACTIVE_SPLIT_BYTES, pool, block.size)
                self._inc(INACTIVE_SPLIT, pool, 1)
        added, peak = self._added, self._peak
        k = j + 9                 # ALLOCATION (0), ALLOCATED (9), REQUESTED (18) go up
        x, y, z, w = cur[0] + 1, cur[j] + 1, cur[9] + got, cur[k] + got
        cur[0], cur[j], cur[9], cur[k] = x, y, z, w
        added[0] += 1
        added[j] += 1
        added[9] += got
        added[k] += got
        if x > peak[0]:
            peak[0] = x
        if y > peak[j]:
            peak[j] = y
        if z > peak[9]:
            peak[9] = z
        if w > peak[k]:
            peak[k] = w
        k = j + 18
        x, y = cur[18] + nbytes, cur[k] + nbytes
        cur[18], cur[k] = x, y
        added[18] += nbytes
        added[k] += nbytes
        if x > peak[18]:
            peak[18] = x
        if y > peak[k]:
            peak[k] = y
        if self.record_trace:
            self._events.append(("alloc", out.address, nbytes, owner, z, cur[12]))
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
        if type(block) is not Block or not block.allocated or block.segment.allocator is not self:
            self._check_block(block, "free")
        seg = block.segment
        pool = seg.pool
        block.allocated = False
        cur, j, size, req = self._cur, 1 + pool, block.size, block.requested
        cur[0] -= 1              # the allocation count, allocated and requested bytes go down
        cur[j] -= 1
        cur[9] -= size
        cur[9 + j] -= size
        cur[18] -= req
        cur[18 + j] -= req
        if self.record_trace:
            self._events.append(("free_completed", block.address, req, block.owner, cur[9],
                                 cur[12]))
        merged_blocks = merged_bytes = 0
        prev, nxt = block.prev, block.next
        if prev is not None and not prev.allocated:
            self._remove_free(prev)
            block.address, block.prev = prev.address, prev.prev
            if block.prev is None:
                seg.head = block
            else:
                block.prev.next = block
            block.size += prev.size
            merged_blocks, merged_bytes = 1, prev.size
        if nxt is not None and not nxt.allocated:
            self._remove_free(nxt)
            block.next = nxt.next
            if block.next is not None:
                block.next.prev = block
            block.size += nxt.size
            merged_blocks, merged_bytes = merged_blocks + 1, merged_bytes + nxt.size
        block.requested, block.owner = 0, ""
        self._insert_free(block)
        if not seg.expandable:
            if block.prev is not None or block.next is not None:
                merged_blocks, merged_bytes = merged_blocks - 1, merged_bytes - block.size
            # INACTIVE_SPLIT (slot 6) and INACTIVE_SPLIT_BYTES (15) go down by the merged blocks
            # and bytes (up, with peaks, when negative): _inc inlined
            added, peak = self._added, self._peak
            for k, gone in ((6, merged_blocks), (15, merged_bytes)):
                if gone:
                    x, y = cur[k] - gone, cur[k + j] - gone
                    cur[k], cur[k + j] = x, y
                    if gone < 0:
                        added[k] -= gone
                        added[k + j] -= gone
                        if x > peak[k]:
                            peak[k] = x
                        if y > peak[k + j]:
                            peak[k + j] = y

"""PyTorch's CUDA caching allocator, modelled rule for rule (beyond lecture 7's p.14-16).

The rules are those of ``c10/cuda/CUDACachingAllocator.cpp`` (the comment at its top,
``round_size``, ``get_allocation_size``, ``get_free_block``, ``should_split``, ``malloc``,
``release_cached_blocks``, Note [Expandable Segments]) and of the "CUDA memory management"
section of PyTorch's CUDA semantics notes; the code is memlab's:

* **Sizes.** A request is rounded up to a multiple of 512 bytes (at least 512). Requests of at
  most 1 MiB use the small pool, larger ones the large pool. A new segment is 2 MiB for the small
  pool; for the large pool 20 MiB when the request is under 10 MiB, else the request rounded up
  to a multiple of 2 MiB.
* **Best fit.** A request takes the smallest free block of its pool that fits (ties: the lowest
  address) and, when larger, is split, the request taking the front, if the remainder is at least
  512 bytes (small pool, or any pool with expandable segments) or more than 1 MiB (large pool).
* **Freeing** merges a block with its free neighbours in the same segment, never across segments.
* **max_split_size** (more than 20 MiB, as PyTorch requires). Blocks of at least that size are
  never split; a request under it is never served by one, and a request of at least it only by
  one less than 20 MiB larger.
* **Capacity.** When a new segment would pass ``capacity``: with ``max_split_size``, first release
  one cached unsplit oversize block big enough (else the largest ones until enough), retry; then
  release every wholly free segment of both pools (``num_alloc_retries``), retry; then raise
  :class:`~memlab.errors.OutOfMemoryError` with PyTorch's message.
* **Expandable segments.** One segment per pool that grows by pages at its end (2 MiB small,
  20 MiB large) when no free block fits; a free block at its end grows with the new pages. In
  best fit that end block counts as the size it could grow to, so any other fitting block goes
  first. ``inactive_split`` statistics leave expandable segments out, as PyTorch's do.

Where memlab differs: one device and one stream (no events, no CUDA graph pools, no
``roundup_power2_divisions``, no garbage-collection threshold); releasing an expandable segment
unmaps the free pages at its end only (PyTorch unmaps every wholly free page, which can leave
holes that later growth fills first); the capacity is the only limit (no memory used by others).

:class:`~memlab.memory.pool.MemoryPool`, the lecture's pool (p.14-16), rounds and reuses whole
blocks by best fit but never splits, merges or groups blocks into segments, and has one free list;
this allocator is what PyTorch actually does.
"""
from __future__ import annotations

from bisect import bisect_left, insort

from ..errors import OutOfMemoryError, check_bool, check_int
from .blocks import RESERVED, Block, Segment, SegmentAllocator, format_size

MIN_BLOCK = 512                  #: kMinBlockSize: sizes are rounded to multiples of this
SMALL_SIZE = 1 << 20             #: kSmallSize: the largest request of the small pool
SMALL_BUFFER = 2 << 20           #: kSmallBuffer: a small-pool segment (and page)
LARGE_BUFFER = 20 << 20          #: kLargeBuffer: a large-pool segment for requests under 10 MiB
MIN_LARGE_ALLOC = 10 << 20       #: kMinLargeAlloc
ROUND_LARGE = 2 << 20            #: kRoundLarge: larger segments are multiples of this
SMALL, LARGE = 0, 1              #: pool indices


def round_size(nbytes: int) -> int:
    """A request's block size: ``nbytes`` rounded up to a multiple of 512, at least 512."""
    return -(-nbytes // MIN_BLOCK) * MIN_BLOCK if nbytes > MIN_BLOCK else MIN_BLOCK


def allocation_size(size: int) -> int:
    """The size of a new segment for a (rounded) request of ``size`` bytes."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


class CachingAllocator(SegmentAllocator):
    """PyTorch's CUDA caching allocator: segments, blocks, two pools, split and merge.

    ``malloc(nbytes, owner="")`` returns a :class:`~memlab.memory.blocks.Block`, ``free(block)``
    gives it back; ``memory_allocated()``, ``memory_reserved()``, their ``max_`` peaks,
    ``memory_stats()``, ``memory_snapshot()``, ``snapshot()``, ``empty_cache()`` and ``trace``
    are named as in ``torch.cuda``. ``capacity``: device bytes (None: unlimited);
    ``max_split_size``: PyTorch's ``max_split_size_mb`` in bytes; ``expandable_segments``:
    PyTorch's ``expandable_segments:True``; ``trace``: record events.
    """

    POOLS = ("small_pool", "large_pool")

    def __init__(self, expandable_segments: bool = False, capacity: int | None = None,
                 max_split_size: int | None = None, trace: bool = True) -> None:
        super().__init__(capacity, trace)
        self.expandable_segments = check_bool(expandable_segments,
                                              "CachingAllocator: expandable_segments")
        self.max_split_size = None if max_split_size is None else check_int(
            max_split_size, "CachingAllocator: max_split_size", LARGE_BUFFER + 1)
        self._max_split = self.max_split_size or (1 << 62)
        self._lists: tuple[list, list] = ([], [])
        self._tail: list[Segment | None] = [None, None]   # the expandable segment of each pool

    def _list_of(self, block: Block) -> list[tuple[int, int]]:
        return self._lists[block.segment.pool]

    def _insert_free(self, block: Block) -> None:
        insort(self._lists[block.segment.pool], (block.size, block.address))
        self._free[block.address] = block

    def _remove_free(self, block: Block) -> None:
        lst = self._lists[block.segment.pool]
        del lst[bisect_left(lst, (block.size, block.address))]
        del self._free[block.address]

    # -- choosing a block -------------------------------------------------------------------------
    def _find(self, pool: int, size: int) -> Block | None:
        """PyTorch's ``get_free_block``: the best fit, under the oversize rules."""
        lst = self._lists[pool]
        i = bisect_left(lst, (size, 0))
        if i == len(lst):
            return None
        free = self._free
        block = free[lst[i][1]]
        if block.segment.expandable and block.next is None and i + 1 < len(lst):
            i += 1                              # the end block counts as what it could grow to
            block = free[lst[i][1]]
        cap = self._max_split
        if size < cap <= block.size or (size >= cap and block.size >= size + LARGE_BUFFER):
            return None
        del lst[i], free[block.address]         # _remove_free, knowing where it is
        return block

    # -- getting memory from the device -----------------------------------------------------------
    def _fits(self, nbytes: int) -> bool:
        return self.capacity is None or self.memory_reserved() + nbytes <= self.capacity

    def _alloc_segment(self, pool: int, size: int) -> Block | None:
        """A free block of at least ``size`` bytes in new device memory, or None when it does not
        fit in the capacity (PyTorch's ``alloc_block``)."""
        if self.expandable_segments:
            return self._grow(pool, size)
        alloc = allocation_size(size)
        if not self._fits(alloc):
            return None
        return self._new_segment(alloc, pool).head

    def _grow(self, pool: int, size: int) -> Block | None:
        """Map pages at the end of the pool's expandable segment until its end block holds
        ``size`` bytes."""
        page = SMALL_BUFFER if pool == SMALL else LARGE_BUFFER
        seg = self._tail[pool]
        last = None
        if seg is not None:
            last = seg.head
            while last.next is not None:
                last = last.next
            if last.allocated:
                last = None
        have = 0 if last is None else last.size
        grow = max(0, -(-(size - have) // page) * page)
        if grow == 0:
            self._remove_free(last)
            return last
        if not self._fits(grow):
            return None
        if seg is None:
            space = self.capacity if self.capacity is not None else 1 << 30
            seg = self._tail[pool] = self._new_segment(grow, pool, True, max(space, grow))
            return seg.head
        self.counts["num_device_alloc"] += 1
        if last is not None:
            self._remove_free(last)
            last.size += grow
        else:
            end = seg.head
            while end.next is not None:
                end = end.next
            last = Block(seg, seg.address + seg.size, grow)
            last.prev, end.next = end, last
        seg.size += grow
        self._inc(RESERVED, pool, grow)
        self._log("segment_map", seg.address + seg.size - grow, grow)
        return last

    def _release_oversize(self, pool: int, size: int) -> bool:
        """PyTorch's ``release_available_cached_blocks``: with ``max_split_size``, release one
        cached unsplit block of at least ``max(size, max_split_size)``, else the largest oversize
        ones until that much is released."""
        if self.max_split_size is None:
            return False
        key = max(size, self.max_split_size)
        lst = self._lists[pool]
        cand = [self._free[a] for _, a in lst]
        whole = [b for b in cand if not b.is_split() and not b.segment.expandable]
        fit = [b for b in whole if b.size >= key]
        if fit:
            self._release_segment(fit[0].segment)
            return True
        big = sorted((b for b in whole if b.size >= self.max_split_size),
                     key=lambda b: (b.size, b.address), reverse=True)
        released = 0
        for b in big:
            if released >= key:
                break
            released += b.size
            self._release_segment(b.segment)
        return released >= key

    def empty_cache(self) -> int:
        """Release every wholly free segment (with expandable segments, the free pages at the
        end of each); returns the bytes released (``torch.cuda.empty_cache``)."""
        before = self.memory_reserved()
        for seg in [s for s in self.segments.values() if not s.expandable]:
            if not seg.head.allocated and seg.head.next is None:
                self._release_segment(seg)
        for pool, seg in enumerate(self._tail):
            if seg is not None:
                self._unmap_end(pool, seg)
        return before - self.memory_reserved()

    def _unmap_end(self, pool: int, seg: Segment) -> None:
        page = SMALL_BUFFER if pool == SMALL else LARGE_BUFFER
        last = seg.head
        while last.next is not None:
            last = last.next
        if last.allocated:
            return
        keep = -(-last.offset // page) * page - last.offset  # bytes before the first whole page
        cut = last.size - keep
        if cut <= 0:
            return
        if last is seg.head and keep == 0:
            self._release_segment(seg)
            self._tail[pool] = None
            return
        self._remove_free(last)
        if keep:
            last.size = keep
            self._insert_free(last)
        else:
            last.prev.next = None
        seg.size -= cut
        self._inc(RESERVED, pool, -cut)
        self.counts["num_device_free"] += 1
        self._log("segment_unmap", seg.address + seg.size, cut)

    # -- the interface ----------------------------------------------------------------------------
    def malloc(self, nbytes: int, owner: str = "") -> Block:
        """A block for a request of ``nbytes`` bytes (PyTorch's ``malloc``)."""
        if type(nbytes) is not int or nbytes < 1:
            nbytes = check_int(nbytes, "CachingAllocator.malloc: nbytes", 1)
        size = -(-nbytes // MIN_BLOCK) * MIN_BLOCK      # round_size(nbytes), inlined
        pool = SMALL if size <= SMALL_SIZE else LARGE
        block = self._find(pool, size)
        if block is None:
            block = self._alloc_segment(pool, size)
            if block is None and self._release_oversize(pool, size):
                block = self._alloc_segment(pool, size)
            if block is None:
                self.empty_cache()
                self.counts["num_alloc_retries"] += 1
                block = self._alloc_segment(pool, size)
            if block is None:
                self._out_of_memory(nbytes, size, pool)
        remaining = block.size - size
        if pool == SMALL or self.expandable_segments:
            split = remaining >= MIN_BLOCK
        else:
            split = size < self._max_split and remaining > SMALL_SIZE
        return self._take(block, size, nbytes, owner if type(owner) is str else str(owner),
                          split)

    def _out_of_memory(self, nbytes: int, size: int, pool: int) -> None:
        self.counts["num_ooms"] += 1
        self._log("oom", 0, size)
        alloc = allocation_size(size)
        allocated, reserved = self.memory_allocated(), self.memory_reserved()
        raise OutOfMemoryError(
            f"out of memory. Tried to allocate {format_size(alloc)} (a request of {nbytes} "
            f"bytes). The device has a total capacity of {format_size(self.capacity)} of which "
            f"{format_size(self.capacity - reserved)} is free. Of the allocated memory "
            f"{format_size(allocated)} is allocated, and {format_size(reserved - allocated)} is "
            f"reserved but unallocated. If reserved but unallocated memory is large try "
            f"expandable_segments=True to avoid fragmentation.")


__all__ = ["CachingAllocator", "round_size", "allocation_size"]

"""TensorFlow's BFC allocator ("best-fit with coalescing"), for contrast with PyTorch's.

The rules are those of TensorFlow's ``tensorflow/core/common_runtime/bfc_allocator.cc``
(``RoundedBytes``, ``BinNumForSize``, ``FindChunkPtr``, ``SplitChunk``, ``Extend``,
``FreeAndMaybeCoalesce``, ``DeallocateFreeRegions``) and its header's comment; the code is
memlab's:

* **Sizes.** A request is rounded up to a multiple of 256 bytes. Free chunks sit in 21 bins by
  size: bin ``i`` holds chunks of ``256 * 2**i`` bytes up to twice that, the last bin everything
  larger; within a bin they are ordered by size, then address.
* **Best fit.** A request searches its own bin and then larger ones for the first chunk that fits,
  which is the smallest fitting chunk (ties: the lowest address). The chunk is split, the request
  taking the front, when it is at least twice the request or wastes at least 128 MiB.
* **Coalescing.** A freed chunk merges with its free neighbours in the same region.
* **Regions.** There are no pools. When no chunk fits, the allocator obtains a new region
  (``allow_growth``: the first of 2 MiB, each next one twice as large, at least the request
  rounded up by doublings; without it one region of the whole ``capacity``). When that would pass
  ``capacity`` it releases every wholly free region and tries once more, then raises
  :class:`~memlab.errors.OutOfMemoryError`.

Where memlab differs: one device and one stream (no timestamped reuse, no backpedalling when the
device refuses a region, since here only the capacity refuses one). Regions are this allocator's
segments in ``memory_snapshot()``. Unlike PyTorch's
:class:`~memlab.memory.caching.CachingAllocator`, small and large requests share the regions, a
chunk is split only when the remainder is as large as the request, and a new region is sized by
doubling, not by the request.
"""
from __future__ import annotations

from bisect import bisect_left

from ..errors import MemlabError, OutOfMemoryError, check_bool, check_int
from .blocks import Block, SegmentAllocator, format_size

MIN_ALLOCATION = 256                 #: kMinAllocationSize (1 << kMinAllocationBits)
NUM_BINS = 21                        #: kNumBins
MAX_INTERNAL_FRAGMENTATION = 128 << 20  #: split whenever a chunk would waste this much
FIRST_REGION = 2 << 20               #: the first region with allow_growth


def rounded_bytes(nbytes: int) -> int:
    """A request's chunk size: ``nbytes`` rounded up to a multiple of 256, at least 256."""
    return max(MIN_ALLOCATION, -(-nbytes // MIN_ALLOCATION) * MIN_ALLOCATION)


def bin_for_size(nbytes: int) -> int:
    """The bin of a chunk of ``nbytes``: floor(log2(nbytes / 256)), at most 20."""
    return min(max(nbytes >> 8, 1).bit_length() - 1, NUM_BINS - 1)


class BFCAllocator(SegmentAllocator):
    """TensorFlow's best-fit-with-coalescing allocator over growing regions.

    The interface is :class:`~memlab.memory.caching.CachingAllocator`'s: ``malloc(nbytes,
    owner="")``, ``free(block)``, ``memory_allocated()`` (TensorFlow's ``bytes_in_use``),
    ``memory_reserved()`` (the regions' bytes), their peaks, ``memory_stats()``,
    ``memory_snapshot()`` and ``trace``. ``capacity``: TensorFlow's ``memory_limit`` (None:
    unlimited); ``allow_growth``: grow regions from 2 MiB (else one region of ``capacity``).
    """

    def __init__(self, capacity: int | None = None, allow_growth: bool = True,
                 trace: bool = True) -> None:
        super().__init__(capacity, trace)
        self.allow_growth = check_bool(allow_growth, "BFCAllocator: allow_growth")
        if not self.allow_growth and self.capacity is None:
            raise MemlabError("BFCAllocator: allow_growth=False needs a capacity (the one "
                                   "region it allocates)")
        self._bins: list[list[tuple[int, int]]] = [[] for _ in range(NUM_BINS)]
        self._region_bytes = FIRST_REGION if self.allow_growth else rounded_bytes(self.capacity)

    def _list_of(self, block: Block) -> list[tuple[int, int]]:
        return self._bins[bin_for_size(block.size)]

    def _find(self, size: int) -> Block | None:
        """``FindChunkPtr``: from the request's bin up, the first chunk that fits."""
        for b in range(bin_for_size(size), NUM_BINS):
            lst = self._bins[b]
            i = bisect_left(lst, (size, 0))
            if i < len(lst):
                block = self._free[lst[i][1]]
                self._remove_free(block)
                return block
        return None

    def _extend(self, size: int) -> Block | None:
        """``Extend``: a new region of at least ``size`` bytes, or None past the capacity."""
        available = None if self.capacity is None else self.capacity - self.memory_reserved()
        if available is not None and size > available:
            return None
        increased = False
        while size > self._region_bytes:
            self._region_bytes *= 2
            increased = True
        nbytes = self._region_bytes if available is None else min(self._region_bytes,
                                                                    available)
        if not increased:
            self._region_bytes *= 2
        return self._new_segment(nbytes, 0).head

    def _free_regions(self, size: int) -> bool:
        """``DeallocateFreeRegions``: release every wholly free region when that helps."""
        free = [s for s in self.segments.values() if not s.head.allocated and s.head.next is None]
        total = sum(s.size for s in free)
        if not total or size > self.capacity - self.memory_reserved() + total:
            return False
        for seg in free:
            self._release_segment(seg)
        return True

    def empty_cache(self) -> int:
        """Release every wholly free region; returns the bytes released."""
        before = self.memory_reserved()
        for seg in [s for s in self.segments.values()
                    if not s.head.allocated and s.head.next is None]:
            self._release_segment(seg)
        return before - self.memory_reserved()

    def malloc(self, nbytes: int, owner: str = "") -> Block:
        """A chunk for a request of ``nbytes`` bytes (TensorFlow's ``AllocateRaw``)."""
        if type(nbytes) is not int or nbytes < 1:
            nbytes = check_int(nbytes, "BFCAllocator.malloc: nbytes", 1)
        size = rounded_bytes(nbytes)
        block = self._find(size)
        if block is None:
            block = self._extend(size)
            if block is None and self._free_regions(size):
                self.counts["num_alloc_retries"] += 1
                block = self._extend(size)
            if block is None:
                self.counts["num_ooms"] += 1
                self._log("oom", 0, size)
                allocated, reserved = self.memory_allocated(), self.memory_reserved()
                raise OutOfMemoryError(
                    f"BFC allocator ran out of memory trying to allocate "
                    f"{format_size(size)} (a request of {nbytes} bytes, {owner or 'no owner'!r})."
                    f" Capacity {format_size(self.capacity)}: {format_size(allocated)} in use, "
                    f"{format_size(reserved - allocated)} in regions but free.")
        split = block.size >= 2 * size or block.size - size >= MAX_INTERNAL_FRAGMENTATION
        return self._take(block, size, nbytes, str(owner), split)


__all__ = ["BFCAllocator", "rounded_bytes", "bin_for_size"]

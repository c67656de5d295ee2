"""Dynamic memory allocation: a caching memory pool (lecture 7, p.14-16).

"Allocate when needed, recycle when a memory is not needed": a freed block
is not returned to the system but kept in a free list keyed by size, and a
later request is served from it when one fits. This is the scheme of
PyTorch's caching allocator, simplified and written by us (the lecture's pool):

* **Rounding**: every request is rounded up to a multiple of
  :data:`ROUND_BYTES` (512), and to at least 512 bytes, so sizes that differ
  by a few bytes land on the same block size and blocks get reused.
* **Best fit**: a request takes the smallest free block whose size is equal
  or larger (ties: the oldest block). Blocks are never split or merged, so a
  large block serving a small request wastes the difference; the statistics
  show it (``bytes_in_use`` counts block sizes, ``bytes_requested`` what was
  asked).
* **Statistics**: bytes in use, bytes reserved (in use plus cached), their
  peaks, and how many requests were served from the pool versus by a new
  block. ``events`` is the trace of every allocation and free.

How it differs from PyTorch's allocator as it really is
(:class:`~memlab.memory.caching.CachingAllocator`): there a request is cut from a **segment**
(2 MiB for requests up to 1 MiB, 20 MiB or the rounded request above), a cached block larger than
the request is **split**, a freed block **merges** with its free neighbours, small and large
requests keep separate pools, and ``empty_cache`` can release only segments that are wholly free.
Here every block is its own piece of memory, of exactly the rounded size.
"""
from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import PlanError, check_bool

ROUND_BYTES = 512  #: requests are rounded up to a multiple of this (and to at least this)


def round_size(nbytes: int) -> int:
    """The block size that serves a request of ``nbytes`` (multiple of 512, at least 512)."""
    return max(ROUND_BYTES, -(-nbytes // ROUND_BYTES) * ROUND_BYTES)


@dataclass(eq=False)
class Block:
    """One block of the pool: ``size`` bytes of ``buffer``, handed out or cached."""

    id: int
    size: int
    buffer: np.ndarray
    requested: int = 0
    owner: str = ""
    in_use: bool = False

    def view(self, shape: Sequence[int], dtype: Any) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` at the start of the block."""
        return np.ndarray(tuple(shape), np.dtype(dtype), buffer=self.buffer, offset=0)


@dataclass
class PoolEvent:
    """One entry of the trace: ``kind`` is "alloc", "free" or "release" (empty_cache)."""

    index: int
    kind: str
    owner: str
    requested: int
    block: int
    size: int
    from_pool: bool
    bytes_in_use: int
    bytes_reserved: int


@dataclass
class PoolStats:
    """Counters of a pool (p.14-16: how much the recycling saved)."""

    bytes_in_use: int = 0
    bytes_reserved: int = 0
    bytes_requested: int = 0
    peak_in_use: int = 0
    peak_reserved: int = 0
    requests: int = 0
    from_pool: int = 0
    new_blocks: int = 0


@dataclass
class MemoryPool:
    """A caching allocator: allocate when needed, recycle on free, best fit (p.14-16).

    ``allocate(nbytes, owner)`` returns a :class:`Block`; ``free(block)`` puts
    it in the free list keyed by size; ``empty_cache()`` gives cached blocks
    back. ``stats`` and ``events`` record what happened.
    """

    trace: bool = True
    stats: PoolStats = field(default_factory=PoolStats, init=False)
    events: list[PoolEvent] = field(default_factory=list, init=False)
    blocks: dict[int, Block] = field(default_factory=dict, init=False)
    _free: list[tuple[int, int]] = field(default_factory=list, init=False)  # (size, id), sorted
    _next_id: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.trace = check_bool(self.trace, "MemoryPool: trace", PlanError)

    @property
    def free_blocks(self) -> list[Block]:
        """Cached blocks, smallest first."""
        return [self.blocks[i] for _, i in self._free]

    def _log(self, kind: str, block: Block, requested: int, from_pool: bool) -> None:
        s = self.stats
        s.peak_in_use = max(s.peak_in_use, s.bytes_in_use)
        s.peak_reserved = max(s.peak_reserved, s.bytes_reserved)
        if self.trace:
            self.events.append(PoolEvent(len(self.events), kind, block.owner, requested, block.id,
                                         block.size, from_pool, s.bytes_in_use, s.bytes_reserved))

    def allocate(self, nbytes: int, owner: str = "") -> Block:
        """A block of at least ``nbytes``: the best-fitting cached block, else a new one."""
        if not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise PlanError(f"cannot allocate {nbytes!r} bytes for {owner or 'a request'!r}: "
                            f"the size must be a non-negative integer")
        size = round_size(int(nbytes))
        s = self.stats
        s.requests += 1
        s.bytes_requested += int(nbytes)
        i = bisect_left(self._free, (size, -1))
        if i < len(self._free):
            block = self.blocks[self._free.pop(i)[1]]
            s.from_pool += 1
            hit = True
        else:
            block = Block(self._next_id, size, self.new_buffer(size))
            self._next_id += 1
            self.blocks[block.id] = block
            s.new_blocks += 1
            s.bytes_reserved += size
            hit = False
        block.in_use, block.requested, block.owner = True, int(nbytes), owner
        s.bytes_in_use += block.size
        self._log("alloc", block, int(nbytes), hit)
        return block

    def new_buffer(self, size: int) -> Any:
        """The memory of a new block of ``size`` bytes (host memory here; a subclass can hand
        out device memory, like :class:`memlab.cuda.DeviceMemoryPool`)."""
        return np.empty(size, np.uint8)

    def free(self, block: Block) -> None:
        """Recycle ``block``: it goes into the free list keyed by size."""
        if not isinstance(block, Block):
            raise PlanError(f"free() takes a Block from allocate(), got {type(block).__name__}")
        if self.blocks.get(block.id) is not block:
            raise PlanError(f"block {block.id} ({block.owner!r}) does not belong to this pool")
        if not block.in_use:
            raise PlanError(f"block {block.id} ({block.owner!r}) is freed twice")
        block.in_use = False
        self.stats.bytes_in_use -= block.size
        insort(self._free, (block.size, block.id))
        self._log("free", block, block.requested, False)

    def empty_cache(self) -> int:
        """Give every cached block back; returns the bytes released."""
        released = 0
        for _, i in self._free:
            block = self.blocks.pop(i)
            released += block.size
            self.stats.bytes_reserved -= block.size
            self._log("release", block, 0, False)
        self._free.clear()
        return released

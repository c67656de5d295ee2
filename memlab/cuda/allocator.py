"""A caching memory pool over device memory (lecture 7, p.14-16, as PyTorch's CUDA allocator).

:class:`DeviceMemoryPool` is :class:`~memlab.memory.pool.MemoryPool` -- the same rounding to 512
bytes, best fit, free list, statistics and trace, by inheritance -- whose new blocks are device
allocations: each ``cudaMalloc`` the pool makes is a block the host pool would have created, so
``stats.new_blocks`` counts device allocations and ``stats.bytes_reserved`` device bytes held.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numba import cuda

from ..errors import PlanError
from ..memory.pool import Block, MemoryPool


class DeviceMemoryPool(MemoryPool):
    """:class:`MemoryPool` whose blocks live on the device; :meth:`view` types a block."""

    def new_buffer(self, size: int) -> Any:
        """A new block's memory: one device allocation (``cudaMalloc``) of ``size`` bytes."""
        return cuda.device_array(size, np.uint8)

    def view(self, block: Block, shape: Sequence[int], dtype: Any = np.float32) -> Any:
        """A device array of ``shape`` and ``dtype`` at the start of ``block`` (checked to fit)."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if not block.in_use or nbytes > block.size:
            raise PlanError(f"block {block.id} ({block.owner!r}) cannot hold {nbytes} bytes "
                            f"(size {block.size}, {'in use' if block.in_use else 'free'})")
        if nbytes == 0:
            return cuda.device_array(tuple(shape), dtype)
        return block.buffer[:nbytes].view(dtype).reshape(tuple(shape))

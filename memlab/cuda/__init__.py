"""GPU kernels with Numba CUDA, and device memory laid out like the host's (beyond lecture 7,
p.17-22: on a GPU one planned allocation replaces one ``cudaMalloc`` per tensor).

Importing this package imports numba (``import memlab`` does not). Without a GPU, set
``NUMBA_ENABLE_CUDASIM=1`` before numba is imported and the same kernels run in Numba's CUDA
simulator, a GPU thread per Python thread: tiny sizes only.

* :mod:`.device` -- :func:`available`, launch sizes, :class:`DeviceArena` (one allocation, checked
  views at 256-byte aligned offsets);
* :mod:`.elementwise` -- maps and zips with numpy broadcasting (scalars, bias rows), strided copies;
* :mod:`.reduce` -- sum and mean over all or some axes, tree reductions in shared memory;
* :mod:`.matmul` -- the tiled shared-memory matrix product, with transposes;
* :mod:`.nn` -- softmax, one-hot, softmax cross-entropy forward and backward, pooling, convolution;
* :mod:`.attention` -- attention's forward pass with a shared-memory tile and an online softmax;
* :mod:`.ops` -- which kernel runs which graph op (what the device executor calls);
* :mod:`.allocator` -- :class:`DeviceMemoryPool`, the caching pool of p.14-16 over device memory.

Imports :mod:`memlab.errors`, :mod:`memlab.graph` and :mod:`memlab.memory` only.
"""
from .device import (DEVICE_ALIGN, DeviceArena, available, simulator, require, to_device,
                     device_empty, synchronize)
from .elementwise import UNARY, BINARY, fill, unary, binary, place, take
from .reduce import reduce_axes, reduce_all, reduce_threads, sum_to, tree_rounds
from .matmul import matmul, tile_schedule, default_tile, global_reads
from .nn import softmax, onehot, softmax_xent, softmax_xent_backward, pool, conv, flip, conv_wgrad
from .attention import attention_forward, default_attention_tile
from .ops import check_node, launch, supported_ops
from .allocator import DeviceMemoryPool

__all__ = ["DEVICE_ALIGN", "DeviceArena", "available", "simulator", "require", "to_device",
           "device_empty", "synchronize", "UNARY", "BINARY", "fill", "unary", "binary", "place",
           "take", "reduce_axes", "reduce_all", "reduce_threads", "sum_to", "tree_rounds", "matmul", "tile_schedule",
           "default_tile", "global_reads", "softmax", "onehot", "softmax_xent",
           "softmax_xent_backward", "pool", "conv", "flip", "conv_wgrad", "attention_forward",
           "default_attention_tile", "check_node", "launch",
           "supported_ops", "DeviceMemoryPool"]

"""The device: is there one, how to launch on it, and one arena of device memory.

Numba CUDA (the ``numba-cuda`` package) runs our kernels on an NVIDIA GPU, or, with
``NUMBA_ENABLE_CUDASIM=1`` set before numba is imported, in Numba's CUDA simulator, which runs
every GPU thread as a Python thread: the same code, tiny sizes, no GPU needed.
:func:`available` says whether either is in use; :func:`require` raises a
:class:`~memlab.errors.DeviceError` naming the fix when neither is.

:class:`DeviceArena` is one device allocation with views at byte offsets, each checked against the
arena's bounds and against :data:`DEVICE_ALIGN` (256 bytes, what ``cudaMalloc`` guarantees for a
fresh allocation), so a plan laid out for the device gives every tensor the alignment it would
have had with an allocation of its own.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from numba import config as _numba_config
from numba import cuda

from ..errors import DeviceError, PlanError, ShapeError

DEVICE_ALIGN = 256   #: bytes: cudaMalloc's alignment; a device plan aligns every offset to it
F32 = np.dtype(np.float32)
#: the fix for a machine with no GPU, named by every "no device" error
FIX = ("set NUMBA_ENABLE_CUDASIM=1 in the environment before numba is imported (before "
       "`import memlab.cuda`) to run the kernels in Numba's CUDA simulator")


def simulator() -> bool:
    """True when Numba's CUDA simulator is in use (``NUMBA_ENABLE_CUDASIM=1`` at numba's import)."""
    return bool(_numba_config.ENABLE_CUDASIM)


def available() -> bool:
    """True when kernels can run: a CUDA GPU with a working driver, or the simulator."""
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver install counts as no device
        return False


def require(what: str = "device='cuda'") -> None:
    """Raise :class:`DeviceError` naming the fix unless :func:`available`."""
    if not available():
        raise DeviceError(f"{what} needs a CUDA GPU or Numba's CUDA simulator, and neither is "
                          f"available: {FIX}")


def block_size() -> int:
    """Threads per block for 1-D kernels: 128 on a GPU, 32 in the simulator (a thread is a
    Python thread there, so fewer idle threads make the tests faster)."""
    return 32 if simulator() else 128


def grid_limit() -> int:
    """Most blocks a block-stride kernel launches (each block then loops over several rows or
    outputs): 4096 on a GPU, 4 in the simulator, where every block costs a round of Python
    threads and every ``syncthreads`` milliseconds."""
    return 4 if simulator() else 4096


def blocks_for(n: int, threads: int) -> int:
    """Blocks of ``threads`` threads that cover ``n`` elements (at least one)."""
    return max(1, -(-n // threads))


def check_f32(name: str, arr: Any) -> None:
    """Raise :class:`DeviceError` unless ``arr`` holds float32 (the only dtype our kernels take)."""
    dtype = np.dtype(getattr(arr, "dtype", type(arr)))
    if dtype != F32:
        raise DeviceError(f"{name} has dtype {dtype}; the CUDA kernels take float32 only "
                          f"(convert with .astype(np.float32))")


def check_shape(name: str, arr: Any, shape: Sequence[int]) -> None:
    """Raise :class:`ShapeError` unless ``arr`` has ``shape``."""
    if tuple(arr.shape) != tuple(shape):
        raise ShapeError(f"{name} has shape {list(arr.shape)}, expected {list(shape)}")


def flat(arr: Any) -> Any:
    """A contiguous device (or host) array as 1-D (a 0-d array becomes shape (1,))."""
    shape = tuple(arr.shape)
    return arr.reshape(int(np.prod(shape, dtype=np.int64)) if shape else 1)


def to_device(array: np.ndarray) -> Any:
    """Copy a host array to the device (made contiguous first; a 0-d array stays 0-d)."""
    arr = np.asarray(array)
    return cuda.to_device(arr if arr.flags.c_contiguous else arr.copy(order="C"))


def device_empty(shape: Sequence[int], dtype: Any = F32) -> Any:
    """A fresh, uninitialised device array of its own (one ``cudaMalloc``)."""
    return cuda.device_array(tuple(shape), np.dtype(dtype))


def synchronize() -> None:
    """Wait until every launched kernel has finished."""
    cuda.synchronize()


class DeviceArena:
    """One device allocation of ``total_bytes``; :meth:`view` gives typed views at offsets.

    Every view is checked: inside the arena, offset a multiple of ``alignment`` bytes, so no
    kernel can be handed memory outside the arena (an out-of-range write is a
    :class:`~memlab.errors.PlanError` before any kernel runs).
    """

    def __init__(self, total_bytes: int, alignment: int = DEVICE_ALIGN) -> None:
        if not isinstance(total_bytes, (int, np.integer)) or total_bytes < 0:
            raise PlanError(f"an arena needs a non-negative number of bytes, got {total_bytes!r}")
        self.total_bytes, self.alignment = int(total_bytes), int(alignment)
        self.buffer = cuda.device_array(max(1, self.total_bytes), np.uint8)

    @property
    def nbytes(self) -> int:
        """Bytes of the arena (its one allocation)."""
        return self.total_bytes

    def view(self, offset: int, shape: Sequence[int], dtype: Any = F32, name: str = "a value") -> Any:
        """The ``shape``/``dtype`` array at byte ``offset`` of the arena (checked, see class)."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if offset < 0 or offset + nbytes > self.total_bytes:
            raise PlanError(f"{name}: {nbytes} bytes at offset {offset} run outside the device "
                            f"arena of {self.total_bytes} bytes")
        if offset % self.alignment:
            raise PlanError(f"{name}: offset {offset} is not a multiple of {self.alignment} "
                            f"bytes; plan with alignment={self.alignment} for the device")
        if nbytes == 0:
            return cuda.device_array(tuple(shape), dtype)
        return self.buffer[offset:offset + nbytes].view(dtype).reshape(tuple(shape))

"""Running on a CUDA device: the same run loop, other hooks (lecture 7, p.10-22, on a GPU).

``Executor(outputs, plan=plan, device="cuda")`` runs every node's kernel (:mod:`memlab.cuda`)
into a view of **one device allocation** laid out by the plan; ``memory="pool"`` draws blocks
from a :class:`~memlab.cuda.allocator.DeviceMemoryPool`; the naive runner makes one device
allocation per value. The hooks move fed values to the device (:meth:`load`), launch kernels
(:meth:`compute`) and copy outputs back (:meth:`fetch`); :class:`~memlab.execute.runner.Runner`'s
loop, reference counts and statistics are the host runners' own. This module imports numba
(through :mod:`memlab.cuda`); :class:`~memlab.execute.executor.Executor` imports it only when
``device="cuda"`` is asked.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..cuda import (DEVICE_ALIGN, DeviceArena, DeviceMemoryPool, device_empty, launch, require,
                   to_device)
from ..cuda.ops import check_node, device_value
from ..errors import DeviceError, PlanError
from ..graph import PLACEHOLDER, Node
from ..memory.plan import Plan
from ..memory.pool import Block
from .arena import ArenaRunner
from .naive import NaiveRunner
from .pooled import PoolRunner
from .runner import Runner


def check_graph(order: Sequence[Node]) -> None:
    """Raise :class:`DeviceError` naming the first node the device cannot run (an op without a
    kernel, a dtype other than float32; placeholders may also hold integer labels)."""
    for n in order:
        if n.op is PLACEHOLDER:
            if n.dtype != np.float32 and n.dtype.kind not in "iu":
                raise DeviceError(f"placeholder {n.name!r} has dtype {n.dtype}; the CUDA "
                                  f"kernels take float32 (or integer labels)")
        elif n.op.computes:
            check_node(n)


class OnDevice:
    """The hooks every device runner shares: values in, kernels, values out."""

    def load(self, node: Node, array: np.ndarray) -> Any:
        """A fed or constant value, copied to the device."""
        return to_device(device_value(node, array))

    def compute(self, node: Node, inputs: list[Any], out: Any) -> None:
        """Launch ``node``'s kernel."""
        launch(node, inputs, out)

    def fetch(self, node: Node, value: Any) -> np.ndarray:
        """An output copied back to a fresh host array."""
        return value.copy_to_host()


class DeviceArenaRunner(OnDevice, ArenaRunner):
    """One device allocation of ``plan.total_bytes``; every value a view at its planned offset.

    The plan's offsets must be multiples of :data:`~memlab.cuda.DEVICE_ALIGN` (256 bytes): plan
    with ``alignment=256``, so each tensor starts where its own ``cudaMalloc`` would have put it.
    """

    def __init__(self, outputs: Sequence[Node], plan: Plan) -> None:
        super().__init__(outputs, plan)
        check_graph(self.order)
        bad = [(n, o) for n, o in self.offset.items() if o % DEVICE_ALIGN]
        if bad:
            n, o = bad[0]
            raise PlanError(f"node {n.name!r} sits at offset {o}, not a multiple of "
                            f"{DEVICE_ALIGN} bytes; plan for the device with "
                            f"alignment={DEVICE_ALIGN} (e.g. plan_memory(outputs, "
                            f"alignment={DEVICE_ALIGN}))")

    def start(self) -> None:
        if self.arena is None:
            self.arena = arena = DeviceArena(self.total_bytes)
            self._views = {n: arena.view(o, n.shape, n.dtype, f"node {n.name!r}")
                           for n, o in self.offset.items()}
        self._first = True


class DevicePoolRunner(OnDevice, PoolRunner):
    """Blocks from a fresh :class:`~memlab.cuda.allocator.DeviceMemoryPool` every run."""

    def start(self) -> None:
        self.pool, self._blocks = DeviceMemoryPool(), {}

    def allocate(self, node: Node) -> tuple[Any, int]:
        before = self.pool.stats.bytes_reserved
        block: Block = self.pool.allocate(node.nbytes, node.name)
        self._blocks[node] = block
        return self.pool.view(block, node.shape, node.dtype), self.pool.stats.bytes_reserved - before


def device_footprint(nbytes: int) -> int:
    """Device bytes one ``cudaMalloc`` of ``nbytes`` takes: rounded up to :data:`DEVICE_ALIGN`
    (256), at least one unit, since the next allocation starts at the next aligned address."""
    return max(1, -(-nbytes // DEVICE_ALIGN)) * DEVICE_ALIGN


class DeviceNaiveRunner(OnDevice, NaiveRunner):
    """One device allocation per computed value, all kept to the end of the run (p.10-13);
    each is counted at its aligned footprint (:func:`device_footprint`), not its tensor's bytes."""

    def allocate(self, node: Node) -> tuple[Any, int]:
        size = device_footprint(node.nbytes)
        self._held += size
        return device_empty(node.shape, node.dtype), size

    def workspace(self, node: Node, nbytes: int) -> tuple[Any, int]:
        size = device_footprint(nbytes)
        self._held += size
        return device_empty((nbytes,), np.uint8), size


def device_runner(outputs: Sequence[Node], order: Sequence[Node], plan: Plan | None,
                  memory: str) -> Runner:
    """The device runner for ``memory`` ("arena" with a plan, "pool" or "naive"), after checking
    that a GPU or the simulator is there and that every node can run on it."""
    require("Executor(..., device='cuda')")
    if plan is not None:
        return DeviceArenaRunner(outputs, plan)
    check_graph(order)
    return (DevicePoolRunner if memory == "pool" else DeviceNaiveRunner)(outputs, order)

"""Running a graph on PyTorch's caching allocator (beyond lecture 7's p.14-16).

Node by node, a block from a :class:`~memlab.memory.caching.CachingAllocator` (or a
:class:`~memlab.memory.bfc.BFCAllocator`), freed when the value's last consumer has run (outputs
are kept). Each value is a numpy view at its block's offset into its segment's buffer, so blocks
that were split, merged and reused hold the numbers: a wrong allocator gives wrong results. The
memory held is the allocator's reserved bytes, as ``torch.cuda.memory_reserved()`` reports.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..graph import Node
from ..memory.blocks import Block, SegmentAllocator
from ..memory.caching import CachingAllocator
from .runner import Runner


class CachingRunner(Runner):
    """Run ``outputs`` through a fresh allocator per run, made by ``make_allocator``
    (default: :class:`CachingAllocator`)."""

    def __init__(self, outputs: Sequence[Node], order: Sequence[Node] | None = None,
                 make_allocator: Callable[[], SegmentAllocator] = CachingAllocator) -> None:
        super().__init__(outputs, order)
        self.make_allocator = make_allocator
        self.allocator = make_allocator()
        self._blocks: dict[Node, Block] = {}

    def start(self) -> None:
        self.allocator, self._blocks = self.make_allocator(), {}

    def allocate(self, node: Node) -> tuple[np.ndarray, int]:
        before = self.allocator.memory_reserved()
        block = self._blocks[node] = self.allocator.malloc(max(node.nbytes, 1), node.name)
        return block.view(node.shape, node.dtype), self.allocator.memory_reserved() - before

    def release(self, node: Node, value: Any) -> None:
        self.allocator.free(self._blocks.pop(node))

    def workspace(self, node: Node, nbytes: int) -> tuple[Block, int]:
        before = self.allocator.memory_reserved()
        block = self.allocator.malloc(nbytes, f"{node.name}.workspace")
        return block, self.allocator.memory_reserved() - before

    def release_workspace(self, node: Node, scratch: Block) -> None:
        self.allocator.free(scratch)

    def held_bytes(self) -> int:
        return self.allocator.memory_reserved()

    def fetch(self, node: Node, value: Any) -> np.ndarray:
        return value.copy()

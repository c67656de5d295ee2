"""Dynamic allocation through a memory pool (CSE599G1 lecture 7, p.14-16).

Node by node, a block from a :class:`~memlab.memory.pool.MemoryPool`, given back to the pool when
the value's last consumer has run (outputs are kept); the pool keeps freed blocks for reuse, so the
memory held is the pool's reserved bytes.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..graph import Node
from ..memory.pool import Block, MemoryPool
from .runner import Runner


class PoolRunner(Runner):
    """Run ``outputs`` imperatively through a fresh :class:`MemoryPool` per run (p.14-16)."""

    def __init__(self, outputs: Sequence[Node], order: Sequence[Node] | None = None) -> None:
        super().__init__(outputs, order)
        self.pool = MemoryPool()
        self._blocks: dict[Node, Block] = {}

    def start(self) -> None:
        self.pool, self._blocks = MemoryPool(), {}

    def allocate(self, node: Node) -> tuple[np.ndarray, int]:
        before = self.pool.stats.bytes_reserved
        block = self._blocks[node] = self.pool.allocate(node.nbytes, node.name)
        return block.view(node.shape, node.dtype), self.pool.stats.bytes_reserved - before

    def release(self, node: Node, value: Any) -> None:
        self.pool.free(self._blocks.pop(node))

    def workspace(self, node: Node, nbytes: int) -> tuple[Block, int]:
        before = self.pool.stats.bytes_reserved
        block = self.pool.allocate(nbytes, f"{node.name}.workspace")
        return block, self.pool.stats.bytes_reserved - before

    def release_workspace(self, node: Node, scratch: Block) -> None:
        self.pool.free(scratch)

    def held_bytes(self) -> int:
        return self.pool.stats.bytes_reserved

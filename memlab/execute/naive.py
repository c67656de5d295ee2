"""The naive executor (CSE599G1 lecture 7, p.10-13): a fresh array for every intermediate value.

Nothing is reused within a run, so the temporary space grows linearly with the number of ops
(p.13); the trace shows it growing.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Node
from .runner import Runner


class NaiveRunner(Runner):
    """One ``np.empty`` per computed value, every one kept until the run ends."""

    def start(self) -> None:
        self._held, self._kept = 0, []

    def allocate(self, node: Node) -> tuple[np.ndarray, int]:
        self._held += node.nbytes
        return np.empty(node.shape, node.dtype), node.nbytes

    def release(self, node: Node, value: Any) -> None:
        self._kept.append(value)  # the naive executor frees nothing before the end of the run

    def workspace(self, node: Node, nbytes: int) -> tuple[np.ndarray, int]:
        self._held += nbytes      # a fresh array too, kept to the end like every other
        return np.empty(nbytes, np.uint8), nbytes

    def release_workspace(self, node: Node, scratch: Any) -> None:
        self._kept.append(scratch)

    def held_bytes(self) -> int:
        return self._held

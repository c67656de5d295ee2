"""Intra-layer model parallelism: one layer's matrix product split across devices (the scheduling
slides' last slide of part 3, "partition individual layers across workers"; the column and row
splits of Megatron-LM, Shoeybi et al. 2019).

A fully connected layer computes ``Y = X W`` with ``X`` of ``batch x n_in`` and ``W`` of
``n_in x n_out``; its backward pass computes ``dX = dY W^T`` and ``dW = X^T dY``. On ``D`` devices:

* **column split**: device ``d`` holds the columns ``W[:, c_d]``; with the input ``X`` on every
  device it computes ``Y[:, c_d]`` alone; the next layer needs all of ``Y``, so the devices
  **all-gather** it. In the backward pass ``dW[:, c_d] = X^T dY[:, c_d]`` is local (``X`` is kept
  for it), but each device has only a partial ``dX_d = dY[:, c_d] W[:, c_d]^T``: the partials are
  summed by an **all-reduce**.
* **row split**: device ``d`` holds the rows ``W[r_d, :]`` and reads ``X[:, r_d]``; its product is a
  partial ``Y`` that the devices sum by an **all-reduce**. In the backward pass ``dX[:, r_d] = dY
  W[r_d, :]^T`` and ``dW[r_d, :] = X[:, r_d]^T dY`` are local; ``dX`` is all-gathered.

Communication is counted as the bytes each device **receives**: an all-gather of a matrix of ``B``
bytes brings a device the ``B - B_d`` it lacks; an all-reduce (reduce-scatter, then all-gather, as a
ring does) brings it ``2 (D - 1) / D`` of ``B`` for even chunks. Memory per device: its shard of
``W`` and of ``dW``, the input it keeps for the backward pass, and its output after the collective.
:func:`simulate_intra_layer` runs the split with numpy, moving every block explicitly, and checks
the formulas of :func:`intra_layer_memory`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import MemlabError, check_int

SPLITS = ("column", "row")


@dataclass
class LayerSplit:
    """Per device (lists of ``devices`` entries, bytes): ``weights`` (its shard of ``W`` and of
    ``dW``), ``kept_input`` (what it keeps for the backward pass), ``output`` (its ``Y`` after the
    forward collective), ``received_forward`` and ``received_backward`` (communication)."""

    split: str
    devices: int
    weights: list[int]
    kept_input: list[int]
    output: list[int]
    received_forward: list[int]
    received_backward: list[int]

    @property
    def memory(self) -> list[int]:
        """Bytes each device holds for this layer: weights, kept input and output."""
        return [w + k + o for w, k, o in zip(self.weights, self.kept_input, self.output)]


def _shares(n: int, devices: int) -> list[int]:
    """Sizes of ``n`` rows or columns cut into ``devices`` blocks (numpy's array_split)."""
    return [len(b) for b in np.array_split(np.arange(n), devices)]


def _all_reduce(n: int, devices: int) -> list[int]:
    """Numbers each device receives when ``devices`` partial results of ``n`` numbers are summed by
    a reduce-scatter (device d sums block d: the others' copies of it) then an all-gather (the
    other blocks)."""
    return [(devices - 1) * blk + (n - blk) for blk in _shares(n, devices)]


def _check(batch: int, n_in: int, n_out: int, devices: int, split: str, itemsize: int) -> None:
    check_int(batch, "intra_layer_memory: batch", 1)
    check_int(n_in, "intra_layer_memory: n_in", 1)
    check_int(n_out, "intra_layer_memory: n_out", 1)
    check_int(itemsize, "intra_layer_memory: itemsize (bytes per number)", 1)
    check_int(devices, "intra_layer_memory: devices", 1)
    cut = n_out if split == "column" else n_in
    if split not in SPLITS:
        raise MemlabError(f"intra_layer_memory: split must be 'column' or 'row', got {split!r}")
    if devices > cut:
        raise MemlabError(f"intra_layer_memory: {devices} devices for a {split} split of "
                          f"{cut} {'columns' if split == 'column' else 'rows'}: one at least each")


def intra_layer_memory(batch: int, n_in: int, n_out: int, devices: int, split: str = "column",
                       itemsize: int = 4) -> LayerSplit:
    """Memory and communication per device of ``Y = X W`` split across ``devices`` (module doc)."""
    _check(batch, n_in, n_out, devices, split, itemsize)
    D, b = devices, itemsize
    if split == "column":
        cols = _shares(n_out, D)
        return LayerSplit(split, D, weights=[2 * n_in * c * b for c in cols],
                          kept_input=[batch * n_in * b] * D, output=[batch * n_out * b] * D,
                          received_forward=[batch * (n_out - c) * b for c in cols],
                          received_backward=[x * b for x in _all_reduce(batch * n_in, D)])
    rows = _shares(n_in, D)
    return LayerSplit(split, D, weights=[2 * r * n_out * b for r in rows],
                      kept_input=[batch * r * b for r in rows], output=[batch * n_out * b] * D,
                      received_forward=[x * b for x in _all_reduce(batch * n_out, D)],
                      received_backward=[batch * (n_in - r) * b for r in rows])


def _ring_all_reduce(parts: list[np.ndarray], received: list[int]) -> list[np.ndarray]:
    """Sum ``parts`` (one per device) by reduce-scatter then all-gather over flat blocks,
    adding to ``received`` the bytes each device gets from the others."""
    D = len(parts)
    flat = [p.ravel() for p in parts]
    blocks = np.array_split(np.arange(flat[0].size), D)
    owned = []
    for d, idx in enumerate(blocks):                 # reduce-scatter: d sums block d
        total = flat[d][idx].copy()
        for e in range(D):
            if e != d:
                total += flat[e][idx]
                received[d] += flat[e][idx].nbytes
        owned.append(total)
    out = []
    for d in range(D):                               # all-gather: d collects the other blocks
        full = np.empty_like(flat[d])
        for e, idx in enumerate(blocks):
            full[idx] = owned[e]
            if e != d:
                received[d] += owned[e].nbytes
        out.append(full.reshape(parts[d].shape))
    return out


def _all_gather(parts: list[np.ndarray], axis: int, received: list[int]) -> list[np.ndarray]:
    """Every device gets the concatenation of ``parts`` along ``axis``."""
    for d in range(len(parts)):
        received[d] += sum(p.nbytes for e, p in enumerate(parts) if e != d)
    return [np.concatenate(parts, axis=axis) for _ in parts]


def simulate_intra_layer(X: np.ndarray, W: np.ndarray, dY: np.ndarray, devices: int,
                         split: str = "column"
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, LayerSplit]:
    """Run the forward and backward pass of ``Y = X W`` split across ``devices`` with numpy,
    moving every block between devices explicitly. Returns ``(Y, dX, dW, counted)``: the results
    as device 0 holds them (``dW`` assembled from the shards) and the bytes each device held and
    received, measured on the arrays."""
    X, W, dY = (np.asarray(a) for a in (X, W, dY))
    _check(X.shape[0], X.shape[1], W.shape[1], devices, split, X.itemsize)
    D = devices
    fwd, bwd = [0] * D, [0] * D
    if split == "column":
        cuts = np.array_split(np.arange(W.shape[1]), D)
        shard = [W[:, c] for c in cuts]
        Y = _all_gather([X @ w for w in shard], 1, fwd)               # every device: X, Y[:, c_d]
        dW_parts = [X.T @ dY[:, c] for c in cuts]                     # local, X kept
        dX = _ring_all_reduce([dY[:, c] @ w.T for c, w in zip(cuts, shard)], bwd)
        kept = [X.nbytes] * D
        dW = np.concatenate(dW_parts, axis=1)
    else:
        cuts = np.array_split(np.arange(W.shape[0]), D)
        shard = [W[r, :] for r in cuts]
        Y = _ring_all_reduce([X[:, r] @ w for r, w in zip(cuts, shard)], fwd)
        dW_parts = [X[:, r].T @ dY for r in cuts]                     # local, X[:, r_d] kept
        dX = _all_gather([dY @ w.T for w in shard], 1, bwd)
        kept = [X[:, r].nbytes for r in cuts]
        dW = np.concatenate(dW_parts, axis=0)
    counted = LayerSplit(split, D, weights=[w.nbytes + g.nbytes for w, g in zip(shard, dW_parts)],
                         kept_input=kept, output=[y.nbytes for y in Y],
                         received_forward=fwd, received_backward=bwd)
    return Y[0], dX[0], dW, counted

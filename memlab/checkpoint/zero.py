"""Mixed-precision Adam, and its state sharded over data-parallel devices (ZeRO).

Mixed precision (Micikevicius et al. 2018) computes with 16-bit weights and gradients and updates
32-bit **master** weights, so Adam (Kingma and Ba 2015) holds per parameter 2 bytes of fp16
weight, 2 of fp16 gradient and ``K = 12`` of fp32 master weight, momentum and variance: the ZeRO
paper's ``(2 + 2 + K) Psi = 16 Psi`` (Rajbhandari et al. 2020, section 3.1).
:class:`MixedPrecisionAdam` holds those arrays for real, so :meth:`~MixedPrecisionAdam.state_bytes`
counts bytes of numpy arrays, not a formula. :class:`ZeroAdam` splits the flat parameter vector
into ``N`` shards: device ``d`` keeps only shard ``d`` of the optimizer states (stage 1), of the
gradients (stage 2) and of the weights (stage 3), updates its shard and all-gathers the weights;
its :meth:`~ZeroAdam.device_bytes` counts the arrays each device holds, which
:func:`memlab.checkpoint.parallel.data_parallel_memory` must equal.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import MemlabError, check_int, check_number
from .parallel import ZERO


class MixedPrecisionAdam:
    """Adam on fp32 master weights of ``params`` (a list of arrays), handing out fp16 weights.

    ``step(grads)`` takes fp16 gradients (unscaled by ``loss_scale`` first) and returns the new
    fp16 weights; ``state_bytes()`` the bytes held by each kind of array."""

    def __init__(self, params: Sequence[np.ndarray], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 loss_scale: float = 1.0) -> None:
        if not isinstance(params, (list, tuple)) or not params or not all(
                isinstance(p, np.ndarray) and p.dtype.kind == "f" for p in params):
            raise MemlabError("MixedPrecisionAdam: params must be a non-empty list of float "
                              "arrays")
        self.lr = check_number(lr, "MixedPrecisionAdam: lr", above=0)
        self.betas, self.eps = betas, check_number(eps, "MixedPrecisionAdam: eps", above=0)
        self.loss_scale = check_number(loss_scale, "MixedPrecisionAdam: loss_scale", above=0)
        self.master = [np.asarray(p, np.float32).copy() for p in params]
        self.m = [np.zeros_like(p) for p in self.master]
        self.v = [np.zeros_like(p) for p in self.master]
        self.weights = [p.astype(np.float16) for p in self.master]
        self.grads = [np.zeros(p.shape, np.float16) for p in self.master]
        self.t = 0

    def step(self, grads: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One Adam update of the masters from fp16 ``grads``; the new fp16 weights."""
        if len(grads) != len(self.master) or any(
                np.shape(g) != p.shape for g, p in zip(grads, self.master)):
            raise MemlabError("MixedPrecisionAdam.step: one gradient per parameter, same shapes")
        self.t += 1
        b1, b2 = self.betas
        for i, g in enumerate(grads):
            np.copyto(self.grads[i], g, casting="unsafe")
            g32 = self.grads[i].astype(np.float32) / np.float32(self.loss_scale)
            self.m[i] = (b1 * self.m[i] + (1 - b1) * g32).astype(np.float32)
            self.v[i] = (b2 * self.v[i] + (1 - b2) * g32 * g32).astype(np.float32)
            mhat = self.m[i] / (1 - b1 ** self.t)
            vhat = self.v[i] / (1 - b2 ** self.t)
            self.master[i] -= (self.lr * mhat / (np.sqrt(vhat) + self.eps)).astype(np.float32)
            np.copyto(self.weights[i], self.master[i], casting="unsafe")
        return self.weights

    def state_bytes(self) -> dict[str, int]:
        """Bytes of the fp16 weights and gradients, and of the fp32 master, momentum, variance."""
        return {"fp16 weights": sum(w.nbytes for w in self.weights),
                "fp16 gradients": sum(g.nbytes for g in self.grads),
                "fp32 master weights": sum(p.nbytes for p in self.master),
                "fp32 momentum": sum(p.nbytes for p in self.m),
                "fp32 variance": sum(p.nbytes for p in self.v)}


class ZeroAdam:
    """Mixed-precision Adam over ``N`` data-parallel devices at ZeRO ``stage``: the flat parameter
    vector cut into ``N`` contiguous shards (``np.array_split``), device ``d`` updating shard
    ``d`` with its own :class:`MixedPrecisionAdam`, then the fp16 weights all-gathered."""

    def __init__(self, params: Sequence[np.ndarray], N: int, stage: str = "zero-1",
                 **adam: float) -> None:
        self.N = check_int(N, "ZeroAdam: N (devices)", 1)
        if stage not in ZERO:
            raise MemlabError(f"ZeroAdam: stage must be one of {', '.join(ZERO)}, got {stage!r}")
        self.stage = stage
        if not isinstance(params, (list, tuple)) or not params:
            raise MemlabError("ZeroAdam: params must be a non-empty list of float arrays")
        self.shapes = [np.shape(p) for p in params]
        flat = np.concatenate([np.ravel(p) for p in params]).astype(np.float32)
        self.shards = [MixedPrecisionAdam([s], **adam) for s in np.array_split(flat, self.N)]

    def step(self, grads: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Reduce-scatter (each device takes its shard of the summed gradient), update, all-gather."""
        flat = np.concatenate([np.ravel(g) for g in grads]).astype(np.float16)
        parts = np.array_split(flat, self.N)
        gathered = np.concatenate([opt.step([g])[0] for opt, g in zip(self.shards, parts)])
        out, start = [], 0
        for shape in self.shapes:
            size = int(np.prod(shape, dtype=np.int64))
            out.append(gathered[start:start + size].reshape(shape))
            start += size
        return out

    def device_bytes(self, device: int = 0) -> int:
        """Bytes device ``device`` holds between steps: its shard of what the stage shards and a
        full copy of the rest (fp16 weights 2, gradients 2, fp32 states 12 bytes a parameter)."""
        check_int(device, "ZeroAdam.device_bytes: device", 0)
        if device >= self.N:
            raise MemlabError(f"device {device} is out of range for {self.N} devices")
        own = self.shards[device].state_bytes()
        full = {k: sum(opt.state_bytes()[k] for opt in self.shards) for k in own}
        sharded = {"fp16 weights": self.stage == "zero-3",
                   "fp16 gradients": self.stage in ("zero-2", "zero-3"),
                   "fp32 master weights": self.stage != "plain",
                   "fp32 momentum": self.stage != "plain", "fp32 variance": self.stage != "plain"}
        return sum(own[k] if sharded[k] else full[k] for k in own)

"""The memory of parallel backpropagation (seed 002, "Parallel processing of backpropagation graphs").

**Model parallelism, inter-layer (pipelining, GPipe; Huang et al. 2019).** The ``L`` layers are cut
into ``S`` stages on ``S`` devices; a mini-batch is cut into ``M`` micro-batches that flow through the
stages; all forwards, then all backwards (a flush). A device holds its stage's weights and, for every
micro-batch in flight, its stage's activations; with **re-materialisation** it keeps only the stage's
input per micro-batch and recomputes one micro-batch's activations at a time in the backward pass.
The **bubble** (devices idle while the pipeline fills and drains) is ``(S - 1) / (M + S - 1)`` of the
time.

**Data parallelism (ZeRO; Rajbhandari et al. 2020).** ``N`` devices each run the whole model on
``1/N`` of the batch. With mixed-precision Adam a parameter costs 2 bytes (fp16 weight) + 2 (fp16
gradient) + ``K = 12`` (fp32 weight, momentum, variance). Plain data parallelism replicates all
``(4 + K) P`` bytes; ZeRO stage 1 shards the optimizer states, stage 2 also the gradients, stage 3
also the weights (fully sharded data parallelism: each layer's weights are gathered just for its
compute, one layer at a time).

**Model parallelism, intra-layer.** One layer's matrix product split across devices by columns or
rows: :func:`intra_layer_memory`, from :mod:`memlab.checkpoint.intralayer`.

Each formula is checked by :func:`simulate_pipeline` / :func:`simulate_data_parallel` /
:func:`simulate_intra_layer`, small simulators that add and remove the bytes each device holds, step
by step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..errors import MemlabError, check_bool, check_int, check_number
from .intralayer import LayerSplit, intra_layer_memory, simulate_intra_layer  # noqa: F401

ADAM_STATES = 12  #: bytes per parameter of Adam's fp32 states in mixed precision (ZeRO's K)


@dataclass
class Model:
    """A network for these estimates: per-layer parameter counts and activation bytes per sample."""

    params: list[int]
    activations: list[float]
    boundary: list[float]  # bytes per sample of each layer's input (what a stage keeps with remat)

    @property
    def layers(self) -> int:
        """Number of layers."""
        return len(self.params)


def uniform_model(layers: int, params_per_layer: int, act_per_sample: float,
                  boundary_per_sample: float | None = None) -> Model:
    """``layers`` equal layers (a transformer-like stack)."""
    check_int(layers, "uniform_model: layers", 1)
    check_int(params_per_layer, "uniform_model: params_per_layer", 0)
    check_number(act_per_sample, "uniform_model: act_per_sample", 0)
    b = act_per_sample / 8 if boundary_per_sample is None else \
        check_number(boundary_per_sample, "uniform_model: boundary_per_sample", 0)
    return Model([params_per_layer] * layers, [act_per_sample] * layers, [b] * layers)


def _check_model(model: object, what: str) -> Model:
    if not isinstance(model, Model):
        raise MemlabError(f"{what}: model must be a Model (uniform_model or from_sizes), "
                          f"got {type(model).__name__} {model!r:.60}")
    return model


def stages(model: Model, S: int) -> list[range]:
    """The layers of each of ``S`` pipeline stages: contiguous, as even as the layers allow."""
    _check_model(model, "stages")
    if not isinstance(S, int) or isinstance(S, bool) or S < 1 or S > model.layers:
        raise MemlabError(f"stages must be an integer in 1..{model.layers} (one layer at least "
                          f"per stage), got {S!r}")
    cuts = [round(k * model.layers / S) for k in range(S + 1)]
    return [range(cuts[k], cuts[k + 1]) for k in range(S)]


def _check_micro(batch: int, M: int) -> float:
    check_int(batch, "batch (samples)", 1)
    if not isinstance(M, int) or isinstance(M, bool) or M < 1 or batch % M:
        raise MemlabError(f"micro-batches must divide the batch ({batch}), got {M!r}")
    return batch / M


def pipeline_memory(model: Model, S: int, M: int, batch: int, remat: bool = False) -> list[float]:
    """Peak bytes per device of GPipe with ``S`` stages and ``M`` micro-batches (weights and their
    training state, plus activations)."""
    _check_model(model, "pipeline_memory")
    micro = _check_micro(batch, M)
    check_bool(remat, "pipeline_memory: remat")
    out = []
    for stage in stages(model, S):
        weights = (4 + ADAM_STATES) * sum(model.params[i] for i in stage)
        acts = sum(model.activations[i] for i in stage) * micro
        if remat:
            kept = model.boundary[stage.start] * micro * M
            out.append(weights + kept + acts)
        else:
            out.append(weights + acts * M)
    return out


def bubble_fraction(S: int, M: int) -> float:
    """GPipe's idle fraction: ``(S - 1) / (M + S - 1)``."""
    check_int(S, "bubble_fraction: S (stages)", 1)
    check_int(M, "bubble_fraction: M (micro-batches)", 1)
    return (S - 1) / (M + S - 1)


def simulate_pipeline(model: Model, S: int, M: int, batch: int, remat: bool = False) -> list[float]:
    """Replay GPipe step by step (all forwards, then all backwards; micro-batch m on stage s at
    tick m + s) and return the most bytes each device held."""
    _check_model(model, "simulate_pipeline")
    micro = _check_micro(batch, M)
    check_bool(remat, "simulate_pipeline: remat")
    split = stages(model, S)
    held = [(4 + ADAM_STATES) * sum(model.params[i] for i in st) for st in split]
    peak = list(held)
    stage_act = [sum(model.activations[i] for i in st) * micro for st in split]
    kept = [model.boundary[st.start] * micro if remat else stage_act[k]
            for k, st in enumerate(split)]
    for tick in range(M + S - 1):  # forward: keep what the backward will need
        for s in range(S):
            m = tick - s
            if 0 <= m < M:
                held[s] += kept[s]
                extra = stage_act[s] if remat else 0.0   # activations while computing
                peak[s] = max(peak[s], held[s] + extra)
    for tick in range(M + S - 1):  # backward, last stage first
        for s in range(S - 1, -1, -1):
            m = tick - (S - 1 - s)
            if 0 <= m < M:
                need = held[s] + (stage_act[s] if remat else 0.0)  # recomputed for this one
                peak[s] = max(peak[s], need)
                held[s] -= kept[s]
    return peak


ZERO = ("plain", "zero-1", "zero-2", "zero-3")


def data_parallel_memory(model: Model, N: int, batch: int, stage: str = "plain") -> float:
    """Peak bytes per device with ``N``-way data parallelism at ZeRO ``stage`` (``"plain"``,
    ``"zero-1"``, ``"zero-2"``, ``"zero-3"``: fully sharded)."""
    _check_model(model, "data_parallel_memory")
    if stage not in ZERO:
        raise MemlabError(f"stage must be one of {', '.join(ZERO)}, got {stage!r}")
    check_int(batch, "data_parallel_memory: batch (samples)", 1)
    if not isinstance(N, int) or isinstance(N, bool) or N < 1 or batch % N:
        raise MemlabError(f"devices must divide the batch ({batch}), got {N!r}")
    P = sum(model.params)
    weights, grads, states = 2 * P, 2 * P, ADAM_STATES * P
    if stage in ("zero-1", "zero-2", "zero-3"):
        states /= N
    if stage in ("zero-2", "zero-3"):
        grads /= N
    per = batch / N
    if stage != "zero-3":
        return weights + grads + states + sum(model.activations) * per
    # fully sharded: layer i's weights are gathered while it runs, with layers 0..i's activations held
    weights /= N
    held_acts, worst = 0.0, 0.0
    for p, a in zip(model.params, model.activations):
        held_acts += a * per
        worst = max(worst, held_acts + 2 * p)
    return weights + grads + states + worst


def simulate_data_parallel(model: Model, N: int, batch: int, stage: str = "plain") -> float:
    """Replay one step layer by layer on one device (forward, then backward) and return the most
    bytes it held; sharded tensors count 1/N, gathered weights are freed after each layer."""
    data_parallel_memory(model, N, batch, stage)  # validates the arguments
    per = batch / N
    share = {"weights": stage == "zero-3", "grads": stage in ("zero-2", "zero-3"),
             "states": stage != "plain"}
    held = 0.0
    for p in model.params:  # weights, gradient buffers (kept from step to step), Adam's states
        held += 2 * p / (N if share["weights"] else 1)
        held += 2 * p / (N if share["grads"] else 1)
        held += ADAM_STATES * p / (N if share["states"] else 1)
    peak = held
    for p, a in zip(model.params, model.activations):  # forward: activations accumulate
        held += a * per
        gathered = 2 * p if stage == "zero-3" else 0.0
        peak = max(peak, held + gathered)
    for p, a in zip(reversed(model.params), reversed(model.activations)):  # backward frees them
        gathered = 2 * p if stage == "zero-3" else 0.0
        peak = max(peak, held + gathered)
        held -= a * per
    return peak


def from_sizes(params: Sequence[int], activations: Sequence[float],
               inputs: Sequence[float] | None = None) -> Model:
    """A :class:`Model` from measured per-layer sizes (e.g. a model of the zoo): parameters,
    activation bytes per sample and, for re-materialisation, each layer's input bytes per sample
    (:func:`~memlab.models.layer_inputs`; without them, a guess: an eighth of the activations)."""
    if len(params) != len(activations) or not params:
        raise MemlabError("params and activations need one entry per layer")
    if inputs is None:
        return Model(list(params), list(activations), [a / 8 for a in activations])
    if len(inputs) != len(params):
        raise MemlabError(f"inputs needs one entry per layer ({len(params)}), got {len(inputs)}")
    return Model(list(params), list(activations),
                 [check_number(b, "from_sizes: inputs", 0) for b in inputs])

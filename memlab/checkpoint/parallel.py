"""The memory of parallel backpropagation (scheduling slides, "Parallel processing of backpropagation graphs").

**Model parallelism, inter-layer (pipelining, GPipe; Huang et al. 2019).** The ``L`` layers are cut
into ``S`` stages on ``S`` devices; a mini-batch is cut into ``M`` micro-batches that flow through the
stages; all forwards, then all backwards (a flush). A device holds its stage's weights and, for every
micro-batch in flight, its stage's activations; with **re-materialisation** it keeps only the stage's
input per micro-batch and recomputes one micro-batch's activations at a time in the backward pass.
The **bubble** (devices idle while the pipeline fills and drains) is ``(S - 1) / (M + S - 1)`` of the
time.

**1F1B (PipeDream-Flush; Narayanan et al. 2021, Megatron-LM, section 2.2.1).** The same stages and
micro-batches, another order on each device: stage ``s`` runs ``min(S - 1 - s, M)`` forwards to fill
the pipeline, then alternates one forward and one backward, then drains the backwards. A backward
frees its micro-batch's activations as soon as it can, so stage ``s`` never holds more than
``min(S - s, M)`` micro-batches in flight (GPipe: ``M``); the bubble is the same as GPipe's
(:func:`pipeline_timeline` times both schedules).

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


SCHEDULES = ("gpipe", "1f1b")


def _check_schedule(schedule: object) -> str:
    if schedule not in SCHEDULES:
        raise MemlabError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    return schedule  # type: ignore[return-value]


def stage_order(S: int, M: int, schedule: str = "gpipe") -> list[list[tuple[str, int]]]:
    """The order in which each of ``S`` stages runs its forwards ``("F", m)`` and backwards
    ``("B", m)`` of ``M`` micro-batches: GPipe all forwards then all backwards; 1F1B
    ``min(S - 1 - s, M)`` forwards, then one forward and one backward in turn, then the rest of the
    backwards (Megatron-LM's non-interleaved schedule)."""
    check_int(S, "stage_order: S (stages)", 1)
    check_int(M, "stage_order: M (micro-batches)", 1)
    _check_schedule(schedule)
    orders = []
    for s in range(S):
        if schedule == "gpipe":
            orders.append([("F", m) for m in range(M)] + [("B", m) for m in range(M)])
            continue
        warm = min(S - 1 - s, M)
        order = [("F", m) for m in range(warm)]
        for m in range(M - warm):
            order += [("F", warm + m), ("B", m)]
        order += [("B", m) for m in range(M - warm, M)]
        orders.append(order)
    return orders


def in_flight(S: int, M: int, schedule: str = "gpipe") -> list[int]:
    """The most micro-batches each stage holds activations for at once: ``M`` with GPipe,
    ``min(S - s, M)`` on stage ``s`` with 1F1B."""
    check_int(S, "in_flight: S (stages)", 1)
    check_int(M, "in_flight: M (micro-batches)", 1)
    if _check_schedule(schedule) == "gpipe":
        return [M] * S
    return [min(S - s, M) for s in range(S)]


def pipeline_memory(model: Model, S: int, M: int, batch: int, remat: bool = False,
                    schedule: str = "gpipe") -> list[float]:
    """Peak bytes per device of a pipeline (``schedule`` ``"gpipe"`` or ``"1f1b"``) with ``S``
    stages and ``M`` micro-batches: weights and their training state, plus the activations of
    the micro-batches in flight (:func:`in_flight`); with ``remat``, their stage inputs plus one
    micro-batch's activations, recomputed."""
    _check_model(model, "pipeline_memory")
    micro = _check_micro(batch, M)
    check_bool(remat, "pipeline_memory: remat")
    out = []
    for stage, flying in zip(stages(model, S), in_flight(S, M, schedule)):
        weights = (4 + ADAM_STATES) * sum(model.params[i] for i in stage)
        acts = sum(model.activations[i] for i in stage) * micro
        if remat:
            kept = model.boundary[stage.start] * micro * flying
            out.append(weights + kept + acts)
        else:
            out.append(weights + acts * flying)
    return out


def bubble_fraction(S: int, M: int) -> float:
    """GPipe's idle fraction: ``(S - 1) / (M + S - 1)``."""
    check_int(S, "bubble_fraction: S (stages)", 1)
    check_int(M, "bubble_fraction: M (micro-batches)", 1)
    return (S - 1) / (M + S - 1)


def pipeline_timeline(S: int, M: int, schedule: str = "gpipe", forward: float = 1.0,
                      backward: float = 2.0) -> list[tuple[int, str, int, float, float]]:
    """Time the pipeline: each stage runs :func:`stage_order` as soon as its inputs are there
    (``F`` of micro-batch m on stage s after ``F`` on s - 1; ``B`` after ``B`` on s + 1). Returns
    ``(stage, "F" or "B", micro-batch, start, end)`` for every task."""
    check_number(forward, "pipeline_timeline: forward (time)", 0)
    check_number(backward, "pipeline_timeline: backward (time)", 0)
    orders = stage_order(S, M, schedule)
    done: dict[tuple[int, str, int], float] = {}
    free, nxt, tasks = [0.0] * S, [0] * S, []
    while len(tasks) < 2 * S * M:
        moved = False
        for s in range(S):
            while nxt[s] < len(orders[s]):
                kind, m = orders[s][nxt[s]]
                dep = ((s - 1, "F", m) if s > 0 else None) if kind == "F" else \
                    ((s + 1, "B", m) if s < S - 1 else (s, "F", m))
                if dep is not None and dep not in done:
                    break
                start = max(free[s], done[dep] if dep else 0.0)
                free[s] = done[s, kind, m] = start + (forward if kind == "F" else backward)
                tasks.append((s, kind, m, start, free[s]))
                nxt[s] += 1
                moved = True
        if not moved:  # pragma: no cover - both schedules respect the dependencies
            raise MemlabError(f"pipeline_timeline: the {schedule} order deadlocks")
    return tasks


def measured_bubble(S: int, M: int, schedule: str = "gpipe", forward: float = 1.0,
                    backward: float = 2.0) -> float:
    """The idle fraction of :func:`pipeline_timeline`: 1 - busy time / (S x makespan)."""
    tasks = pipeline_timeline(S, M, schedule, forward, backward)
    span = max(t[4] for t in tasks)
    return 1 - sum(t[4] - t[3] for t in tasks) / (S * span) if span else 0.0


def simulate_pipeline(model: Model, S: int, M: int, batch: int, remat: bool = False,
                      schedule: str = "gpipe") -> list[float]:
    """Replay each stage's :func:`stage_order` task by task (a forward keeps what its backward
    needs, the backward frees it) and return the most bytes each device held."""
    _check_model(model, "simulate_pipeline")
    micro = _check_micro(batch, M)
    check_bool(remat, "simulate_pipeline: remat")
    split = stages(model, S)
    peaks = []
    for st, order in zip(split, stage_order(S, M, schedule)):
        held = (4 + ADAM_STATES) * sum(model.params[i] for i in st)
        peak = held
        stage_act = sum(model.activations[i] for i in st) * micro
        kept = model.boundary[st.start] * micro if remat else stage_act
        extra = stage_act if remat else 0.0   # activations while computing or recomputing
        for kind, _ in order:
            if kind == "F":
                held += kept
                peak = max(peak, held + extra)
            else:
                peak = max(peak, held + extra)
                held -= kept
        peaks.append(peak)
    return peaks


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

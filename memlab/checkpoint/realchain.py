"""Running a chain schedule on real gradients: an MLP of ``l`` layers built from memlab ops.

Each forward step ``F_i`` is ``x_{i+1} = tanh(x_i @ W_i)``; the loss is ``0.5 * sum(x_l ** 2)``, so
``B_l`` gives ``y_l = dloss/dx_l`` and each ``B_i`` gives ``y_i = dloss/dx_i`` (and, on the side,
``dloss/dW_i``). Every step is a small memlab graph, differentiated by :func:`memlab.graph.gradients`
(the graph extends itself) and run by the naive :class:`~memlab.execute.Executor`.

:func:`run_schedule` executes any schedule inside **one buffer of ``peak`` slots**, each value in the
slot :func:`~memlab.checkpoint.chain.simulate` gave it: a wrong schedule overwrites a value still
needed and changes the gradients, so equal gradients are the proof that the slots suffice.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ScheduleError
from ..execute import Executor
from ..graph import Node, constant, gradients, matmul, mul, placeholder, sum as reduce_sum, tanh
from .chain import Backward, Forward, Schedule, check_length, simulate


@dataclass
class ChainModel:
    """An ``l``-layer tanh MLP as a chain: weights, the input ``x0`` and one executor per step kind."""

    l: int
    batch: int
    width: int
    weights: list[np.ndarray]
    x0: np.ndarray
    _forward: Executor = field(repr=False)
    _backward: Executor = field(repr=False)
    _last: Executor = field(repr=False)
    _nodes: dict[str, Node] = field(repr=False)

    @property
    def value_bytes(self) -> int:
        """Bytes of one value ``x_i`` or ``y_i`` (one slot)."""
        return self.batch * self.width * 4

    def forward(self, i: int, x: np.ndarray) -> np.ndarray:
        """``F_i(x) = tanh(x @ W_i)``."""
        n = self._nodes
        return self._forward.run({n["x"]: x, n["w"]: self.weights[i]})[0]

    def backward(self, i: int, x: np.ndarray, y_next: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """``B_i``: ``(y_i, dloss/dW_i)`` from ``x_i`` and ``y_{i+1}`` (``B_l`` needs only ``x_l``)."""
        n = self._nodes
        if i == self.l:
            return self._last.run({n["x"]: x})[0], None
        y, gw = self._backward.run({n["x"]: x, n["w"]: self.weights[i], n["g"]: y_next})
        return y, gw


def mlp_chain(l: int, width: int = 8, batch: int = 4, seed: int = 0) -> ChainModel:
    """A chain of ``l`` tanh layers of ``width`` units on a ``batch`` of random inputs (float32)."""
    check_length(l)
    if width < 1 or batch < 1:
        raise ScheduleError(f"width and batch must be >= 1, got width={width}, batch={batch}")
    rng = np.random.default_rng(seed)
    weights = [(rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
               for _ in range(l)]
    x0 = rng.standard_normal((batch, width)).astype(np.float32)
    x = placeholder("x", (batch, width))
    w = placeholder("W", (width, width))
    g = placeholder("y_next", (batch, width))
    out = tanh(matmul(x, w))
    y, gw = gradients(out, [x, w], grad_y=g)
    loss = mul(constant(0.5), reduce_sum(mul(x, x)))
    (y_last,) = gradients(loss, [x])
    return ChainModel(l, batch, width, weights, x0, Executor(out), Executor([y, gw]),
                      Executor(y_last), {"x": x, "w": w, "g": g})


@dataclass
class ChainRun:
    """What :func:`run_schedule` computed: ``y0`` (the input's gradient), the weight gradients,
    the ``slots`` of the buffer, the forward steps run and ``held_bytes`` (the buffer's size)."""

    y0: np.ndarray
    weight_grads: list[np.ndarray]
    slots: int
    forwards: int
    held_bytes: int
    max_live_bytes: int


def run_schedule(schedule: Schedule, model: ChainModel) -> ChainRun:
    """Execute ``schedule`` on ``model`` with every value in its simulated slot of one buffer."""
    if not isinstance(schedule, Schedule):
        raise ScheduleError(f"run_schedule: schedule must be a Schedule (store_all, optimal, ...), "
                            f"got {type(schedule).__name__} {schedule!r:.60}")
    if not isinstance(model, ChainModel):
        raise ScheduleError(f"run_schedule: model must be a ChainModel (see mlp_chain), "
                            f"got {type(model).__name__} {model!r:.60}")
    if schedule.l != model.l:
        raise ScheduleError(f"the schedule is for l = {schedule.l}, the model has l = {model.l}")
    sim = simulate(schedule.actions, model.l)
    buffer = np.empty((sim.peak, model.batch, model.width), np.float32)
    grads: list[np.ndarray | None] = [None] * model.l

    def slot(value: str, after: int) -> int:
        return sim.slots[after].index(value)

    buffer[0] = model.x0
    forwards = live = 0
    for k, a in enumerate(schedule.actions):
        if isinstance(a, Forward):
            out = model.forward(a.i, buffer[slot(f"x{a.i}", k)])
            buffer[slot(f"x{a.i + 1}", k + 1)] = out
            forwards += 1
        elif isinstance(a, Backward):
            y_next = buffer[slot(f"y{a.i + 1}", k)] if a.i < model.l else None
            y, gw = model.backward(a.i, buffer[slot(f"x{a.i}", k)], y_next)
            buffer[slot(f"y{a.i}", k + 1)] = y
            if gw is not None:
                grads[a.i] = gw
        live = max(live, sum(v is not None for v in sim.slots[k + 1]))
    return ChainRun(buffer[slot("y0", len(schedule.actions))].copy(),
                    [g for g in grads if g is not None], sim.peak, forwards,
                    int(buffer.nbytes), live * model.value_bytes)

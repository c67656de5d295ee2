"""The exact optimum of rematerialisation on a small graph, as an integer program (Checkmate; Jain,
Jain, Nrusimha, Gholami, Abbeel, Keutzer, Stoica and Gonzalez 2020), solved by ``scipy.optimize.milp``.

The computed nodes ``v_0 .. v_{n-1}`` of the training graph, in a fixed topological order, are
computed for the first time in that order, one per **stage**: stage ``t`` computes ``v_t`` and may
first recompute earlier nodes. Binary variables:

* ``R[t, i]``: ``v_i`` is computed in stage ``t`` (``R[t, t] = 1``);
* ``S[t, i]``: ``v_i`` is held when stage ``t`` starts (it was held or computed in stage ``t - 1``);
* ``F[t, i, k]``: ``v_i`` is freed right after ``v_k``, one of its consumers, in stage ``t`` (allowed
  when no later consumer of ``v_i`` runs in the stage and ``v_i`` is not carried into stage ``t + 1``).

An op needs its inputs computed in the same stage or held. The bytes held while ``v_k`` runs in stage
``t`` -- what was held at the start, plus everything computed so far in the stage, minus what was
freed -- stay within the budget. Graph outputs are never freed. The objective is the cost of every
computation (1 per op by default). Placeholders and constants are given and cost no memory, as in
the planners. Checkmate solves for a fixed order, so the order matters: by default it is the
memory-aware :func:`~memlab.memory.order.memory_order` (seed 002 part 1), the order the planners
use; ``order="dfs"`` is the depth-first one. :func:`optimal_rematerialization` returns the nodes
a schedule keeps from the forward pass and the schedule itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import BudgetError, PlanError, check_callable, check_list, check_number
from ..graph import Node, as_list, topo_order
from ..memory.order import memory_order
from .rewrite import training_outputs

MAX_NODES = 40  #: the integer program grows like n^2 variables and n^2 x edges constraints


@dataclass
class RematResult:
    """The optimum: ``keep`` (forward nodes computed once and held until the backward pass reads
    them), ``cost`` (total compute), ``recomputations`` (computations beyond one per node), the
    ``stages`` (nodes computed in each stage, in order) and the solver's ``seconds``."""

    keep: set[Node]
    cost: float
    recomputations: int
    stages: list[list[Node]]
    seconds: float

    def __iter__(self):
        return iter((self.keep, self.cost))


def _computed_order(outputs: Sequence[Node], order: Sequence[Node] | str | None) -> list[Node]:
    """The computed nodes in the order asked for: None for :func:`memory_order`'s default, one of its
    methods by name, or an explicit order, checked."""
    if order is None or isinstance(order, str):
        return [n for n in memory_order(outputs, order or "best") if n.op.computes]
    computed = [n for n in topo_order(outputs) if n.op.computes]
    order = [n for n in order if n.op.computes]
    if set(order) != set(computed) or len(order) != len(computed):
        raise PlanError("order must list every computed node of the graph exactly once")
    seen: set[Node] = set()
    for v in order:
        bad = [x for x in v.inputs if x.op.computes and x not in seen]
        if bad:
            raise PlanError(f"order is not topological: {v.name!r} comes before its input "
                            f"{bad[0].name!r}")
        seen.add(v)
    return order


def _problem(outputs: Sequence[Node], budget: float, cost: Callable[[Node], float],
             order: list[Node]):
    from scipy.optimize import Bounds, LinearConstraint  # imported here: only this solver needs it
    from scipy.sparse import lil_matrix

    n = len(order)
    if n > MAX_NODES:
        raise PlanError(f"optimal_rematerialization: {n} computed nodes, above the limit of "
                        f"{MAX_NODES} (the integer program grows like n^2)")
    pos = {v: i for i, v in enumerate(order)}
    size = [float(v.nbytes) for v in order]
    edges = [(pos[x], pos[v]) for v in order for x in dict.fromkeys(v.inputs) if x in pos]
    children = {i: [k for j, k in edges if j == i] for i in range(n)}
    is_out = {pos[o] for o in outputs if o in pos}
    var: dict[tuple, int] = {}
    for t in range(n):
        for i in range(t + 1):
            var["R", t, i] = len(var)
        for i in range(t):
            var["S", t, i] = len(var)
        for i, k in edges:
            if k <= t and i not in is_out:
                var["F", t, i, k] = len(var)
    rows: list[tuple[dict[int, float], float, float]] = []  # (coefficients, lower, upper)
    for t in range(n):
        rows.append(({var["R", t, t]: 1}, 1, 1))
        for i in range(t):
            rows.append(({var["R", t, i]: 1, var["S", t, i]: 1}, 0, 1))
            if i in is_out:  # an output, once computed, is held to the end
                rows.append(({var["S", t, i]: 1}, 1, 1))
        for i, k in edges:
            if k <= t:  # inputs computed in this stage or held
                c = {var["R", t, k]: 1, var["R", t, i]: -1}
                if i < t:
                    c[var["S", t, i]] = -1
                rows.append((c, -np.inf, 0))
        if t + 1 < n:
            for i in range(t + 1):  # held next stage: held or computed in this one
                c = {var["S", t + 1, i]: 1, var["R", t, i]: -1}
                if i < t:
                    c[var["S", t, i]] = -1
                rows.append((c, -np.inf, 0))
        for i, k in edges:
            if ("F", t, i, k) not in var:
                continue
            f = var["F", t, i, k]
            rows.append(({f: 1, var["R", t, k]: -1}, -np.inf, 0))
            if t + 1 < n:
                rows.append(({f: 1, var["S", t + 1, i]: 1}, -np.inf, 1))
            for j in children[i]:
                if k < j <= t:
                    rows.append(({f: 1, var["R", t, j]: 1}, -np.inf, 1))
        for k in range(t + 1):  # memory while v_k runs
            c: dict[int, float] = {}
            for i in range(t):
                c[var["S", t, i]] = size[i]
            for j in range(k + 1):
                c[var["R", t, j]] = c.get(var["R", t, j], 0) + size[j]
            for i, j in edges:
                if j < k and ("F", t, i, j) in var:
                    c[var["F", t, i, j]] = c.get(var["F", t, i, j], 0) - size[i]
            rows.append((c, -np.inf, budget))
    A = lil_matrix((len(rows), len(var)))
    lo, hi = np.empty(len(rows)), np.empty(len(rows))
    for r, (c, a, b) in enumerate(rows):
        for j, v in c.items():
            A[r, j] = v
        lo[r], hi[r] = a, b
    objective = np.zeros(len(var))
    for key, j in var.items():
        if key[0] == "R":
            objective[j] = cost(order[key[2]])
    return order, var, objective, LinearConstraint(A.tocsr(), lo, hi), Bounds(0, 1)


def optimal_rematerialization(outputs: Sequence[Node], budget: float,
                              cost: Callable[[Node], float] | None = None,
                              order: Sequence[Node] | str | None = None,
                              time_limit: float = 60.0) -> RematResult:
    """The cheapest schedule of ``outputs`` (loss, gradients) holding at most ``budget`` bytes.

    Optimal among the schedules that compute each node for the first time in ``order``, as in
    Checkmate, which solves for a fixed order: by default the memory-aware order of the planners
    (:func:`~memlab.memory.order.memory_order`); a method name of it (``"dfs"``: depth-first) or
    an explicit order otherwise. Another order can do better.

    Raises :class:`~memlab.errors.BudgetError` with the least budget any schedule needs (the largest
    op's inputs and output together) when ``budget`` is below it, or when the solver proves the
    budget infeasible.
    """
    import time

    from scipy.optimize import milp

    outputs = training_outputs(outputs, "optimal_rematerialization")
    check_number(budget, "optimal_rematerialization: budget (bytes)", low=0, error=BudgetError)
    cost = (lambda v: 1.0) if cost is None else \
        check_callable(cost, "optimal_rematerialization: cost (a function of a node)", PlanError)
    if order is not None and not isinstance(order, str):
        order = check_list(order, "optimal_rematerialization: order", PlanError)
        if not all(isinstance(n, Node) for n in order):
            raise PlanError("optimal_rematerialization: order must be a list of Nodes")
    check_number(time_limit, "optimal_rematerialization: time_limit (seconds)", above=0,
                 error=PlanError)
    order = _computed_order(outputs, order)
    floor = minimum_budget(outputs, order)
    if budget < floor:
        raise BudgetError(f"a budget of {budget:g} bytes is too small: the minimum is {floor} bytes "
                          f"(an op's inputs, its output and the graph outputs held together)")
    order, var, c, cons, bounds = _problem(outputs, budget, cost, order)
    t0 = time.perf_counter()
    res = milp(c, constraints=cons, bounds=bounds, integrality=np.ones(len(c)),
               options={"time_limit": time_limit})
    seconds = time.perf_counter() - t0
    if res.x is None:
        raise BudgetError(f"no schedule fits {budget:g} bytes (the solver says: {res.message}); "
                          f"the minimum for one op at a time is {floor} bytes")
    x = np.round(res.x).astype(int)
    n = len(order)
    stages = [[order[i] for i in range(t + 1) if x[var["R", t, i]]] for t in range(n)]
    computed = sum(len(s) for s in stages)
    forward = set(topo_order(outputs[0]))
    readers_later = {v for t in range(n) for i in range(t) if x[var["S", t, i]] for v in [order[i]]}
    keep = {v for v in readers_later if v in forward and v.op.computes}
    return RematResult(keep, float(c @ x), computed - n, stages, seconds)  # exact, not res.fun


def minimum_budget(outputs: Sequence[Node], order: Sequence[Node] | str | None = None) -> int:
    """Bytes no schedule in ``order`` (as in :func:`optimal_rematerialization`) can go below: for
    each op, its distinct computed inputs and its output, plus the graph outputs computed before
    it (they are held to the end)."""
    outputs = as_list(outputs)
    order = _computed_order(outputs, order)
    pos = {v: i for i, v in enumerate(order)}
    outs = [o for o in outputs if o in pos]
    worst = 0
    for k, v in enumerate(order):
        held = {x for x in v.inputs if x in pos} | {o for o in outs if pos[o] < k} | {v}
        worst = max(worst, sum(x.nbytes for x in held))
    return worst

"""The exact optimum of rematerialisation on a small graph, as an integer program (Checkmate; Jain,
Jain, Nrusimha, Gholami, Abbeel, Keutzer, Stoica and Gonzalez 2020), solved by ``scipy.optimize.milp``.

The computed nodes ``v_0 .. v_{n-1}`` of the training graph, in topological order, are computed for
the first time in that order, one per **stage**: stage ``t`` computes ``v_t`` and may first recompute
earlier nodes. Variables (binary in the integer program, in [0, 1] in the relaxation of
:mod:`.remat_lp`):

* ``R[t, i]``: ``v_i`` is computed in stage ``t`` (``R[t, t] = 1``);
* ``S[t, i]``: ``v_i`` is held when stage ``t`` starts (it was held or computed in stage ``t - 1``);
* ``F[t, i, k]``: ``v_i`` is freed right after ``v_k``, one of its consumers, in stage ``t`` (allowed
  when no later consumer of ``v_i`` runs in the stage and ``v_i`` is not carried into stage ``t + 1``);
* ``U[t, k]`` (continuous): the bytes held while ``v_k`` runs in stage ``t``, in units of the budget.

An op needs its inputs computed in the same stage or held. ``U[t, k]`` is what was held at the
start, plus everything computed so far in the stage, minus what was freed, written as Checkmate's
recurrence ``U[t, k] = U[t, k-1] + size_k R[t, k] - sum_i size_i F[t, i, k-1]`` so that the
constraints have O(n^2 + n |E|) nonzeros; ``U <= 1`` is the budget. Graph outputs are never freed.
The objective is the cost of every computation (1 per op by default). Placeholders and constants are
given and cost no memory, as in the planners. :func:`optimal_rematerialization` returns the nodes a
schedule keeps from the forward pass and the schedule itself; :func:`build_problem` builds the
constraints once, as sparse matrices, for both this solver and the relaxation.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import BudgetError, PlanError
from ..graph import Node, as_list, topo_order

#: the integer program has about n^2 / 2 variables of each kind; HiGHS proves the optimum on the
#: MLP training graphs of up to ~100 nodes within a minute (bench/checkmate.py)
MAX_NODES = 120


@dataclass
class RematResult:
    """A schedule: ``keep`` (forward nodes computed once and held until the backward pass reads
    them), ``cost`` (total compute), ``recomputations`` (computations beyond one per node), the
    ``stages`` (nodes computed in each stage, in order), the solver's ``seconds``, whether the solver
    proved the schedule ``optimal``, and ``bound``, a lower bound on the cost of any schedule in the
    same order (the solver's dual bound; the relaxation's value for :mod:`.remat_lp`)."""

    keep: set[Node]
    cost: float
    recomputations: int
    stages: list[list[Node]]
    seconds: float
    optimal: bool = True
    bound: float = float("nan")

    def __iter__(self):
        return iter((self.keep, self.cost))


def fixed_order(outputs: Sequence[Node], order: Sequence[Node] | None) -> list[Node]:
    """The computed nodes of ``outputs`` in ``order`` (default: the depth-first topological order),
    checked to list each of them once, every node after its inputs."""
    computed = [n for n in topo_order(outputs) if n.op.computes]
    if order is None:
        return computed
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


def _tri(t: np.ndarray, i: np.ndarray) -> np.ndarray:
    """Index of ``(t, i)``, ``i <= t``, in a lower triangle stored row by row."""
    return t * (t + 1) // 2 + i


@dataclass
class Problem:
    """Checkmate's program for ``order`` as ``min c x`` with ``lo <= A x <= hi``, ``lb <= x <= ub``.
    Variables: ``R`` from 0 (``R[t, i]`` at ``_tri(t, i)``), ``S`` from ``s0`` (``S[t, i]``, i < t, at
    ``s0 + _tri(t - 1, i)``), ``U`` from ``u0`` (like ``R``), then ``F`` from ``f0``."""

    order: list[Node]
    inputs: list[list[int]]   #: positions of each node's distinct computed inputs
    size: np.ndarray          #: bytes of each node
    cost: np.ndarray          #: cost of computing each node
    outputs: np.ndarray       #: positions of the graph outputs
    c: np.ndarray
    A: object                 #: scipy.sparse CSR matrix
    lo: np.ndarray
    hi: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    s0: int

    def matrices(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``(R, S)`` matrices (n x n, S[t, i] for i < t) of a solution vector ``x``."""
        n = len(self.order)
        t, i = np.tril_indices(n)
        R = np.zeros((n, n))
        R[t, i] = x[_tri(t, i)]
        S = np.zeros((n, n))
        t, i = np.tril_indices(n, -1)
        S[t, i] = x[self.s0 + _tri(t - 1, i)]
        return R, S


def build_problem(outputs: Sequence[Node], budget: float, cost: Callable[[Node], float],
                  order: Sequence[Node] | None) -> Problem:
    """Checkmate's constraints for ``outputs`` in ``order``, built with numpy index arrays."""
    from scipy.sparse import coo_matrix  # imported here: only these solvers need it

    order = fixed_order(outputs, order)
    n = len(order)
    pos = {v: i for i, v in enumerate(order)}
    inputs = [[pos[x] for x in dict.fromkeys(v.inputs) if x in pos] for v in order]
    size = np.array([float(v.nbytes) for v in order]) / budget
    is_out = np.zeros(n, bool)
    is_out[[pos[o] for o in outputs if o in pos]] = True
    src = np.array([i for k in range(n) for i in inputs[k]], np.int64)
    dst = np.array([k for k in range(n) for _ in inputs[k]], np.int64)
    s0 = n * (n + 1) // 2
    u0 = s0 + n * (n - 1) // 2
    f0 = u0 + n * (n + 1) // 2
    freeable = np.flatnonzero(~is_out[src])  # edges whose source may be freed
    count = n - dst[freeable]                 # stages dst .. n-1
    fbase = np.zeros(len(src), np.int64)
    fbase[freeable] = f0 + np.concatenate(([0], np.cumsum(count)[:-1])).astype(np.int64)
    fe = np.repeat(freeable, count)           # F variable -> (stage, edge)
    ft = dst[fe] + np.arange(len(fe)) - np.repeat(fbase[freeable] - f0, count)
    nvar = f0 + len(fe)

    def R(t, i):
        return _tri(t, i)

    def S(t, i):
        return s0 + _tri(t - 1, i)

    rows: list[tuple[np.ndarray, ...]] = []   # (row, col, value) blocks
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []
    nrow = 0

    def add(cols: Sequence[np.ndarray], vals: Sequence[float | np.ndarray], a: float, b: float):
        nonlocal nrow
        m = len(cols[0])
        r = nrow + np.arange(m)
        for col, val in zip(cols, vals):
            rows.append((r, col, np.broadcast_to(np.asarray(val, float), (m,))))
        lo.append(np.full(m, a))
        hi.append(np.full(m, b))
        nrow += m

    t, i = np.tril_indices(n, -1)
    add([R(t, i), S(t, i)], [1, 1], -np.inf, 1)                    # not both computed and held
    e = np.repeat(np.arange(len(src)), n - dst)                    # (stage, edge), dst <= stage
    te = dst[e] + np.arange(len(e)) - np.repeat(np.concatenate(([0], np.cumsum(n - dst)[:-1])),
                                                n - dst)
    add([R(te, dst[e]), R(te, src[e]), S(te, src[e])], [1, -1, -1], -np.inf, 0)  # inputs present
    t, i = np.tril_indices(n - 1, -1)                              # held next: held or computed now
    add([S(t + 1, i), R(t, i), S(t, i)], [1, -1, -1], -np.inf, 0)
    fv = f0 + np.arange(len(fe))
    add([fv, R(ft, dst[fe])], [1, -1], -np.inf, 0)                 # freed after a consumer ran
    last = ft < n - 1
    add([fv[last], S(ft[last] + 1, src[fe[last]])], [1, 1], -np.inf, 1)  # ... and not carried
    pa, pb = _later_consumers(src, dst)                            # ... nor read later this stage
    if len(pa):
        keep = ~is_out[src[pa]]
        pa, pb = pa[keep], pb[keep]
        reps = n - dst[pb]
        pa_r, pb_r = np.repeat(pa, reps), np.repeat(pb, reps)
        tt = dst[pb_r] + np.arange(len(pa_r)) - np.repeat(
            np.concatenate(([0], np.cumsum(reps)[:-1])), reps)
        add([fbase[pa_r] + tt - dst[pa_r], R(tt, dst[pb_r])], [1, 1], -np.inf, 1)
    t = np.arange(n)                                               # U[t, 0]
    held_t, held_i = np.tril_indices(n, -1)
    add([_tri(t, 0) + u0, R(t, 0)], [1, -size[0]], 0, 0)
    held_rows = nrow - n + held_t
    rows.append((held_rows, S(held_t, held_i), -size[held_i]))
    t, k = np.tril_indices(n)                                      # U[t, k], k >= 1
    t, k = t[k > 0], k[k > 0]
    start = nrow
    add([u0 + _tri(t, k), u0 + _tri(t, k - 1), R(t, k)], [1, -1, -size[k]], 0, 0)
    row_of = np.full((n, n), -1, np.int64)
    row_of[t, k] = start + np.arange(len(t))
    inside = dst[fe] < ft                                          # freed before the stage ends
    rows.append((row_of[ft[inside], dst[fe[inside]] + 1], fv[inside], size[src[fe[inside]]]))
    A = coo_matrix((np.concatenate([r[2] for r in rows]),
                    (np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows]))),
                   shape=(nrow, nvar)).tocsr()
    lb, ub = np.zeros(nvar), np.ones(nvar)
    lb[_tri(np.arange(n), np.arange(n))] = 1                       # stage t computes v_t
    t, i = np.tril_indices(n, -1)
    held_out = is_out[i]
    lb[S(t[held_out], i[held_out])] = 1                            # outputs held to the end
    costs = np.array([float(cost(v)) for v in order])
    c = np.zeros(nvar)
    t, i = np.tril_indices(n)
    c[R(t, i)] = costs[i]
    return Problem(order, inputs, size * budget, costs, np.flatnonzero(is_out), c, A,
                   np.concatenate(lo), np.concatenate(hi), lb, ub, s0)


def _later_consumers(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of edges ``(a, b)`` out of the same node with ``dst[a] < dst[b]``."""
    by_src: dict[int, list[int]] = {}
    for e in np.lexsort((dst, src)):
        by_src.setdefault(int(src[e]), []).append(int(e))
    pairs = [(a, b) for es in by_src.values() for x, a in enumerate(es) for b in es[x + 1:]]
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pa, pb = np.array(pairs, np.int64).T
    return pa, pb


def check_budget(outputs: Sequence[Node], budget: float) -> None:
    """Raise :class:`~memlab.errors.BudgetError` when ``budget`` is below :func:`minimum_budget`."""
    floor = minimum_budget(outputs)
    if not budget >= floor:
        raise BudgetError(f"a budget of {budget:g} bytes is too small: the minimum is {floor} bytes "
                          f"(an op's inputs, its output and the graph outputs held together)")


def result(problem: Problem, outputs: Sequence[Node], R: np.ndarray, S: np.ndarray,
           seconds: float, optimal: bool, bound: float) -> RematResult:
    """The :class:`RematResult` of 0/1 matrices ``R`` and ``S`` (see :class:`Problem`)."""
    order, n = problem.order, len(problem.order)
    stages = [[order[i] for i in np.flatnonzero(R[t, :t + 1] > 0.5)] for t in range(n)]
    computed = sum(len(s) for s in stages)
    forward = set(topo_order(outputs[0]))
    held = np.flatnonzero((S > 0.5).any(axis=0))
    keep = {order[i] for i in held if order[i] in forward}
    cost = float(sum(problem.cost[i] for t in range(n) for i in np.flatnonzero(R[t] > 0.5)))
    return RematResult(keep, cost, computed - n, stages, seconds, optimal, bound)


def optimal_rematerialization(outputs: Sequence[Node], budget: float,
                              cost: Callable[[Node], float] | None = None,
                              order: Sequence[Node] | None = None,
                              time_limit: float = 60.0) -> RematResult:
    """The cheapest schedule of ``outputs`` (loss, gradients) holding at most ``budget`` bytes.

    Optimal among the schedules that compute each node for the first time in ``order`` (default:
    the depth-first topological order), as in Checkmate; another order can do better, since it
    may, say, compute part of the backward pass early. After ``time_limit`` seconds the solver
    stops with the best schedule found: ``result.optimal`` says whether it proved it optimal, and
    ``result.bound`` is its lower bound on the optimum.

    Raises :class:`~memlab.errors.BudgetError` with the least budget any schedule needs (the largest
    op's inputs and output together) when ``budget`` is below it, or when the solver proves the
    budget infeasible or finds no schedule in time; :class:`~memlab.errors.PlanError` above
    :data:`MAX_NODES` computed nodes (use :func:`~memlab.checkpoint.remat_lp.rounded_rematerialization`).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    outputs = as_list(outputs)
    cost = cost or (lambda v: 1.0)
    check_budget(outputs, budget)
    n = len(fixed_order(outputs, order))
    if n > MAX_NODES:
        raise PlanError(f"optimal_rematerialization: {n} computed nodes, above the limit of "
                        f"{MAX_NODES} (the integer program grows like n^2); "
                        f"rounded_rematerialization solves its relaxation at any size")
    p = build_problem(outputs, budget, cost, order)
    nint = p.s0 + n * (n - 1) // 2
    integrality = np.zeros(len(p.c))
    integrality[:nint] = 1                   # R and S; F follows them at the optimum, U is bytes
    integrality[nint + n * (n + 1) // 2:] = 1
    t0 = time.perf_counter()
    res = milp(p.c, constraints=LinearConstraint(p.A, p.lo, p.hi), bounds=Bounds(p.lb, p.ub),
               integrality=integrality, options={"time_limit": time_limit})
    seconds = time.perf_counter() - t0
    if res.x is None:
        raise BudgetError(f"no schedule fits {budget:g} bytes (the solver says: {res.message}); "
                          f"the minimum for one op at a time is {minimum_budget(outputs)} bytes")
    R, S = p.matrices(np.round(res.x))
    bound = getattr(res, "mip_dual_bound", None)
    return result(p, outputs, R, S, seconds, res.status == 0,
                  float(res.fun) if bound is None or res.status == 0 else float(bound))


def minimum_budget(outputs: Sequence[Node]) -> int:
    """Bytes no schedule can go below: for each op, its distinct computed inputs and its output, plus
    the graph outputs computed before it (they are held to the end)."""
    outputs = as_list(outputs)
    order = [n for n in topo_order(outputs) if n.op.computes]
    pos = {v: i for i, v in enumerate(order)}
    outs = [o for o in outputs if o in pos]
    worst = 0
    for k, v in enumerate(order):
        held = {x for x in v.inputs if x in pos} | {o for o in outs if pos[o] < k} | {v}
        worst = max(worst, sum(x.nbytes for x in held))
    return worst

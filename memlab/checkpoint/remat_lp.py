"""Checkmate at scale: the linear relaxation of the integer program of :mod:`.remat_milp`, then
two-phase rounding (Jain et al. 2020, section 5), for training graphs of thousands of nodes.

1. Solve the relaxation (every variable in [0, 1]) with HiGHS: a lower bound on the cost of any
   schedule in the same order, and a fractional checkpoint matrix ``S*``.
2. Round ``S*`` to 0/1: deterministically (``S = 1`` where ``S* >= threshold``, for several
   thresholds) and at random (``S = 1`` with probability ``S*``).
3. Given ``S``, the cheapest ``R`` is forced: stage ``t`` computes ``v_t``, whatever it must carry
   into stage ``t + 1`` and does not hold, and, walking back, every input of those that it does not
   hold. Values held but neither read in the stage nor carried on are dropped from ``S``, and each
   value is freed right after its last reader in the stage unless it is carried on.
4. Keep the cheapest rounding whose peak fits the budget, and improve it by local search (hold a
   recomputed value instead, making room by dropping others); on a small graph, when the result is
   above the relaxation's bound, round again thousands of times and search from those too.

Rounding may overshoot the budget (the relaxation spreads a value over several fractional
"half-held" states). As in the paper, the relaxation is then solved again for a smaller budget;
then the schedules that hold everything (no recomputation) and that hold only the outputs are
tried, and the threshold roundings that came closest are repaired (held values released at the
first stage over the budget); if none fits, :class:`~memlab.errors.BudgetError` names the least
budget that this search reached and the floor below which no schedule exists.
"""
from __future__ import annotations

import itertools
import time
from typing import Callable, Sequence

import numpy as np

from ..errors import BudgetError, PlanError
from ..graph import Node, rebuilt_from
from ..memory.liveness import prepare
from ..memory.order import memory_order
from .rewrite import forward_nodes
from .remat_milp import (Problem, RematResult, build_problem, checked_arguments, minimum_budget,
                         result)

THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)  #: deterministic rounding thresholds
SHRINK = (0.9, 0.75, 0.5)
#: stages x nodes of the relaxation: beyond it the stages compute blocks of new nodes (with one
#: stage per node the relaxation takes 4 s at 123 nodes and 140 s at 243; 32 stages, 24 s at 1005)
CELLS = 30_000  #: budgets for the relaxation, as fractions, when no rounding fits
#: a second round of random roundings on small graphs: this many stage x node cells in all (each
#: rounding is completed and replayed in time proportional to its cells), at most MORE_SAMPLES
SAMPLE_CELLS = 2_000_000
MORE_SAMPLES = 8192


def solve_relaxation(p: Problem, time_limit: float = 600.0) -> tuple[np.ndarray, float]:
    """The relaxation's solution vector and value (HiGHS's dual simplex through
    ``scipy.optimize.linprog``: 4x faster than its interior point on these programs)."""
    from scipy.optimize import linprog

    eq = p.lo == p.hi
    res = linprog(p.c, A_ub=p.A[~eq], b_ub=p.hi[~eq], A_eq=p.A[eq], b_eq=p.hi[eq],
                  bounds=np.column_stack([p.lb, p.ub]), method="highs-ds",
                  options={"time_limit": time_limit})
    if res.x is None:
        return None, float("inf")
    return res.x, float(res.fun)


def complete(p: Problem, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Phase two: the fewest computations ``R`` given held values ``S`` (0/1, stages x nodes), and
    ``S`` without the values that nothing reads. Outputs are held from the stage after they are
    made."""
    n, m, ins, first, last = len(p.order), len(p.first), p.inputs, p.first, p.last
    is_out = np.zeros(n, bool)
    is_out[p.outputs] = True
    S = np.asarray(S, bool) & (np.arange(n)[None, :] < first[:, None])
    S |= is_out[None, :] & (np.arange(n)[None, :] < first[:, None])
    R = np.zeros((m, n), bool)
    for T in range(m - 1, -1, -1):
        held = S[T]
        need = np.zeros(n, bool)
        need[first[T]:last[T] + 1] = True
        if T + 1 < m:
            need[:first[T]] |= S[T + 1, :first[T]] & ~held[:first[T]]
        for j in range(last[T], -1, -1):
            if need[j]:
                R[T, j] = True
                for i in ins[j]:
                    if not held[i]:
                        need[i] = True
        read = np.zeros(n, bool)
        for j in np.flatnonzero(R[T]):
            read[ins[j]] = True
        S[T] &= read | is_out | (S[T + 1] if T + 1 < m else False)
    return R, S


def peak_bytes(p: Problem, R: np.ndarray, S: np.ndarray) -> float:
    """The most bytes held at once when stage ``T`` starts with ``S[T]``, computes ``R[T]`` in
    order, and frees each value after its last reader in the stage unless ``S[T + 1]`` holds it
    (an output written in place over a dying input, and a workspace, counted as the program
    counts them: :mod:`.remat_milp`)."""
    return float(stage_peaks(p, R, S).max(initial=0.0))


def stage_peaks(p: Problem, R: np.ndarray, S: np.ndarray) -> np.ndarray:
    """The most bytes held at once in each stage (:func:`peak_bytes`)."""
    n, m, ins, size = len(p.order), len(p.first), p.inputs, p.size
    is_out = np.zeros(n, bool)
    is_out[p.outputs] = True
    peaks = np.zeros(m)
    for T in range(m):
        ops = np.flatnonzero(R[T])
        kept = is_out | (S[T + 1] if T + 1 < m else False)
        last: dict[int, int] = {}
        for j in ops:
            for i in ins[j]:
                last[i] = j
        mem = float(size[S[T]].sum())
        for j in ops:
            dying = [i for i in ins[j] if last[i] == j and not kept[i]]
            # in place over a dying input (the planners' rule), and the workspace while it runs
            credit = size[j] if any(i in p.inplace[j] for i in dying) else 0.0
            mem += size[j]
            peaks[T] = max(peaks[T], mem - credit + p.work[j])
            for i in dying:
                mem -= size[i]
            if j not in last and not kept[j]:
                mem -= size[j]
    return peaks


def held_of(p: Problem, rewritten: Sequence[Node]) -> np.ndarray:
    """The held values ``S`` (stages x nodes) of a schedule given as a graph of
    :func:`~memlab.checkpoint.recompute_graph` (memonger's, say), run in the planners' order: value
    ``i`` is held when stage ``T`` starts if a version of it (the node, a rebuilt one or a
    recomputed copy) is alive at the step where the rewrite first computes the stage's first new
    node. :class:`PlanError` when the rewrite first computes the nodes in another order than
    ``p``'s (pass that order to the solver)."""
    from .rewrite import RECOMPUTE
    order = memory_order(rewritten)
    pos = {v: i for i, v in enumerate(p.order)}
    origin = [n.attrs["of"] if n.op is RECOMPUTE else rebuilt_from(n) for n in order]
    first_step: dict[int, int] = {}
    for step, o in enumerate(origin):
        if o in pos:
            first_step.setdefault(pos[o], step)
    if len(first_step) != len(pos) or list(first_step) != sorted(first_step):
        raise PlanError("the rewrite computes the nodes for the first time in another order than "
                        "the solver's; pass that order (order=...)")
    starts = np.array([first_step[int(f)] for f in p.first])
    S = np.zeros((len(p.first), len(p.order)), bool)
    for n, (a, b) in prepare(rewritten, order).lifetimes().items():
        o = n.attrs["of"] if n.op is RECOMPUTE else rebuilt_from(n)
        if o in pos:
            S[:, pos[o]] |= (starts > a) & (starts <= b) & (p.first > pos[o])
    return S


def _incumbent_result(p: Problem, outputs: Sequence[Node], rewritten: Sequence[Node],
                      budget: float, seconds: float, bound: float) -> RematResult | None:
    """The rewrite's own schedule as a result, one stage per new node (its recomputations in the
    stage of the next new node), or None when its peak is above ``budget``."""
    from .rewrite import RECOMPUTE
    order = memory_order(rewritten)
    if prepare(rewritten, order).peak(inplace=True) > budget:      # as the planners count
        return None
    pos = {v: i for i, v in enumerate(p.order)}
    stages: list[list[Node]] = []
    pending: list[Node] = []
    seen: set[Node] = set()
    recomputed: set[Node] = set()
    for n in order:
        o = n.attrs["of"] if n.op is RECOMPUTE else rebuilt_from(n)
        if o not in pos:
            continue
        if o in seen:
            pending.append(o)
            recomputed.add(o)
        else:
            seen.add(o)
            stages.append(pending + [o])
            pending = []
    forward = set(forward_nodes(outputs)) & set(pos)
    cost = float(sum(p.cost[pos[v]] for stage in stages for v in stage))
    computed = sum(len(stage) for stage in stages)
    return RematResult(forward - recomputed, cost, computed - len(pos), stages, seconds,
                       cost <= bound + 1e-6, bound)


def _repair(p: Problem, S: np.ndarray, budget: float, tries: int = 16) -> np.ndarray | None:
    """A rounding that does not fit, made to fit when it can: at the first stage above ``budget``,
    stop holding (from that stage to the end of its run) the held value whose release leaves the
    lowest peak, among the ``tries`` largest; repeat while the stage's peak falls."""
    is_out = np.zeros(len(p.order), bool)
    is_out[p.outputs] = True
    R, S = complete(p, S)
    peaks = stage_peaks(p, R, S)
    while peaks.max() > budget:
        T = int(np.flatnonzero(peaks > budget)[0])
        held = [i for i in np.flatnonzero(S[T]) if not is_out[i]]
        best = None
        for i in sorted(held, key=lambda i: -p.size[i])[:tries]:
            S2 = S.copy()
            end = T + int(np.argmin(np.append(S2[T:, i], False)))
            S2[T:end, i] = False
            R2, S2 = complete(p, S2)
            p2 = stage_peaks(p, R2, S2)
            if p2[T] < peaks[T] and (best is None or p2.max() < best[2].max()):
                best = (R2, S2, p2)
        if best is None:
            return None
        R, S, peaks = best
    return S


def _moves(R: np.ndarray, S: np.ndarray, S_star: np.ndarray, first: np.ndarray):
    """Changes to ``S`` that remove a recomputation: hold ``v_i`` through stages ``a .. b`` instead
    of recomputing it in stage ``b`` (from the last stage ``a - 1`` that computed or held it),
    most held by ``S*`` first; then the same together with no longer holding one, then two, other
    values from stage ``a`` to the end of a run of stages that holds them, to make room."""
    bridges = []
    for b, i in zip(*np.nonzero(R & (np.arange(R.shape[1])[None, :] < first[:, None]))):
        a = int(np.flatnonzero(R[:b, i] | S[:b, i])[-1]) + 1
        bridges.append((-float(S_star[a:b + 1, i].mean()), b - a, a, int(b), int(i)))
    bridges = [m[2:] for m in sorted(bridges)]
    for a, b, i in bridges:
        S2 = S.copy()
        S2[a:b + 1, i] = True
        yield S2
    edge = np.diff(np.vstack([np.zeros((1, S.shape[1]), bool), S, np.zeros((1, S.shape[1]), bool)])
                   .astype(np.int8), axis=0)
    starts, ends = np.nonzero(edge.T == 1), np.nonzero(edge.T == -1)  # runs of S = 1, by column
    runs = [(int(j), int(c), int(d) - 1) for j, c, d in zip(starts[0], starts[1], ends[1])]
    for drops in (1, 2):
        for a, b, i in bridges:
            near = [(j, c, d) for j, c, d in runs if j != i and c <= b and d >= a]
            for pick in itertools.combinations(near, drops):
                S2 = S.copy()
                S2[a:b + 1, i] = True
                for j, c, d in pick:
                    S2[max(a, c):d + 1, j] = False
                yield S2


def _roundings(S_star: np.ndarray, thresholds: Sequence[float], samples: int,
               rng: np.random.Generator):
    for th in thresholds:
        yield S_star >= th - 1e-9
    for _ in range(samples):
        yield rng.random(S_star.shape) < S_star


def rounded_rematerialization(outputs: Sequence[Node], budget: float,
                              cost: Callable[[Node], float] | None = None,
                              order: Sequence[Node] | str | None = None,
                              thresholds: Sequence[float] = THRESHOLDS, samples: int = 32,
                              seed: int = 0, time_limit: float = 600.0,
                              improve: float = 10.0, starts: int = 4,
                              stages: int | None = None, more: int | None = None,
                              incumbent: Sequence[Node] | None = None) -> RematResult:
    """A schedule of ``outputs`` within ``budget`` bytes by Checkmate's relaxation and two-phase
    rounding (Jain et al. 2020, section 5), for graphs too large for
    :func:`~memlab.checkpoint.remat_milp.optimal_rematerialization`.

    Same model, ``order`` and result as the integer program (default order: the memory-aware one
    of the planners), except that beyond ``CELLS`` stages x nodes (or with ``stages``) each stage
    computes a block of new nodes, so that the relaxation stays small; ``result.bound`` is the
    relaxation's value, a lower bound on the optimum in those stages, and ``result.optimal`` is
    true only when the schedule's cost meets it. Tries each of ``thresholds`` and ``samples``
    random roundings (seeded by ``seed``), then, from each of the ``starts`` cheapest
    schedules found, for up to ``improve`` seconds: holds a recomputed value from its previous
    computation instead, one value at a time (most held by the relaxation first), while the
    schedule gets cheaper and fits. When the result is above the bound, ``more`` random roundings
    (default: :data:`SAMPLE_CELLS` stage x node cells' worth, at most :data:`MORE_SAMPLES`:
    thousands on a graph of tens of nodes, none on thousands) and the same search from the
    cheapest of them; the result is never worse than without them. ``incumbent``: the outputs of
    a :func:`~memlab.checkpoint.recompute_graph` rewrite (memonger's, say) whose first
    computations follow ``order``: its schedule (:func:`held_of`) is a candidate too, and where
    the blocked stages cannot hold it, the rewrite's own schedule is returned when it is cheaper,
    so the result costs no more than the rewrite whenever the rewrite fits the budget.

    Raises :class:`~memlab.errors.BudgetError` when ``budget`` is below
    :func:`~memlab.checkpoint.remat_milp.minimum_budget`, or when no rounding nor fallback fits
    (the message names the least budget reached).
    """
    outputs, cost, order = checked_arguments("rounded_rematerialization", outputs, budget, cost,
                                             order)
    for name, k in (("samples", samples), ("more", 0 if more is None else more)):
        if not (isinstance(k, int) and k >= 0):
            raise PlanError(f"{name} must be an integer >= 0, got {k!r}")
    if any(not 0 < th <= 1 for th in thresholds):
        raise PlanError(f"thresholds must lie in (0, 1], got {tuple(thresholds)!r}")
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    if stages is None:
        stages = max(8, CELLS // max(1, len(order)))
    p = build_problem(outputs, budget, cost, order, stages)
    n, m = len(p.order), len(p.first)
    if more is None:
        more = min(MORE_SAMPLES, SAMPLE_CELLS // (m * n))
    found: dict[bytes, tuple[float, np.ndarray, np.ndarray]] = {}  # feasible schedules by S
    least = float("inf")

    def consider(S: np.ndarray) -> tuple[float, np.ndarray, np.ndarray] | None:
        """``S`` completed, with its cost, if it fits."""
        nonlocal least
        R, S = complete(p, S)
        peak = peak_bytes(p, R, S)
        least = min(least, peak)
        if peak > budget:
            return None
        return found.setdefault(S.tobytes(), (float((R * p.cost[None, :]).sum()), R, S))

    stars: list[np.ndarray] = []  # the relaxations' held values, one per budget tried
    for f in (1.0, *SHRINK):  # phase one, on a smaller budget when no rounding fits
        q = p if f == 1.0 else build_problem(outputs, budget * f, cost, p.order, stages)
        x, value = solve_relaxation(q, time_limit)
        bound = value if f == 1.0 else bound
        if x is None:
            break
        S_star = q.matrices(x)[1]
        stars.append(S_star)
        for S in _roundings(S_star, thresholds, samples, rng):
            consider(S)
        if found:
            break
    consider(np.ones((m, n), bool))   # hold everything read later
    consider(np.zeros((m, n), bool))  # hold only the outputs
    if incumbent is not None:         # a heuristic's schedule: the result is never worse
        consider(held_of(p, incumbent))
    if not found:                      # repair the threshold roundings that came closest
        near = sorted((S for star in stars for S in _roundings(star, thresholds, 0, rng)),
                      key=lambda S: peak_bytes(p, *complete(p, S)))
        for S in near[:starts]:
            fixed = _repair(p, S, budget)
            if fixed is not None:
                consider(fixed)
    if not found and incumbent is not None:
        own = _incumbent_result(p, outputs, incumbent, budget, time.perf_counter() - t0, bound)
        if own is not None:
            return own
    if not found:
        raise BudgetError(f"no rounded schedule fits {budget:g} bytes: the least peak reached is "
                          f"{least:g} bytes (the minimum for one op at a time is "
                          f"{minimum_budget(outputs, order)} bytes)")

    def descend(schedules: list[tuple[float, np.ndarray, np.ndarray]]) -> None:
        """First-improvement local search from each of ``starts`` cheapest ``schedules``."""
        stop = time.perf_counter() + improve
        for c, R, S in sorted(schedules, key=lambda f: f[0])[:starts]:
            while time.perf_counter() < stop:  # while the time allows
                for S2 in _moves(R, S, S_star, p.first):
                    better = consider(S2)
                    if better is not None and better[0] < c:
                        c, R, S = better
                        break
                    if time.perf_counter() > stop:
                        break
                else:
                    break

    descend(list(found.values()))
    if more and min(f[0] for f in found.values()) > bound + 1e-6:
        seen = set(found)                 # a second round of roundings, and a search from them
        for S in _roundings(S_star, (), more, rng):
            consider(S)
        descend([f for key, f in found.items() if key not in seen])
    c, R, S = min(found.values(), key=lambda f: f[0])
    if incumbent is not None:         # the rewrite itself, when the blocked stages cannot hold it
        own = _incumbent_result(p, outputs, incumbent, budget, time.perf_counter() - t0, bound)
        if own is not None and own.cost < c:
            return own
    return result(p, outputs, R, S, time.perf_counter() - t0, c <= bound + 1e-6, bound)

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
given and cost no memory, as in the planners.

**One measure of bytes with the planners.** Checkmate's recurrence counts an op's output beside
all its inputs. memlab's planners let an op write its output over an input it may overwrite when
it is that input's last reader (p.19-20; :meth:`~memlab.memory.liveness.IndexedGraph.partner`), and
hold an op's workspace (:mod:`memlab.graph.workspace`) during its step. So does this program:
``P[t, k]`` (continuous, at most the sum of the ``F[t, i, k]`` of ``k``'s in-place candidates,
inputs of its size in positions ``op.inplace`` allows) takes ``size_k P[t, k]`` off ``U[t, k]``
and gives it back to the next step, and ``U[t, k]`` holds ``work_k R[t, k]`` at step ``k`` only.
Sizes are the values' bytes, not aligned (a planner's arena of ``B`` bytes holds at least its
live bytes). So a rewrite (:func:`~memlab.checkpoint.recompute_graph`) that
:func:`~memlab.memory.plan_offsets` plans in ``B`` bytes is a schedule of this program at budget
``B`` when the program's order is the rewrite's order of first computations: pass the plan's
order (``order=plan.order``: its recomputed copies and rebuilt nodes are read as the nodes they
copy), and the optimum recomputes no more than the rewrite (tested on random training steps
against sqrt(N), memonger and every-k). Another order can need more, or less. :func:`optimal_rematerialization` returns the nodes a
schedule keeps from the forward pass and the schedule itself; :func:`build_problem` builds the
constraints once, as sparse matrices, for both this solver and the relaxation. Checkmate solves for
a fixed order, so the order matters: by default it is the memory-aware
:func:`~memlab.memory.order.memory_order` (the scheduling slides, part 1), the order the planners use;
``order="dfs"`` is the depth-first one.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from ..errors import BudgetError, PlanError, check_callable, check_list, check_number, \
    check_numbers
from ..graph import Node, as_list, rebuilt_from, topo_order, workspace_of
from ..memory.liveness import distinct_inputs, inplace_candidates
from ..memory.order import check_order_name, memory_order
from .rewrite import training_outputs

#: the integer program has about n^2 / 2 variables of each kind. bench/checkmate.py (memonger's
#: peak): HiGHS proves the optimum at 44 nodes in 15 s, at 63 nodes in 117 s and at 99 in 530 s
MAX_NODES = 120
#: the solver's default time limit (seconds): enough to prove the optimum at about 100 nodes
TIME_LIMIT = 600.0


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


def first_computations(order: Sequence[Node]) -> list[Node]:
    """The nodes of the original training graph in the order ``order`` first computes them, where
    ``order`` may be that of a rewrite (:func:`~memlab.checkpoint.recompute_graph`): a recomputed
    copy stands for the node it copies, a rebuilt backward node for the node it rebuilds
    (:func:`~memlab.graph.rebuilt_from`); later computations of a node (recomputations) are left
    out, as are given values."""
    seen: dict[Node, None] = {}
    for n in order:
        if n.op.computes:
            original = n.attrs["of"] if n.op.name == "recompute" else rebuilt_from(n)
            seen.setdefault(original, None)
    return list(seen)


def fixed_order(outputs: Sequence[Node], order: Sequence[Node] | str | None,
                who: str = "fixed_order") -> list[Node]:
    """The computed nodes of ``outputs`` in the order asked for: None for :func:`memory_order`'s
    default, one of its methods by name (``"dfs"``: depth-first), or an explicit order, checked to
    list each of them once, every node after its inputs. An explicit order may be a rewrite's
    (:func:`first_computations`: its copies and rebuilt nodes read as the nodes of ``outputs``)."""
    if order is None or isinstance(order, str):
        return [n for n in memory_order(outputs, check_order_name(order)) if n.op.computes]
    order = check_list(order, f"{who}: order", PlanError)
    if not all(isinstance(n, Node) for n in order):
        raise PlanError(f"{who}: order must be a list of Nodes")
    computed = [n for n in topo_order(outputs) if n.op.computes]
    order = first_computations(order)
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


def _ragged(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(row, j)`` for every ``j < lengths[row]``, row by row."""
    lengths = np.asarray(lengths, np.int64)
    row = np.repeat(np.arange(len(lengths)), lengths)
    return row, np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)


@dataclass
class Problem:
    """Checkmate's program for ``order`` as ``min c x`` with ``lo <= A x <= hi``, ``lb <= x <= ub``.

    Stage ``T`` computes the new nodes ``first[T] .. last[T]`` of the order (one per stage in the
    paper and in the integer program; a block of them when the relaxation coarsens the stages).
    Variables: ``R[T, i]`` (``i <= last[T]``) at ``r0[T] + i``, ``S[T, i]`` (``i < first[T]``) at
    ``s0[T] + i``, ``U[T, k]`` at ``u0 + r0[T] + k``, then one ``F`` per stage and freeable edge."""

    order: list[Node]
    inputs: list[list[int]]   #: positions of each node's distinct computed inputs
    size: np.ndarray          #: bytes of each node
    cost: np.ndarray          #: cost of computing each node
    work: np.ndarray          #: bytes of each node's workspace, held while it runs
    inplace: list[list[int]]  #: positions of the inputs each node may overwrite (same size)
    outputs: np.ndarray       #: positions of the graph outputs
    first: np.ndarray         #: first new node of each stage
    last: np.ndarray          #: last new node of each stage
    c: np.ndarray
    A: object                 #: scipy.sparse CSR matrix
    lo: np.ndarray
    hi: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    r0: np.ndarray
    s0: np.ndarray
    u0: int
    p0: int                   #: first P variable (continuous, like U), after the F variables

    def matrices(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``(R, S)`` matrices (stages x nodes) of a solution vector ``x``."""
        m, n = len(self.first), len(self.order)
        R, S = np.zeros((m, n)), np.zeros((m, n))
        T, i = _ragged(self.last + 1)
        R[T, i] = x[self.r0[T] + i]
        T, i = _ragged(self.first)
        S[T, i] = x[self.s0[T] + i]
        return R, S


def build_problem(outputs: Sequence[Node], budget: float, cost: Callable[[Node], float],
                  order: Sequence[Node] | None, stages: int | None = None) -> Problem:
    """Checkmate's constraints for ``outputs`` in ``order``, built with numpy index arrays, with
    ``stages`` stages (default: one per computed node) that split the order into equal blocks."""
    from scipy.sparse import coo_matrix  # imported here: only these solvers need it

    order = fixed_order(outputs, order)
    n = len(order)
    m = n if stages is None else max(1, min(n, int(stages)))
    first = (np.arange(m) * n) // m
    last = np.append(first[1:], n) - 1
    stage_of = np.repeat(np.arange(m), last - first + 1)
    pos = {v: i for i, v in enumerate(order)}
    inputs = [[pos[x] for x in distinct_inputs(v) if x in pos] for v in order]
    size = np.array([float(v.nbytes) for v in order]) / budget
    work = np.array([float(workspace_of(v)) for v in order]) / budget
    is_out = np.zeros(n, bool)
    is_out[[pos[o] for o in outputs if o in pos]] = True
    inplace = [[pos[x] for x in inplace_candidates(v) if x in pos and not is_out[pos[x]]]
               for v in order]
    src = np.array([i for k in range(n) for i in inputs[k]], np.int64)
    dst = np.array([k for k in range(n) for _ in inputs[k]], np.int64)
    r0 = np.cumsum(last + 1) - (last + 1)
    nr = int((last + 1).sum())
    s0 = nr + np.cumsum(first) - first
    u0 = nr + int(first.sum())
    f0 = u0 + nr
    freeable = np.flatnonzero(~is_out[src])   # edges whose source may be freed
    Fe, FT = _ragged(m - stage_of[dst[freeable]])
    fe = freeable[Fe]                         # F variable -> (stage FT, edge fe)
    FT = FT + stage_of[dst[fe]]
    fv = f0 + np.arange(len(fe))
    fbase = np.zeros(len(src), np.int64)      # F[T, e] at fbase[e] + T
    fbase[freeable] = f0 + np.cumsum(m - stage_of[dst[freeable]]) - (m - stage_of[dst[freeable]]) \
        - stage_of[dst[freeable]]
    p0 = f0 + len(fe)                         # P[T, k] (in place): one per stage and candidate op
    pk = np.array([k for k in range(n) if inplace[k]], np.int64)
    Pk, PT = _ragged(m - stage_of[pk])
    pk, PT = pk[Pk], PT + stage_of[pk[Pk]]
    pv = p0 + np.arange(len(pk))
    nvar = p0 + len(pk)

    def R(T, i):
        return r0[T] + i

    def S(T, i):
        return s0[T] + i

    rows: list[tuple[np.ndarray, ...]] = []   # (row, col, value) blocks
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []
    nrow = 0

    def add(cols: Sequence[np.ndarray], vals: Sequence[float | np.ndarray], a: float, b: float):
        nonlocal nrow
        r = nrow + np.arange(len(cols[0]))
        for col, val in zip(cols, vals):
            rows.append((r, col, np.broadcast_to(np.asarray(val, float), r.shape)))
        lo.append(np.full(len(r), a))
        hi.append(np.full(len(r), b))
        nrow += len(r)

    T, i = _ragged(first)
    add([R(T, i), S(T, i)], [1, 1], -np.inf, 1)                    # not both computed and held
    e, T = _ragged(m - stage_of[dst])                              # (stage, edge), dst by then
    T = T + stage_of[dst[e]]
    old = src[e] < first[T]                                        # inputs from earlier blocks
    e, T = e[old], T[old]
    add([R(T, dst[e]), R(T, src[e]), S(T, src[e])], [1, -1, -1], -np.inf, 0)  # inputs present
    T, i = _ragged(first[:-1])                                     # held next: held or computed
    add([S(T + 1, i), R(T, i), S(T, i)], [1, -1, -1], -np.inf, 0)
    add([fv, R(FT, dst[fe])], [1, -1], -np.inf, 0)                 # freed after a consumer ran
    carry = FT < m - 1
    add([fv[carry], S(FT[carry] + 1, src[fe[carry]])], [1, 1], -np.inf, 1)  # ... not carried
    pa, pb = _later_consumers(src, dst)                            # ... nor read later this stage
    keep = ~is_out[src[pa]]
    pa, pb = pa[keep], pb[keep]
    k, T = _ragged(m - stage_of[dst[pb]])
    pa, pb, T = pa[k], pb[k], T + stage_of[dst[pb[k]]]
    add([fbase[pa] + T, R(T, dst[pb])], [1, 1], -np.inf, 1)
    edge_of = {(int(a), int(b)): e for e, (a, b) in enumerate(zip(src, dst))}
    if len(pk):                                    # P[T, k] <= sum of its candidates' F[T, i, k]
        p_row = nrow + np.arange(len(pk))
        add([pv], [1], -np.inf, 0)
        cells = [(r, fbase[edge_of[i, int(k)]] + T) for r, k, T in zip(p_row, pk, PT)
                 for i in inplace[int(k)]]
        rows.append((np.array([c[0] for c in cells]), np.array([c[1] for c in cells]),
                     -np.ones(len(cells))))
    u_first = nrow                                                 # U[T, 0] = held + R[T, 0]
    add([u0 + R(np.arange(m), 0), R(np.arange(m), 0)], [1, -(size[0] + work[0])], 0, 0)
    T, i = _ragged(first)
    rows.append((u_first + T, S(T, i), -size[i]))
    T, k = _ragged(last + 1)                                       # U[T, k], k >= 1
    T, k = T[k > 0], k[k > 0]
    row_of = np.full(nr, -1, np.int64)
    row_of[R(T, k)] = nrow + np.arange(len(T))
    add([u0 + R(T, k), u0 + R(T, k - 1), R(T, k), R(T, k - 1)],
        [1, -1, -(size[k] + work[k]), work[k - 1]], 0, 0)          # a workspace: its step only
    inside = dst[fe] < last[FT]                                    # freed before the stage ends
    rows.append((row_of[R(FT[inside], dst[fe[inside]] + 1)], fv[inside], size[src[fe[inside]]]))
    if len(pk):   # in place: k's output takes a dying input's bytes, given back after k
        rows.append((np.where(pk == 0, u_first + PT, row_of[R(PT, pk)]), pv, size[pk]))
        nxt = pk < last[PT]
        rows.append((row_of[R(PT[nxt], pk[nxt] + 1)], pv[nxt], -size[pk[nxt]]))
    A = coo_matrix((np.concatenate([r[2] for r in rows]),
                    (np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows]))),
                   shape=(nrow, nvar)).tocsr()
    lb, ub = np.zeros(nvar), np.ones(nvar)
    lb[R(stage_of, np.arange(n))] = 1                              # stage T computes its block
    T, i = _ragged(first)
    lb[S(T[is_out[i]], i[is_out[i]])] = 1                          # outputs held to the end
    costs = np.array([float(cost(v)) for v in order])
    c = np.zeros(nvar)
    T, i = _ragged(last + 1)
    c[R(T, i)] = costs[i]
    return Problem(order, inputs, size * budget, costs, work * budget, inplace,
                   np.flatnonzero(is_out), first, last, c, A, np.concatenate(lo), np.concatenate(hi),
                   lb, ub, r0, s0, u0, p0)


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


def check_bytes_budget(outputs: Sequence[Node], budget: float,
                 order: Sequence[Node] | str | None = None) -> None:
    """Raise :class:`~memlab.errors.BudgetError` when ``budget`` is below :func:`minimum_budget`."""
    floor = minimum_budget(outputs, order)
    if not budget >= floor:
        raise BudgetError(f"a budget of {budget:g} bytes is too small: the minimum is {floor} bytes "
                          f"(an op's inputs, its output and the graph outputs held together)")


def checked_arguments(who: str, outputs: Sequence[Node], budget: float,
                      cost: Callable[[Node], float] | None, order: Sequence[Node] | str | None
                      ) -> tuple[list[Node], Callable[[Node], float], list[Node]]:
    """The arguments both Checkmate solvers take, validated: the training graph's outputs, the cost
    of a node (default 1 per op) and the fixed order; :class:`BudgetError` naming the minimum when
    ``budget`` is too small."""
    outputs = training_outputs(outputs, who)
    check_number(budget, f"{who}: budget (bytes)", low=0, error=BudgetError)
    cost = (lambda v: 1.0) if cost is None else \
        check_callable(cost, f"{who}: cost (a function of a node)", PlanError)
    order = fixed_order(outputs, order, who)
    check_bytes_budget(outputs, budget, order)
    return outputs, cost, order


def result(problem: Problem, outputs: Sequence[Node], R: np.ndarray, S: np.ndarray,
           seconds: float, optimal: bool, bound: float) -> RematResult:
    """The :class:`RematResult` of 0/1 matrices ``R`` and ``S`` (see :class:`Problem`)."""
    order, n = problem.order, len(problem.order)
    stages = [[order[i] for i in np.flatnonzero(row > 0.5)] for row in R]
    computed = sum(len(s) for s in stages)
    forward = set(topo_order(outputs[0]))
    held = np.flatnonzero((S > 0.5).any(axis=0))
    keep = {order[i] for i in held if order[i] in forward}
    cost = float(((R > 0.5) * problem.cost[None, :]).sum())
    return RematResult(keep, cost, computed - n, stages, seconds, optimal, bound)


#: integer programs solved in this process, by their exact data (the last :data:`_SOLVED_KEPT`):
#: the same program, asked again (a budget of a trade-off curve that a heuristic's peak already
#: asked, a budget search), returns the solver's answer and its solving time without solving it
#: again
_SOLVED: dict[bytes, tuple[object, float]] = {}
_SOLVED_KEPT = 64


def _program_key(p: Problem, integrality: np.ndarray, time_limit: float) -> bytes:
    """The exact data of the integer program (objective, constraint matrix and bounds, which
    variables are integers, the time limit): equal keys, equal programs."""
    import hashlib

    A = p.A.tocsr()
    h = hashlib.sha256()
    for arr in (p.c, A.data, A.indices, A.indptr, np.array(A.shape), p.lo, p.hi, p.lb, p.ub,
                integrality, np.array([time_limit])):
        a = np.ascontiguousarray(arr)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(a.tobytes())
    return h.digest()


def optimal_rematerialization(outputs: Sequence[Node], budget: float,
                              cost: Callable[[Node], float] | None = None,
                              order: Sequence[Node] | str | None = None,
                              time_limit: float = TIME_LIMIT) -> RematResult:
    """The cheapest schedule of ``outputs`` (loss, gradients) holding at most ``budget`` bytes.

    Optimal among the schedules that compute each node for the first time in ``order``, as in
    Checkmate, which solves for a fixed order: by default the memory-aware order of the planners
    (:func:`~memlab.memory.order.memory_order`); a method name of it (``"dfs"``: depth-first) or
    an explicit order otherwise. Another order can do better. After ``time_limit`` seconds the
    solver stops with the best schedule found: ``result.optimal`` says whether it proved it
    optimal, and ``result.bound`` is its lower bound on the optimum.

    Raises :class:`~memlab.errors.BudgetError` with the least budget any schedule needs (the largest
    op's inputs and output together) when ``budget`` is below it, or when the solver proves the
    budget infeasible; :class:`~memlab.errors.PlanError` when it finds no schedule in time, and
    above :data:`MAX_NODES` computed nodes (use :func:`~memlab.checkpoint.remat_lp.rounded_rematerialization`).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    outputs, cost, order = checked_arguments("optimal_rematerialization", outputs, budget, cost,
                                             order)
    check_number(time_limit, "optimal_rematerialization: time_limit (seconds)", above=0,
                 error=PlanError)
    n = len(order)
    if n > MAX_NODES:
        raise PlanError(f"optimal_rematerialization: {n} computed nodes, above the limit of "
                        f"{MAX_NODES} (the integer program grows like n^2); "
                        f"rounded_rematerialization solves its relaxation at any size")
    p = build_problem(outputs, budget, cost, order)
    integrality = np.ones(len(p.c))          # all but U, the bytes held, and P, in-place credit
    integrality[p.u0:p.u0 + int(p.r0[-1] + p.last[-1] + 1)] = 0
    integrality[p.p0:] = 0
    key = _program_key(p, integrality, time_limit)
    if key not in _SOLVED:
        t0 = time.perf_counter()
        res = milp(p.c, constraints=LinearConstraint(p.A, p.lo, p.hi), bounds=Bounds(p.lb, p.ub),
                   integrality=integrality, options={"time_limit": time_limit})
        _SOLVED[key] = res, time.perf_counter() - t0
        while len(_SOLVED) > _SOLVED_KEPT:
            del _SOLVED[next(iter(_SOLVED))]
    res, seconds = _SOLVED[key]
    if res.x is None and res.status == 1:
        raise PlanError(f"optimal_rematerialization: no schedule found within time_limit="
                        f"{time_limit:g} s, nor proof that none fits {budget:g} bytes; raise "
                        f"time_limit or use rounded_rematerialization")
    if res.x is None:
        raise BudgetError(f"no schedule fits {budget:g} bytes (the solver says: {res.message}); "
                          f"the minimum for one op at a time is {minimum_budget(outputs, order)} bytes")
    R, S = p.matrices(np.round(res.x))
    bound = getattr(res, "mip_dual_bound", None)
    return result(p, outputs, R, S, seconds, res.status == 0,
                  float(res.fun) if bound is None or res.status == 0 else float(bound))


def minimum_budget(outputs: Sequence[Node], order: Sequence[Node] | str | None = None) -> int:
    """Bytes no schedule in ``order`` (as in :func:`optimal_rematerialization`) can go below: for
    each op, its distinct computed inputs and its output, plus the graph outputs computed before
    it (they are held to the end), and its workspace; less its output's bytes when it may run in
    place over an input (not a graph output) that could die there."""
    outputs = as_list(outputs)
    order = fixed_order(outputs, order)
    pos = {v: i for i, v in enumerate(order)}
    outs = [o for o in outputs if o in pos]
    is_out = set(outs)
    worst = 0
    for k, v in enumerate(order):
        held = {x for x in v.inputs if x in pos} | {o for o in outs if pos[o] < k} | {v}
        credit = v.nbytes if any(x in pos and x not in is_out for x in inplace_candidates(v)) \
            else 0
        worst = max(worst, sum(x.nbytes for x in held) + workspace_of(v) - credit)
    return worst


def optimum_curve(outputs: Sequence[Node], budgets: Iterable[float],
                  order: Sequence[Node] | str | None = None, time_limit: float = TIME_LIMIT
                  ) -> list[tuple[float, int]]:
    """The optimum's trade-off curve (p.33's memory against recomputation, exactly): ``(budget,
    fewest recomputations)`` by :func:`optimal_rematerialization`, for ``budgets`` from the
    largest down, ending at the first one that no schedule in ``order`` fits (no smaller one can
    fit either). Sorted by budget."""
    outputs = training_outputs(outputs, "optimum_curve")
    order = fixed_order(outputs, order, "optimum_curve")
    budgets = check_numbers(budgets, "optimum_curve: budgets (bytes)", low=0, error=PlanError,
                            nonempty=True)
    low = minimum_budget(outputs, order)
    curve = []
    for b in sorted(budgets, reverse=True):
        if b < low:
            break
        try:
            result = optimal_rematerialization(outputs, b, order=order, time_limit=time_limit)
        except BudgetError:
            break
        curve.append((b, result.recomputations))
    return curve[::-1]

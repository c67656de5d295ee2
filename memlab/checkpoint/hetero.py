"""Heterogeneous chains: per-step costs and per-value sizes under a memory budget (scheduling slides, "the
scheduling problem": application parameters x_i, wf_i, wb_i; the dynamic program of rotor,
Beaumont, Eyraud-Dubois, Herrmann, Joly and Shilova 2019, on our slot model).

``sizes[i]`` is the memory of ``x_i`` and of ``y_i`` (a gradient has its value's shape), in whole
units (say KB); ``forward_costs[i]`` is the time of ``F_i``, ``backward_costs[i]`` of ``B_i``.
Memory held is the sum of the sizes of held values, counted after each action as in
:func:`~memlab.checkpoint.chain.simulate`. The adjoint ``y_{l+1}`` is implicit and weighs 0.

The dynamic program (:class:`HeteroPlanner`) splits the chain into parts ``(s, e)``: holding
``x_s`` and ``y_{e+1}``, produce ``y_s`` (table ``C``) or, letting ``x_s`` go, some ``y_k`` with
``k > s`` (table ``D``: the caller recomputes what lies below ``k``). ``C`` with ``D(s, e, s + 1)``
alone is not enough: on sizes [3, 2, 3, 3, 2, 2], forward costs [1, 1, 2, 2, 1] and budget 9 it
finds 14 where the best schedule takes 13, by advancing ``x_1`` up to ``x_3`` overwriting it, so
that only ``y_3`` comes back and ``x_1``, ``x_2`` are recomputed from ``x_0``. Every table is
computed for every budget at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..plaindata import register as _register_plain
from ..errors import BudgetError, ScheduleError, check_numbers
from .chain import Action, Backward, Forward, Free


@dataclass
class HeteroChain:
    """A chain with ``sizes[0..l]`` (units), ``forward_costs[0..l-1]`` and ``backward_costs[0..l]``;
    checked when built: the lengths must agree, sizes be whole units >= 0 and costs >= 0."""

    sizes: list[int]
    forward_costs: list[float]
    backward_costs: list[float]

    def __post_init__(self) -> None:
        fwd = check_numbers(self.forward_costs, "HeteroChain: forward_costs", 0, ScheduleError,
                            nonempty=True)
        l = len(fwd)
        sizes = check_numbers(self.sizes, "HeteroChain: sizes", 0, ScheduleError)
        bwd = check_numbers(self.backward_costs, "HeteroChain: backward_costs", 0, ScheduleError)
        if len(sizes) != l + 1:
            raise ScheduleError(f"HeteroChain: sizes needs l + 1 = {l + 1} entries (x0..x{l}) for "
                                f"{l} forward_costs, got {len(sizes)}")
        if len(bwd) != l + 1:
            raise ScheduleError(f"HeteroChain: backward_costs needs l + 1 = {l + 1} entries "
                                f"(B0..B{l}) for {l} forward_costs, got {len(bwd)}")
        if any(int(s) != s for s in sizes):
            raise ScheduleError("HeteroChain: sizes must be whole units (integers); scale them, "
                                "e.g. to KB")
        self.sizes, self.forward_costs, self.backward_costs = [int(s) for s in sizes], fwd, bwd

    @property
    def l(self) -> int:
        """Number of forward steps."""
        return len(self.forward_costs)

    def to_plain(self) -> dict:
        """The chain as plain data (lists of numbers); :meth:`from_plain` rebuilds it."""
        return {"sizes": list(self.sizes), "forward_costs": list(self.forward_costs),
                "backward_costs": list(self.backward_costs)}

    @classmethod
    def from_plain(cls, data: dict) -> "HeteroChain":
        """The chain :meth:`to_plain` wrote, rebuilt (and checked) by the constructor."""
        if not isinstance(data, dict) or set(data) != {"sizes", "forward_costs", "backward_costs"}:
            raise ScheduleError(f"a plain chain is a dict with 'sizes', 'forward_costs' and "
                                f"'backward_costs', not {str(data)[:80]}")
        return cls(list(data["sizes"]), list(data["forward_costs"]), list(data["backward_costs"]))

    def y_size(self, i: int) -> int:
        """Size of ``y_i`` (``y_{l+1}``, the implicit loss seed, weighs nothing)."""
        return self.sizes[i] if i <= self.l else 0


def hetero_chain(sizes: Sequence[int], forward_costs: Sequence[float],
                 backward_costs: Sequence[float] | None = None) -> HeteroChain:
    """Build a :class:`HeteroChain` (``backward_costs`` default: twice the forward's, and 0 for
    the last step)."""
    if backward_costs is None:
        fwd = check_numbers(forward_costs, "hetero_chain: forward_costs", 0, ScheduleError)
        backward_costs = [2 * c for c in fwd] + [0.0]
    return HeteroChain(sizes, forward_costs, backward_costs)


@dataclass
class HeteroSchedule:
    """The optimum for a budget: ``actions``, ``forward_time`` (forward steps' costs, recomputations
    included), ``time`` (plus every backward step) and ``peak`` memory in units."""

    chain: HeteroChain
    budget: int
    actions: list[Action]
    forward_time: float
    time: float
    peak: int


class HeteroPlanner:
    """The dynamic program for one chain, for every budget ``0..max_budget`` at once.

    One table, ``table[s, e]``, an array with a row per ``k = s..e+1`` (row ``k - s``) and a
    column per budget ``m``; ``C[s, e]`` is its first row. Every entry is a part of the chain that starts holding ``x_s`` and ``y_{e+1}`` (and
    nothing else of ``s..e``) and must never hold more than ``m`` units:

    * row ``k = s`` is ``C(s, e, m)``: the least forward time to end holding ``y_s`` alone
      (``B_s`` consumes ``x_s``);
    * row ``k > s`` is ``D(s, e, k, m)``: the least forward time to end holding ``y_k`` alone,
      ``x_s`` let go, so that the caller recomputes ``x_{s+1} .. x_{k-1}`` from a checkpoint
      below ``s`` (``D(s, e, e + 1)`` just frees ``x_s``). With uneven sizes this pays: a big
      checkpoint is overwritten while the chain advances and recomputed later.

    Both are ``inf`` when ``m < sizes[s] + size(y_{e+1})``. A part runs ``B_s`` (``s = e``,
    ``k = s``), or overwrites ``x_s`` (``k > s``: ``F_s`` without keeping, then
    ``D(s + 1, e, k)``, or ``C(s + 1, e)`` when ``k = s + 1``), or keeps ``x_s`` and advances to
    some ``x_j`` (``s < j <= e``), dropping the values in between, and then solves

        right part ``(j, e)`` ending at ``y_k2`` with ``m - sizes[s]`` units  (``j <= k2 <= e``)
        left part ``(s, k2 - 1)`` ending at ``y_k`` with ``m`` units          (``k <= k2``)

    which costs ``forward_costs[s] + ... + forward_costs[j - 1]`` plus both parts, while
    ``sizes[s] + max(sizes[s+1..j]) + size(y_{e+1}) <= m``. The best right part for each ``k2``
    (over ``j``) does not depend on ``k``, so it is found once per part: O(l^3) array
    operations in all. Optimality is not proven, only checked: at every budget, the tables equal
    an exhaustive search over every schedule (a Dijkstra over held values) on random chains with
    integer sizes and costs: 300 of length ``l <= 8`` (sizes 0..8, costs 0..3), 300 of
    ``l <= 7`` (sizes 1..8, costs 1..5), 40 of ``l`` 9 or 10 (sizes 1..6, costs 0..4);
    tests/checkpoint/test_hetero_levels.py repeats it for ``l <= 6``, sizes 1..4, costs 1..5.
    """

    def __init__(self, chain: HeteroChain, max_budget: int) -> None:
        self.chain, self.M = chain, int(max_budget)
        self._prefix = np.concatenate(([0.0], np.cumsum(chain.forward_costs)))
        self._m = np.arange(self.M + 1)
        self.table: dict[tuple[int, int], np.ndarray] = {}
        # how each entry was reached: 0 the base case, -1 F_s overwriting x_s, k2 an advance whose
        # right part ends at y_k2; _j[s, e][k2 - s - 1, m] is the j of that advance
        self._how: dict[tuple[int, int], np.ndarray] = {}
        self._j: dict[tuple[int, int], np.ndarray] = {}
        for length in range(chain.l + 1):
            for s in range(chain.l - length + 1):
                self._fill(s, s + length)
        self.C = {se: t[0] for se, t in self.table.items()}  # C(s, e) for every budget

    def _fill(self, s: int, e: int) -> None:
        a, y_end, M = self.chain.sizes, self.chain.y_size(e + 1), self.M
        n = e - s + 2  # rows k = s..e+1
        best = np.full((n, M + 1), np.inf)
        how = np.zeros((n, M + 1), np.int16)
        best[n - 1] = 0.0  # D(s, e, e + 1): let x_s go
        if s == e:
            best[0] = 0.0  # C(s, s): run B_s
        else:
            # F_s overwrites x_s: k = s+1..e from (s + 1, e), whose rows start at k = s + 1
            best[1:n - 1] = self.chain.forward_costs[s] + self.table[s + 1, e][:n - 2]
            how[1:n - 1] = -1
            right, right_j = self._right_parts(s, e)
            for k2 in range(s + 1, e + 1):  # then the left part (s, k2 - 1), rows k = s..k2
                total = right[k2 - s - 1] + self.table[s, k2 - 1]
                rows, rows_how = best[:k2 - s + 1], how[:k2 - s + 1]
                better = total < rows
                rows[better], rows_how[better] = total[better], k2
            self._j[s, e] = right_j
        best[:, self._m < a[s] + y_end] = np.inf
        self.table[s, e], self._how[s, e] = best, how

    def _right_parts(self, s: int, e: int) -> tuple[np.ndarray, np.ndarray]:
        """For every ``k2 = s+1..e`` and budget: the least cost of advancing from ``x_s`` (kept)
        to some ``x_j`` and solving ``(j, e)`` down to ``y_k2`` with ``sizes[s]`` fewer units,
        and that ``j``."""
        a, y_end, M = self.chain.sizes, self.chain.y_size(e + 1), self.M
        right = np.full((e - s, M + 1), np.inf)
        right_j = np.zeros((e - s, M + 1), np.int16)
        widest = 0
        for j in range(s + 1, e + 1):
            widest = max(widest, a[j])  # held while advancing: x_s, the newest value, y_{e+1}
            cap = a[s] + widest + y_end
            if cap > M:  # no budget fits this advance, nor any longer one
                break
            total = np.full((e - j + 1, M + 1), np.inf)  # rows k2 = j..e, budget shifted by a_s
            total[:, a[s]:] = self.table[j, e][:e - j + 1, :M + 1 - a[s]]
            total += self._prefix[j] - self._prefix[s]
            total[:, :cap] = np.inf
            rows, rows_j = right[j - s - 1:], right_j[j - s - 1:]
            better = total < rows
            rows[better], rows_j[better] = total[better], j
        return right, right_j

    def minimum_budget(self) -> int | None:
        """The least budget with a schedule (None if more than ``max_budget`` is needed)."""
        ok = np.flatnonzero(np.isfinite(self.C[0, self.chain.l]))
        return int(ok[0]) if ok.size else None

    def schedule(self, budget: int) -> HeteroSchedule:
        """The optimal schedule within ``budget`` units, read back from the tables."""
        if not 0 <= budget <= self.M:
            raise BudgetError(f"budget {budget} is outside 0..{self.M} (the planner's max_budget)")
        chain, a = self.chain, self.chain.sizes
        if not np.isfinite(self.C[0, chain.l][budget]):
            need = self.minimum_budget()
            raise BudgetError(f"a budget of {budget} units is too small for this chain: "
                              f"the minimum is {need if need is not None else f'above {self.M}'}")
        actions: list[Action] = []
        stack = [(0, chain.l, 0, budget)]  # parts (s, e, k, m): C when k == s, else D
        while stack:  # a right part is emitted before its left part
            s, e, k, m = stack.pop()
            if k == e + 1:
                actions.append(Free(f"x{s}"))
                continue
            if s == e:
                actions.append(Backward(s))
                continue
            how = int(self._how[s, e][k - s, m])
            if how == -1:
                actions.append(Forward(s, False))
                stack.append((s + 1, e, k, m))
                continue
            j = int(self._j[s, e][how - s - 1, m])
            actions.append(Forward(s, True))
            actions.extend(Forward(q, False) for q in range(s + 1, j))
            stack.append((s, how - 1, k, m))
            stack.append((j, e, how, m - a[s]))
        fwd = float(self.C[0, chain.l][budget])
        peak = replay_memory(actions, chain)
        return HeteroSchedule(chain, budget, actions, fwd, fwd + sum(chain.backward_costs), peak)


def replay_memory(actions: Sequence[Action], chain: HeteroChain) -> int:
    """Peak memory (units) of ``actions`` on ``chain``: an independent replay of held values."""
    held = {("x", 0): chain.sizes[0]}
    peak = chain.sizes[0]
    for a in actions:
        if isinstance(a, Forward):
            if ("x", a.i) not in held or not 0 <= a.i < chain.l:
                raise ScheduleError(f"{a}: needs x{a.i}, which is not held (F_i runs for i < {chain.l})")
            if not a.keep:
                del held["x", a.i]
            held["x", a.i + 1] = chain.sizes[a.i + 1]
        elif isinstance(a, Backward):
            if ("x", a.i) not in held or (a.i < chain.l and ("y", a.i + 1) not in held):
                raise ScheduleError(f"{a}: needs x{a.i} and y{a.i + 1}, which are not both held")
            held.pop(("x", a.i))
            held.pop(("y", a.i + 1), None)
            held["y", a.i] = chain.sizes[a.i]
        elif isinstance(a, Free):
            v = str(a.value)
            key = (v[0], int(v[1:])) if len(v) > 1 and v[0] in "xy" and v[1:].isdigit() else None
            if key is None or held.pop(key, None) is None:
                raise ScheduleError(f"{a}: frees {a.value}, which is not held")
        peak = max(peak, sum(held.values()))
    return peak


def checkpoints_let_go(actions: Sequence[Action]) -> list[int]:
    """The checkpoints a schedule lets go: each ``i`` whose ``x_i`` was held while a backward step
    ran and then went without its own ``B_i`` (overwritten by ``F_i``, or freed), so that it is
    computed again from a checkpoint below (the ``D`` move of :class:`HeteroPlanner`)."""
    held: dict[int, bool] = {0: False}  # x_i held -> whether a backward step ran meanwhile
    out = []
    for a in actions:
        if isinstance(a, Backward):
            held.pop(a.i, None)
            held = dict.fromkeys(held, True)
            continue
        if isinstance(a, Forward) and not a.keep or isinstance(a, Free) and a.value[0] == "x":
            i = a.i if isinstance(a, Forward) else int(a.value[1:])
            if held.pop(i, False):
                out.append(i)
        if isinstance(a, Forward):
            held[a.i + 1] = False
    return out


def optimal_hetero(chain: HeteroChain, budget: int) -> HeteroSchedule:
    """The least-time schedule of ``chain`` within ``budget`` memory units (:class:`HeteroPlanner`)."""
    if not isinstance(chain, HeteroChain):
        raise ScheduleError(f"optimal_hetero: chain must be a HeteroChain (see hetero_chain), "
                            f"got {type(chain).__name__} {chain!r:.60}")
    if not isinstance(budget, (int, np.integer)) or isinstance(budget, bool) or budget < 0:
        raise BudgetError(f"budget must be a whole number of units >= 0, got {budget!r}")
    upper = sum(chain.sizes) + max(chain.sizes)  # more than store-all ever holds
    return HeteroPlanner(chain, max(int(budget), upper)).schedule(int(budget))


def evaluate(actions: Sequence[Action], chain: HeteroChain) -> tuple[int, float]:
    """Peak memory (units) and forward time of any schedule on ``chain`` (a homogeneous strategy's
    schedule included), replayed independently of the dynamic program."""
    return replay_memory(actions, chain), sum(chain.forward_costs[a.i] for a in actions
                                               if isinstance(a, Forward))


def cnn_like_chain(l: int = 12, seed: int = 0) -> HeteroChain:
    """A chain shaped like a small CNN: activations halve in size every few layers (big early, small
    late) while the cost per step stays about the same; backward steps cost twice the forward."""
    rng = np.random.default_rng(seed)
    sizes = [max(1, int(round(16 / 2 ** (3 * i // l)))) for i in range(l + 1)]
    fwd = [float(rng.integers(2, 5)) for _ in range(l)]
    return hetero_chain(sizes, fwd)


def compare_with_homogeneous(chain: HeteroChain, budgets: Sequence[int]) -> list[dict[str, object]]:
    """For each budget: the heterogeneous optimum against the homogeneous schedules that fit (the
    slot optimum for every slot count, recompute all, Revolve for every snapshot count, sqrt(l)),
    each replayed on ``chain`` with its real sizes and costs. ``homogeneous`` and ``which`` are the
    fastest of them; ``fitting`` lists every one that fits, as ``(forward time, name)``, fastest
    first."""
    from .chain_strategies import optimal, recompute_all, revolve, sqrt_schedule  # the same package

    l = chain.l
    # named so as not to be confused with the heterogeneous optimum: lesson 07's optimum for M slots
    pool = [(f"slot optimum, {m} slots", optimal(l, m)) for m in range(3 if l > 1 else 2, l + 2)]
    pool += [(s.name, s) for s in [recompute_all(l)] + [revolve(l, c) for c in range(1, l + 1)]
             + [sqrt_schedule(l)]]
    scored = [(name, *evaluate(s.actions, chain)) for name, s in pool]
    planner = HeteroPlanner(chain, max(max(budgets), sum(chain.sizes) + max(chain.sizes)))
    rows = []
    for b in budgets:
        fits = sorted((t, name) for name, p, t in scored if p <= b)
        best = fits[0] if fits else None
        opt = planner.schedule(b) if np.isfinite(planner.C[0, l][b]) else None
        rows.append({"budget": b,
                     "optimum": None if opt is None else opt.forward_time,
                     "homogeneous": None if best is None else best[0],
                     "which": None if best is None else best[1],
                     "fitting": fits})
    return rows


_register_plain("hetero_chain", HeteroChain, HeteroChain.to_plain, HeteroChain.from_plain)

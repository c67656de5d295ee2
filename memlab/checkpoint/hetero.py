"""Heterogeneous chains: per-step costs and per-value sizes under a memory budget (seed 002, "the
scheduling problem": application parameters x_i, wf_i, wb_i; the dynamic program of rotor,
Beaumont, Eyraud-Dubois, Herrmann, Joly and Shilova 2019, on our slot model).

``sizes[i]`` is the memory of ``x_i`` and of ``y_i`` (a gradient has its value's shape), in whole
units (say KB); ``forward_costs[i]`` is the time of ``F_i``, ``backward_costs[i]`` of ``B_i``.
Memory held is the sum of the sizes of held values, counted after each action as in
:func:`~memlab.checkpoint.chain.simulate`. The adjoint ``y_{l+1}`` is implicit and weighs 0.

``C(s, e, m)``: the least forward time to produce ``y_s`` holding ``x_s`` and ``y_{e+1}`` within
``m`` units. Either ``s = e`` (run ``B_s``) or advance from ``x_s`` to some ``x_j`` keeping ``x_s``,
solve ``(j, e)`` with ``m - sizes[s]`` units, then ``(s, j - 1)`` with ``m``. With uneven sizes it
can pay to let a checkpoint go and recompute it from the one below, so a second table ``E`` allows
that (see :class:`HeteroPlanner`). Both are computed for every budget at once, one numpy vector per
``(s, e)``: O(l^3) vector operations.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

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
    """The dynamic program for one chain, for every budget up to ``max_budget`` at once.

    Two tables, one vector over budgets per ``(s, e)``: ``C`` produces ``y_s`` (``x_s`` is consumed
    by ``B_s``); ``E`` produces only ``y_{s+1}`` and lets ``x_s`` go, so that a big checkpoint can
    be dropped and recomputed from the one below it (with uneven sizes this can pay; with equal
    sizes it never does).
    """

    def __init__(self, chain: HeteroChain, max_budget: int) -> None:
        self.chain, self.M = chain, int(max_budget)
        l, a = chain.l, chain.sizes
        self._prefix = np.concatenate(([0.0], np.cumsum(chain.forward_costs)))
        self._m = np.arange(self.M + 1)
        self.C: dict[tuple[int, int], np.ndarray] = {}
        self.E: dict[tuple[int, int], np.ndarray] = {}
        self.choice: dict[tuple[str, int, int], np.ndarray] = {}
        for length in range(0, l + 1):
            for s in range(0, l - length + 1):
                e = s + length
                fits = self._m >= a[s] + chain.y_size(e + 1)
                if s == e:  # B_s, or (for E) just let x_s go
                    self.C[s, e] = self.E[s, e] = np.where(fits, 0.0, np.inf)
                    continue
                for table in ("C", "E"):
                    self._fill(table, s, e)

    def _shift(self, v: np.ndarray, by: int) -> np.ndarray:
        """``out[m] = v[m - by]``: a sub-problem that has ``by`` fewer units."""
        out = np.full(self.M + 1, np.inf)
        if by <= self.M:
            out[by:] = v[:self.M + 1 - by]
        return out

    def _fill(self, table: str, s: int, e: int) -> None:
        a, chain = self.chain.sizes, self.chain
        ends = self.C if table == "C" else self.E  # the left part's table
        best = np.full(self.M + 1, np.inf)
        arg = np.zeros(self.M + 1, np.int32)  # j (right part C) or -j (right part E); 0: drop x_s
        if table == "E":  # advance once overwriting x_s, then reverse s+1..e
            best = self.chain.forward_costs[s] + self.C[s + 1, e]
        widest = 0
        for j in range(s + 1, e + 1):
            widest = max(widest, a[j])  # held while advancing: x_s, the advanced value, y_{e+1}
            cap = self._m < a[s] + widest + chain.y_size(e + 1)
            adv = self._prefix[j] - self._prefix[s]
            options = [(j, self._shift(self.C[j, e], a[s]) + ends[s, j - 1])]
            if j < e:  # the right part lets x_j go: the left part recomputes it
                options.append((-j, self._shift(self.E[j, e], a[s]) + ends[s, j]))
            for code, total in options:
                total = adv + total
                total[cap] = np.inf
                better = total < best
                best[better], arg[better] = total[better], code
        (self.C if table == "C" else self.E)[s, e] = best
        self.choice[table, s, e] = arg

    def minimum_budget(self) -> int | None:
        """The least budget with a schedule (None if more than ``max_budget`` is needed)."""
        ok = np.flatnonzero(np.isfinite(self.C[0, self.chain.l]))
        return int(ok[0]) if ok.size else None

    def schedule(self, budget: int) -> HeteroSchedule:
        """The optimal schedule within ``budget`` units."""
        if not 0 <= budget <= self.M:
            raise BudgetError(f"budget {budget} is outside 0..{self.M} (the planner's max_budget)")
        chain = self.chain
        if not np.isfinite(self.C[0, chain.l][budget]):
            need = self.minimum_budget()
            raise BudgetError(f"a budget of {budget} units is too small for this chain: "
                              f"the minimum is {need if need is not None else f'above {self.M}'}")
        actions: list[Action] = []
        stack = [("C", 0, chain.l, budget)]
        while stack:  # the right part is emitted before the left part
            table, s, e, m = stack.pop()
            if s == e:
                actions.append(Backward(s) if table == "C" else Free(f"x{s}"))
                continue
            code = int(self.choice[table, s, e][m])
            if code == 0:  # E: advance overwriting x_s
                actions.append(Forward(s, False))
                stack.append(("C", s + 1, e, m))
                continue
            j = abs(code)
            actions.append(Forward(s, True))
            actions.extend(Forward(q, False) for q in range(s + 1, j))
            stack.append((table, s, j - 1 if code > 0 else j, m))
            stack.append(("C" if code > 0 else "E", j, e, m - chain.sizes[s]))
        fwd = float(self.C[0, chain.l][budget])
        peak = replay_memory(actions, chain)
        return HeteroSchedule(chain, budget, actions, fwd, fwd + sum(chain.backward_costs), peak)


def replay_memory(actions: Sequence[Action], chain: HeteroChain) -> int:
    """Peak memory (units) of ``actions`` on ``chain``: an independent replay of held values."""
    held = {("x", 0): chain.sizes[0]}
    peak = chain.sizes[0]
    for a in actions:
        if isinstance(a, Forward):
            if ("x", a.i) not in held:
                raise ScheduleError(f"{a}: needs x{a.i}, which is not held")
            if not a.keep:
                del held["x", a.i]
            held["x", a.i + 1] = chain.sizes[a.i + 1]
        elif isinstance(a, Backward):
            held.pop(("x", a.i))
            held.pop(("y", a.i + 1), None)
            held["y", a.i] = chain.sizes[a.i]
        elif isinstance(a, Free):
            held.pop((a.value[0], int(a.value[1:])))
        peak = max(peak, sum(held.values()))
    return peak


def optimal_hetero(chain: HeteroChain, budget: int) -> HeteroSchedule:
    """The least-time schedule of ``chain`` within ``budget`` memory units (rotor's dynamic program)."""
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
    """For each budget: the heterogeneous optimum against the best homogeneous schedule that fits
    (the slot optimum for every slot count, Revolve for every snapshot count, sqrt(l)), each
    replayed on ``chain`` with its real sizes and costs."""
    from .strategies import optimal, revolve, sqrt_schedule  # the same package, one layer

    l = chain.l
    pool = [optimal(l, m) for m in range(3 if l > 1 else 2, l + 2)]
    pool += [revolve(l, c) for c in range(1, l + 1)] + [sqrt_schedule(l)]
    scored = [(s.name, *evaluate(s.actions, chain)) for s in pool]
    planner = HeteroPlanner(chain, max(max(budgets), sum(chain.sizes) + max(chain.sizes)))
    rows = []
    for b in budgets:
        fits = [(t, name, p) for name, p, t in scored if p <= b]
        best = min(fits) if fits else None
        opt = planner.schedule(b) if np.isfinite(planner.C[0, l][b]) else None
        rows.append({"budget": b,
                     "optimum": None if opt is None else opt.forward_time,
                     "homogeneous": None if best is None else best[0],
                     "which": None if best is None else best[1]})
    return rows

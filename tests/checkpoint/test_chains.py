"""Chains: the seed's l = 5 figures, the optimum against exhaustive search, Revolve's closed form."""
from __future__ import annotations

import heapq
from functools import lru_cache
from math import comb

import numpy as np
import pytest
from hypothesis import given, strategies as st

import memlab as ml
from memlab import checkpoint as ck


# --- an exhaustive search over every schedule, written independently of the library -------------
def exhaustive_min_forwards(l: int, budget: int) -> float:
    """Dijkstra over states (held values, next backward step): fewest forward steps to reach y0."""
    start = (frozenset({("x", 0)}), l)
    dist = {start: 0}
    heap = [(0, 0, start)]
    tick = 0
    while heap:
        d, _, (held, nb) = heapq.heappop(heap)
        if d > dist[(held, nb)]:
            continue
        if nb < 0:
            return d
        moves = []
        for kind, i in held:  # forward steps, keeping or overwriting; freeing any value
            if kind == "x" and i < l and ("x", i + 1) not in held:
                moves.append((held | {("x", i + 1)}, nb, 1))
                moves.append(((held - {("x", i)}) | {("x", i + 1)}, nb, 1))
            moves.append((held - {(kind, i)}, nb, 0))
        need = {("x", nb)} | ({("y", nb + 1)} if nb < l else set())
        if need <= held:
            moves.append(((held - need) | {("y", nb)}, nb - 1, 0))
        for h, b, w in moves:
            if len(h) <= budget and dist.get((h, b), 1e18) > d + w:
                dist[(h, b)] = d + w
                tick += 1
                heapq.heappush(heap, (d + w, tick, (h, b)))
    return float("inf")


@pytest.mark.parametrize("l", range(1, 7))
def test_optimal_equals_exhaustive_search(l):
    for budget in range(ck.minimum_budget(l), l + 3):
        want = exhaustive_min_forwards(l, budget) - l
        got = ck.optimal(l, budget)
        assert got.recomputations == want, (l, budget)
        assert got.peak <= budget
    assert exhaustive_min_forwards(l, ck.minimum_budget(l) - 1) == float("inf")


def test_the_seeds_l5_figures():
    assert (ck.store_all(5).peak, ck.store_all(5).recomputations) == (6, 0)
    assert (ck.recompute_all(5).peak, ck.recompute_all(5).recomputations) == (3, 10)
    some = ck.store_some(5, [2])
    assert (some.peak, some.recomputations) == (4, 4)
    assert [ck.optimal(5, m).recomputations for m in (3, 4, 5, 6)] == [6, 2, 1, 0]
    # the slide's hybrid is not optimal at its own peak
    assert ck.optimal(5, some.peak).recomputations < some.recomputations


# --- the plain dynamic program (O(l^2) splits), against the closed form --------------------------
@lru_cache(None)
def dp_with_adjoint(n: int, m: int) -> float:
    if n == 0:
        return 0 if m >= 2 else float("inf")
    if m <= 2:
        return float("inf")
    return min(j + dp_with_adjoint(n - j, m - 1) + dp_with_adjoint(j - 1, m) for j in range(1, n + 1))


@lru_cache(None)
def dp_top(n: int, m: int) -> float:
    if n == 0:
        return 0 if m >= 1 else float("inf")
    if m <= 1:
        return float("inf")
    return min(j + dp_top(n - j, m - 1) + dp_with_adjoint(j - 1, m) for j in range(1, n + 1))


@pytest.mark.parametrize("budget", range(2, 9))
def test_closed_form_equals_the_split_dynamic_program(budget):
    for l in range(1, 70):
        assert ck.optimal_forwards(l, budget) == dp_top(l, budget), (l, budget)
    for l in (1, 2, 7, 33, 69):
        if budget >= ck.minimum_budget(l):
            s = ck.optimal(l, budget)
            assert s.forwards == dp_top(l, budget) == s.cost


def revolve_closed_form(L: int, c: int) -> int:
    """t(L, c) = r L - C(c + r, c + 1), r the smallest with C(c + r, c) >= L (written here again)."""
    r = 0
    while comb(c + r, c) < L:
        r += 1
    return r * L - comb(c + r, c + 1)


@pytest.mark.parametrize("c", range(1, 11))
def test_revolve_advances_follow_the_closed_form(c):
    for l in list(range(1, 60)) + [99, 250, 511, 1000]:
        s = ck.revolve(l, c)
        assert s.advances == revolve_closed_form(l + 1, c) == s.forwards, (l, c)
        assert s.recomputations == s.advances - l
        assert s.peak <= c + 2
        assert ck.optimal(l, c + 2).recomputations <= s.recomputations


def test_revolve_closed_form_equals_its_recursion():
    @lru_cache(None)
    def t(L, c):
        if L <= 1:
            return 0
        if c == 0:
            return float("inf")
        return min(j + t(L - j, c - 1) + t(j, c) for j in range(1, L))
    for c in range(1, 6):
        for L in range(1, 60):
            assert ck.revolve_advances(L, c) == t(L, c)


@given(l=st.integers(1, 40), budget=st.integers(3, 12), drop=st.integers(0, 10**6))
def test_simulate_rejects_a_schedule_missing_any_action(l, budget, drop):
    s = ck.optimal(l, budget)
    k = drop % len(s.actions)
    with pytest.raises(ml.ScheduleError):
        ck.simulate(s.actions[:k] + s.actions[k + 1:], l)


def test_simulate_reports_slots_and_names_bad_actions():
    sim = ck.simulate(ck.store_some(5, [2]).actions, 5)
    assert sim.slots[0] == ("x0",) and sim.slots[-1].count("y0") == 1
    assert max(sum(v is not None for v in row) for row in sim.slots) == sim.peak == 4
    with pytest.raises(ml.ScheduleError, match=r"action 1 \(F2\): needs x2"):
        ck.simulate([ck.Forward(0), ck.Forward(2)], 5)
    with pytest.raises(ml.ScheduleError, match="next backward step is B5"):
        ck.simulate([ck.Backward(3)], 5)
    with pytest.raises(ml.ScheduleError, match="y0 is never computed"):
        ck.simulate([ck.Forward(0, True)], 5)
    with pytest.raises(ml.ScheduleError, match="not a Forward"):
        ck.simulate(["F0"], 5)


@pytest.mark.parametrize("l", [4, 16, 100, 400])
def test_sqrt_and_recursive_memory_shapes(l):
    s = ck.sqrt_schedule(l)
    k = round(l ** 0.5)
    assert s.peak <= 2 * k + 3 and s.recomputations <= l
    r = ck.recursive(l, 2)
    assert r.peak <= 3 * (l.bit_length() + 1)
    assert ck.periodic(l, 1).recomputations == 0


def test_bad_input_is_a_clear_error():
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ml.ScheduleError, match="chain length"):
            ck.store_all(bad)
    with pytest.raises(ml.BudgetError, match="the minimum is 3"):
        ck.optimal(10, 2)
    with pytest.raises(ml.BudgetError, match="the minimum is 2"):
        ck.optimal(1, 1)
    with pytest.raises(ml.ScheduleError, match="x7"):
        ck.store_some(5, [7])
    with pytest.raises(ml.ScheduleError, match="period"):
        ck.periodic(5, 0)
    with pytest.raises(ml.BudgetError, match="snapshot"):
        ck.revolve(5, 0)


def _numpy_backprop(model):
    """The chain's gradients by hand in float32 numpy: an independent route."""
    xs = [model.x0]
    for w in model.weights:
        xs.append(np.tanh(xs[-1] @ w).astype(np.float32))
    y = xs[-1].copy()
    gws = []
    for i in range(model.l - 1, -1, -1):
        d = y * (1 - xs[i + 1] ** 2)
        gws.append(xs[i].T @ d)
        y = d @ model.weights[i].T
    return y, gws[::-1]


@pytest.mark.parametrize("l", [1, 2, 5, 9])
def test_every_strategy_gives_store_alls_gradients_in_its_slots(l):
    from memlab.checkpoint.realchain import mlp_chain, run_schedule
    model = mlp_chain(l, width=6, batch=3, seed=l)
    ref = run_schedule(ck.store_all(l), model)
    y0, gws = _numpy_backprop(model)
    np.testing.assert_allclose(ref.y0, y0, rtol=1e-4, atol=1e-5)
    for a, b in zip(ref.weight_grads, gws):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    schedules = [ck.recompute_all(l), ck.sqrt_schedule(l), ck.recursive(l, 2), ck.revolve(l, 1),
                 ck.revolve(l, 3), ck.store_some(l, range(0, l, 2))]
    schedules += [ck.optimal(l, m) for m in range(ck.minimum_budget(l), l + 2)]
    for s in schedules:
        run = run_schedule(s, model)
        assert np.array_equal(run.y0, ref.y0), s.name          # bit for bit
        assert all(np.array_equal(a, b) for a, b in zip(run.weight_grads, ref.weight_grads))
        assert run.held_bytes == s.peak * model.value_bytes == run.max_live_bytes
        assert run.forwards == l + s.recomputations

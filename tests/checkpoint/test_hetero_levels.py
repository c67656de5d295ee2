"""Heterogeneous chains and several memories: the dynamic programs against exhaustive search."""
from __future__ import annotations

import heapq
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import memlab as ml
from memlab import checkpoint as ck
from memlab.checkpoint.hetero import (checkpoints_let_go, hetero_chain, optimal_hetero,
                                     replay_memory)
from memlab.checkpoint.levels import multilevel_optimal


def dijkstra(start, goal, moves):
    tick = itertools.count()
    dist, heap = {start: 0.0}, [(0.0, next(tick), start)]
    while heap:
        d, _, s = heapq.heappop(heap)
        if d > dist[s]:
            continue
        if goal(s):
            return d
        for t, w in moves(s):
            if dist.get(t, float("inf")) > d + w:
                dist[t] = d + w
                heapq.heappush(heap, (d + w, next(tick), t))
    return float("inf")


def exhaustive_hetero(sizes, fwd, budget):
    """Least forward time over every schedule whose held sizes never exceed ``budget``."""
    l = len(fwd)
    size = lambda v: sizes[v[1]]  # noqa: E731  (x_i and y_i weigh sizes[i])

    def moves(state):
        held, nb = state
        out = []
        for kind, i in held:
            if kind == "x" and i < l and ("x", i + 1) not in held:
                out.append((held | {("x", i + 1)}, fwd[i]))
                out.append(((held - {("x", i)}) | {("x", i + 1)}, fwd[i]))
            out.append((held - {(kind, i)}, 0.0))
        need = {("x", nb)} | ({("y", nb + 1)} if nb < l else set())
        res = [((h, nb), w) for h, w in out]
        if need <= held:
            res.append(((((held - need) | {("y", nb)}), nb - 1), 0.0))
        return [(s, w) for s, w in res if sum(size(v) for v in s[0]) <= budget]

    return dijkstra((frozenset({("x", 0)}), l), lambda s: s[1] < 0, moves)


def replay(sizes, fwd, actions):
    """Peak memory and forward time of a schedule, replayed here: every action needs what it
    reads, and the schedule must end holding y0 alone."""
    l = len(fwd)
    held, peak, time = {("x", 0)}, sizes[0], 0.0
    for a in actions:
        if isinstance(a, ck.Forward):
            assert ("x", a.i) in held and a.i < l, a
            held = (held if a.keep else held - {("x", a.i)}) | {("x", a.i + 1)}
            time += fwd[a.i]
        elif isinstance(a, ck.Backward):
            need = {("x", a.i)} | ({("y", a.i + 1)} if a.i < l else set())
            assert need <= held, a
            held = (held - need) | {("y", a.i)}
        else:
            held = held - {(a.value[0], int(a.value[1:]))}
        peak = max(peak, sum(sizes[i] for _, i in held))
    assert held == {("y", 0)}, held
    return peak, time


def check_against_exhaustive_search(sizes, fwd):
    chain = hetero_chain(sizes, fwd)
    for budget in range(max(sizes) - 1, sum(sizes) + 2):
        want = exhaustive_hetero(sizes, fwd, budget)
        if want == float("inf"):
            with pytest.raises(ml.BudgetError, match="the minimum is"):
                optimal_hetero(chain, budget)
            continue
        got = optimal_hetero(chain, budget)
        assert got.forward_time == want, (sizes, fwd, budget)
        peak, time = replay(sizes, fwd, got.actions)
        assert time == got.forward_time and got.peak == peak <= budget, (sizes, fwd, budget)
        assert replay_memory(got.actions, chain) == peak


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_hetero_dp_equals_exhaustive_search(data):
    l = data.draw(st.integers(1, 6))
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=l + 1, max_size=l + 1))
    fwd = data.draw(st.lists(st.integers(1, 5), min_size=l, max_size=l))
    check_against_exhaustive_search(sizes, fwd)


def test_a_right_part_may_hand_back_a_gradient_far_above_its_start():
    """Keeping x0, advance x1 up to x3 overwriting it: the right part hands back only y3, and
    the left part recomputes x1 and x2 from x0. Two tables (produce y_s, or y_{s+1} and let
    x_s go) miss it and find 14."""
    sizes, fwd = [3, 2, 3, 3, 2, 2], [1, 1, 2, 2, 1]
    F, B = ck.Forward, ck.Backward
    by_hand = [F(0, True), F(1, True), F(2), F(3), F(4, True), B(5), B(4), F(1), F(2), B(3),
               F(0, True), F(1), B(2), F(0, True), B(1), B(0)]
    assert replay(sizes, fwd, by_hand) == (9, 13)
    assert checkpoints_let_go(by_hand) == [1]
    best = optimal_hetero(hetero_chain(sizes, fwd), 9)
    assert best.forward_time == exhaustive_hetero(sizes, fwd, 9) == 13
    assert replay(sizes, fwd, best.actions) == (best.peak, 13) and best.peak <= 9
    assert checkpoints_let_go(best.actions) == [1]
    check_against_exhaustive_search(sizes, fwd)


def test_checkpoints_let_go_are_the_ones_overwritten_or_freed_after_a_backward_step():
    F, B = ck.Forward, ck.Backward
    assert checkpoints_let_go(ck.store_all(4).actions) == []
    assert checkpoints_let_go(ck.optimal(9, 3).actions) == []    # x0 is consumed by B0 only
    # x1 outlives B3 and is then overwritten by F1: let go; x2 is overwritten before any B
    actions = [F(0, True), F(1, True), F(2), F(3, True), B(4), B(3), F(1), B(2), ck.Free("x0")]
    assert checkpoints_let_go(actions) == [1, 0]


@pytest.mark.parametrize("l", [1, 3, 6, 9])
def test_uniform_chain_reduces_to_the_slot_optimum(l):
    chain = hetero_chain([1] * (l + 1), [1] * l, [0] * (l + 1))
    for budget in range(ck.minimum_budget(l), l + 3):
        h = optimal_hetero(chain, budget)
        assert h.forward_time == ck.optimal_forwards(l, budget)
        sim = ck.simulate(h.actions, l)
        assert sim.peak <= budget and sim.forwards == h.forward_time


def exhaustive_two_levels(l, m0, write, read, cap=None):
    """Least time with level 0 of m0 slots and a second level (capacity cap) of these costs."""
    def moves(state):
        work, disk, nb = state
        out = []
        for kind, i in work:
            if kind == "x" and i < l and ("x", i + 1) not in work:
                out.append((work | {("x", i + 1)}, disk, 1.0))
                out.append(((work - {("x", i)}) | {("x", i + 1)}, disk, 1.0))
            if kind == "x" and i not in disk and (cap is None or len(disk) < cap):
                out.append((work, disk | {i}, write))
            out.append((work - {(kind, i)}, disk, 0.0))
        for i in disk:
            if ("x", i) not in work:
                out.append((work | {("x", i)}, disk, read))
            out.append((work, disk - {i}, 0.0))
        need = {("x", nb)} | ({("y", nb + 1)} if nb < l else set())
        res = [((w, d, nb), c) for w, d, c in out]
        if need <= work:
            res.append((((work - need) | {("y", nb)}, disk - {nb}, nb - 1), 0.0))
        return [(s, c) for s, c in res if len(s[0]) <= m0]

    return dijkstra((frozenset({("x", 0)}), frozenset(), l), lambda s: s[2] < 0, moves)


@pytest.mark.parametrize("l", [2, 3, 4, 5])
@pytest.mark.parametrize("costs", [(0.0, 0.0), (1.0, 1.0), (2.0, 0.5), (0.5, 3.0)])
def test_two_levels_equal_exhaustive_search(l, costs):
    w, r = costs
    for m0 in range(3, l + 2):
        for cap in (None, 1):
            want = exhaustive_two_levels(l, m0, w, r, cap)
            got = multilevel_optimal(l, [m0, cap], [0.0, w], [0.0, r])
            assert got.time == pytest.approx(want), (l, m0, w, r, cap)


def test_levels_reduce_to_one_memory_and_to_free_disk():
    for l in range(1, 10):
        for m in range(ck.minimum_budget(l), l + 3):
            assert multilevel_optimal(l, [m]).time == ck.optimal_forwards(l, m)
            slow = multilevel_optimal(l, [m, None], [0, 1e9], [0, 1e9])
            assert slow.time == ck.optimal_forwards(l, m)       # a disk too slow to use
    free = multilevel_optimal(12, [3, None], [0, 0], [0, 0])
    assert free.forwards == 12                                 # a free disk: no recomputation


def test_bad_input_is_a_clear_error():
    with pytest.raises(ml.ScheduleError, match="sizes needs"):
        hetero_chain([1, 2], [1, 1])
    with pytest.raises(ml.ScheduleError, match=">= 0"):
        hetero_chain([1, -2, 1], [1, 1])
    with pytest.raises(ml.ScheduleError, match=">= 0"):
        hetero_chain([1, 2, 1], [1, -1])
    with pytest.raises(ml.BudgetError, match="minimum is 3"):
        multilevel_optimal(5, [2, None], [0, 1], [0, 1])
    with pytest.raises(ml.ScheduleError, match="one cost per level"):
        multilevel_optimal(5, [3, None], [0], [0, 1])


@pytest.mark.parametrize("slots, w, r", [([3, None], 1.0, 1.0), ([4, 2], 2.0, 0.5),
                                         ([3, 1, None], [0, 0.5, 3.0], [0, 0.5, 2.0])])
def test_level_schedules_replay_to_their_time_within_every_level(slots, w, r):
    from memlab.checkpoint.levels import replay_levels
    write = w if isinstance(w, list) else [0.0, w]
    read = r if isinstance(r, list) else [0.0, r]
    for l in (1, 4, 9, 14):
        s = multilevel_optimal(l, slots, write, read)
        time, peak = replay_levels(s, write, read)
        assert time == pytest.approx(s.time)
        assert peak[0] <= slots[0]
        assert all(c is None or p <= c for p, c in zip(peak[1:], slots[1:]))


def test_disk_curves_label_each_memory_and_match_the_slot_optimum_without_a_disk():
    from memlab.checkpoint import disk_curves, optimal
    rows = disk_curves(10, [3, 4, 6], {"cheap": 1.0, "dear": 5.0, "none": None})
    assert [r["label"] for r in rows] == ["cheap"] * 3 + ["dear"] * 3 + ["none"] * 3
    for r in rows:
        cost = {"cheap": 1.0, "dear": 5.0, "none": 0.0}[r["label"]]
        assert r["time"] == r["forwards"] + cost * (r["writes"] + r["reads"])
    none = {r["level0"]: r for r in rows if r["label"] == "none"}
    for m, r in none.items():          # level 0 alone is lesson 07's slot model
        assert r["writes"] == r["reads"] == 0
        assert r["forwards"] == 10 + optimal(10, m).recomputations
    for r in rows:                     # a disk never makes it slower
        assert r["time"] <= none[r["level0"]]["time"]
    with pytest.raises(ml.BudgetError, match="disk 'x'"):
        disk_curves(10, [3], {"x": -1.0})
    with pytest.raises(ml.BudgetError, match="non-empty mapping"):
        disk_curves(10, [3], [1.0])


def test_compare_with_homogeneous_lists_every_schedule_that_fits():
    """On the CNN-like chain at its least budget: the slot optimum with 3 slots, recompute all and
    Revolve with one snapshot all fit (each replayed here on the chain's real sizes), and the
    fastest of them is the one named."""
    from memlab.checkpoint import hetero as h
    chain = h.cnn_like_chain(12)
    low = h.HeteroPlanner(chain, sum(chain.sizes) + max(chain.sizes)).minimum_budget()
    row = h.compare_with_homogeneous(chain, [low])[0]
    names = [n for _, n in row["fitting"]]
    for name, s in [("slot optimum, 3 slots", ck.optimal(12, 3)),
                    ("recompute all", ck.recompute_all(12)),
                    ("revolve (c = 1)", ck.revolve(12, 1))]:
        peak, time = h.replay_memory(s.actions, chain), sum(
            chain.forward_costs[a.i] for a in s.actions if isinstance(a, ck.Forward))
        assert peak <= low and (time, name) in row["fitting"]
    assert ck.revolve(12, 2).actions and h.replay_memory(ck.revolve(12, 2).actions, chain) > low
    assert "revolve (c = 2)" not in names
    assert (row["homogeneous"], row["which"]) == min(row["fitting"])

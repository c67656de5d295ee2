"""Parallel tree mappings and the event simulator (seed 002, parallel traversals)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.errors import BudgetError, MemlabError, TreeError
from memlab.scheduling.mapping import (all_to_all, memory_aware, proportional, sequential_minimum,
                            split_range, subtree_work, tradeoff_points)
from memlab.scheduling.treegen import random_tree
from memlab.scheduling.trees import Tree, best_postorder, optimal_traversal, peak
from memlab.scheduling.treesim import processor_peaks, simulate

from strategies import trees_data


def recount(tree, s, t):
    """Memory just after time t: node i holds m+f from its start; m until its
    end; f until its parent's end (the root's f forever)."""
    held = 0.0
    for i in range(tree.n):
        if s.start[i] <= t < s.end[i]:
            held += tree.m[i]
        p = tree.parent[i]
        if s.start[i] <= t and (p < 0 or t < s.end[p]):
            held += tree.f[i]
    return held


def check_schedule(tree, w, s):
    for i in range(tree.n):
        for c in tree.children[i]:
            assert s.start[i] >= s.end[c] - 1e-9  # never before a child
        lo, hi = s.procs[i]
        assert 0 <= lo < hi <= s.P
    # no processor runs two nodes at once
    for i in range(tree.n):
        for j in range(i + 1, tree.n):
            a, b = s.procs[i], s.procs[j]
            if a[0] < b[1] and b[0] < a[1] and s.end[i] > s.start[i] and s.end[j] > s.start[j]:
                assert s.end[i] <= s.start[j] + 1e-9 or s.end[j] <= s.start[i] + 1e-9
    for t, mval in zip(s.times, s.memory):
        if not any(w[i] == 0 and s.start[i] == t for i in range(tree.n)):
            assert mval == pytest.approx(recount(tree, s, t))
    assert s.peak == pytest.approx(max(s.memory))


@settings(max_examples=40)
@given(trees_data(max_nodes=14), st.lists(st.integers(1, 5), min_size=14, max_size=14),
       st.integers(1, 5))
def test_mappings_respect_precedence_and_memory_recount(data, wl, P):
    par, f, m = data
    t = Tree(par, f, m)
    w = [float(x) for x in wl[:t.n]]
    a = all_to_all(t, w, P)
    check_schedule(t, w, a)
    assert a.peak == pytest.approx(best_postorder(t)[1])
    assert a.makespan == pytest.approx(sum(w) / P)
    check_schedule(t, w, proportional(t, w, P))
    mn = sequential_minimum(t)
    for fac in (1.0, 1.3, 2.0):
        s = memory_aware(t, w, P, fac * mn)
        check_schedule(t, w, s)
        assert s.peak <= fac * mn + 1e-9


def test_one_processor_is_sequential():
    t = random_tree(200, "recursive", seed=4, m_range=(0, 5))
    w = [1.0] * t.n
    s = proportional(t, w, 1)
    assert s.peak == pytest.approx(best_postorder(t)[1]) and s.makespan == pytest.approx(t.n)
    s = memory_aware(t, w, 1, None)
    assert s.peak == pytest.approx(optimal_traversal(t)[1])
    assert peak(t, s.order()) == pytest.approx(s.peak)


def test_proportional_uses_tree_parallelism():
    t = random_tree(400, "recursive", seed=8)
    w = [1.0] * t.n
    a, p = all_to_all(t, w, 8), proportional(t, w, 8)
    assert p.peak > a.peak  # data of concurrent subtrees coexist
    s = memory_aware(t, w, 8, 1.5 * sequential_minimum(t))
    assert s.peak <= 1.5 * sequential_minimum(t) + 1e-9


@pytest.mark.parametrize("shape", ["recursive", "deep", "bushy"])
def test_memory_aware_bound_on_larger_trees(shape):
    t = random_tree(500, shape, seed=11, m_range=(0, 3))
    w = [1.0 + x for x in t.m]
    mn = sequential_minimum(t)
    for P in (2, 7, 16):
        for fac in (1.0, 1.2, 3.0):
            s = memory_aware(t, w, P, fac * mn)
            assert s.peak <= fac * mn + 1e-9
            for i in range(t.n):
                assert all(s.start[i] >= s.end[c] - 1e-9 for c in t.children[i])


def test_budget_error_states_minimum():
    t = random_tree(50, seed=1)
    mn = sequential_minimum(t)
    with pytest.raises(BudgetError, match=f"sequential minimum {mn:g}"):
        memory_aware(t, None, 4, mn - 1)
    assert issubclass(BudgetError, MemlabError)


def test_split_range_and_work():
    assert split_range(0, 4, [1, 1]) == [(0, 2), (2, 4)]
    assert split_range(0, 4, [3, 1]) == [(0, 3), (3, 4)]
    for lo, hi, a, b in [(r[0], r[1], 0, 3) for r in split_range(0, 3, [1, 1])]:
        assert 0 <= lo < hi <= 3
    assert split_range(2, 3, [5, 1, 1]) == [(2, 3)] * 3
    # a tiny subtree time-shares a processor instead of taking one from its big sibling
    assert split_range(0, 2, [526, 5]) == [(0, 2), (0, 1)]
    assert split_range(0, 16, [998, 832, 154, 66, 20])[:3] == [(0, 8), (8, 15), (15, 16)]
    # small children whose shares add up to a processor or more share processors of their own
    assert split_range(0, 4, [26, 21, 9, 13]) == [(0, 2), (2, 3), (3, 4), (3, 4)]
    t = Tree([-1, 0, 0, 1], [1, 1, 1, 1])
    assert subtree_work(t, [1, 2, 3, 4]) == [10, 6, 3, 4]


def _complete(arity: int, depth: int) -> Tree:
    parent, frontier = [-1], [0]
    for _ in range(depth):
        frontier = [parent.append(v) or len(parent) - 1 for v in frontier for _ in range(arity)]
    return Tree(parent, [1] * len(parent))


@pytest.mark.parametrize("arity,depth,Ps",
                         [(2, 5, (2, 4, 8, 16)), (3, 3, (3, 9)), (4, 2, (2, 4, 16))])
def test_proportional_on_a_balanced_tree_balances_the_load(arity, depth, Ps):
    """Seed 002: proportional mapping gives "good work-load balance". On a complete tree whose
    arity divides P's splits, every processor works all the time: with a perfect speed-up the
    makespan is the total work / P, as all-to-all's; with alpha < 1 it is shorter, since it
    splits nodes over fewer processors."""
    t = _complete(arity, depth)
    for P in Ps:
        a, p = all_to_all(t, None, P), proportional(t, None, P)
        assert p.makespan == pytest.approx(a.makespan) == pytest.approx(t.n / P)
        slow = all_to_all(t, None, P, alpha=0.5).makespan
        assert proportional(t, None, P, alpha=0.5).makespan < slow


def test_bad_inputs():
    t = Tree([-1, 0], [1, 1])
    with pytest.raises(TreeError, match="node 1: work"):
        all_to_all(t, [1, -1], 2)
    with pytest.raises(TreeError, match="length mismatch"):
        proportional(t, [1], 2)
    with pytest.raises(TreeError, match="P must be"):
        proportional(t, None, 0)
    with pytest.raises(TreeError, match="node 0: processor range"):
        simulate(t, None, 2, [(0, 3), (0, 1)], [0, 1])


def test_tradeoff_points():
    t = random_tree(120, seed=2)
    pts = tradeoff_points(t, None, Ps=(1, 4), bound_factors=(1.0, 2.0), alpha=0.9)
    assert len(pts) == 2 * 4
    mn = sequential_minimum(t)
    for p in pts:
        assert p["makespan"] > 0 and p["peak"] >= mn - 1e-9
        if p["bound"] is not None:
            assert p["peak"] <= p["bound"] + 1e-9


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=12))
def test_pareto_front_is_the_set_of_undominated_points(points):
    from memlab.scheduling.mapping import pareto_front
    front = pareto_front(points)
    undominated = {p for p in points if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)}
    assert {points[k] for k in front} == undominated
    assert len(front) == len(undominated)  # one index per distinct undominated point
    assert [points[k][0] for k in front] == sorted(points[k][0] for k in front)


def _held_at(tree, sched, t, procs):
    """Independent recount: what the processors ``procs`` hold just after instant ``t`` (frees at t
    done, allocations at t made), each node's data split evenly over its range."""
    held = 0.0
    for i in range(tree.n):
        lo, hi = sched.procs[i]
        share = len(set(range(lo, hi)) & set(procs)) / (hi - lo)
        q = tree.parent[i]
        if sched.start[i] <= t < sched.end[i]:
            held += share * (tree.m[i] + tree.f[i])
        elif sched.end[i] <= t and (q < 0 or t < sched.end[q]):
            held += share * tree.f[i]
    return held


@pytest.mark.parametrize("mapping", [all_to_all, proportional, memory_aware],
                         ids=["all_to_all", "proportional", "memory_aware"])
def test_processor_peaks_against_a_recount_at_every_event(mapping):
    tree = random_tree(15, "recursive", seed=10, f_range=(1, 9), m_range=(1, 5))
    w = [float(x) for x in np.random.default_rng(10).integers(1, 10, tree.n)]
    sched = mapping(tree, w, 4, alpha=0.5)
    instants = sorted(set(sched.start) | set(sched.end))
    peaks = processor_peaks(tree, sched)
    for p in range(4):
        assert peaks[p] == pytest.approx(max(_held_at(tree, sched, t, [p]) for t in instants))
    # all processors together hold the shared memory of the simulator
    assert max(_held_at(tree, sched, t, range(4)) for t in instants) == pytest.approx(sched.peak)


def test_all_to_all_scales_memory_perfectly_and_proportional_does_not():
    """Seed 002: all-to-all has "optimal memory scalability", P * M_max(P) = M_seq; proportional
    mapping's P * M_max(P) can be far above it."""
    tree = random_tree(15, "recursive", seed=10, f_range=(1, 9), m_range=(1, 5))
    w = [float(x) for x in np.random.default_rng(10).integers(1, 10, tree.n)]
    seq = best_postorder(tree)[1]
    for P in (1, 2, 4, 8):
        assert P * max(processor_peaks(tree, all_to_all(tree, w, P))) == pytest.approx(seq)
    assert 4 * max(processor_peaks(tree, proportional(tree, w, 4))) > 2 * seq
    with pytest.raises(MemlabError, match="spread"):
        processor_peaks(tree, proportional(tree, w, 2), spread="yes")

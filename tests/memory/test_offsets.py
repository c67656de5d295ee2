"""Offset planner (TFLite-style greedy by size), the live-bytes lower bound, check_plan."""
import numpy as np
import pytest
from hypothesis import given, settings

import memlab as ml
from memlab.memory.checkplan import check_plan
from memlab.models import mlp, slide22
from memlab.memory.liveness import lifetimes
from memlab.memory.offsets import live_bytes_lower_bound, plan_offsets
from memlab.memory.planner import plan_memory
from strategies import random_dags


@settings(deadline=None, max_examples=40)
@given(random_dags())
def test_offsets_valid_and_above_bound(dag):
    outs, _ = dag
    for inplace in (True, False):
        plan = plan_offsets(outs, inplace=inplace)
        check_plan(plan)
        assert plan.total_bytes >= live_bytes_lower_bound(plan)
        assert all(o % 64 == 0 for o in plan.offset.values())


def test_slide22_offsets_reach_the_bound():
    g = slide22()
    plan = plan_offsets(g["G"], order=g["order"])
    check_plan(plan)
    assert plan.total_bytes == live_bytes_lower_bound(plan) == 3 * g["B"].nbytes
    # B lives through F; E and G share one offset (in-place chain)
    assert plan.offset[g["E"]] == plan.offset[g["G"]]


def test_bound_by_hand():
    a = ml.placeholder("a", (16,))          # 64 bytes, not counted (a leaf)
    b = ml.exp(a, name="b")
    c = ml.pool(b, name="c")                # b and c alive together: 128
    d = ml.neg(c, name="d")                 # in place on c: still 128 with b dead
    tags = plan_memory(d)
    assert live_bytes_lower_bound(tags) == 128
    assert live_bytes_lower_bound(plan_memory(d, inplace=False)) == 128
    life = lifetimes(tags.order, [d])
    assert life[b] == (1, 2) and life[d] == (3, 4)


def test_mlp_training_offsets_near_bound():
    m = mlp(depth=4, batch=32, n_in=64, hidden=64)
    plan = plan_offsets(m["outputs"])
    check_plan(plan)
    bound = live_bytes_lower_bound(plan)
    assert bound <= plan.total_bytes <= 1.25 * bound


def test_corrupted_offsets_fail():
    g = slide22()
    plan = plan_offsets(g["G"], order=g["order"])
    plan.offset[g["F"]] = plan.offset[g["B"]]
    with pytest.raises(ml.PlanError, match="'B'.*'F'"):
        check_plan(plan)
    plan = plan_offsets(g["G"], order=g["order"])
    plan.offset[g["C"]] += 32  # half over something else or past the end
    with pytest.raises(ml.PlanError):
        check_plan(plan)
    plan = plan_offsets(g["G"], order=g["order"])
    del plan.offset[g["E"]]
    with pytest.raises(ml.PlanError, match="'E'"):
        check_plan(plan)
    plan = plan_offsets(g["G"], order=g["order"])
    plan.order = [g["A"], g["C"], g["B"], g["F"], g["E"], g["G"]]
    with pytest.raises(ml.PlanError, match="'C'"):
        check_plan(plan)


def test_inplace_exception_is_narrow():
    a = ml.placeholder("a", (16,))
    b = ml.exp(a, name="b")
    c = ml.pool(b, name="c")  # pool may not run in place
    plan = plan_offsets(c, inplace=False)
    plan.offset[c] = plan.offset[b]
    with pytest.raises(ml.PlanError, match="'b'.*'c'"):
        check_plan(plan)


@settings(deadline=None, max_examples=40)
@given(random_dags())
def test_tags_by_size_valid_runs_and_never_above_naive(dag):
    import numpy as np

    from memlab.memory.offsets import plan_tags_by_size

    outs, feed = dag
    for inplace in (True, False):
        plan = plan_tags_by_size(outs, inplace=inplace)
        check_plan(plan)
        assert plan.total_bytes >= live_bytes_lower_bound(plan)
        naive = plan_memory(outs, inplace=False, share=False, trace=False)
        assert plan.total_bytes <= naive.total_bytes
        for ours, ref in zip(ml.Executor(outs, plan=plan).run(feed), ml.Executor(outs).run(feed)):
            np.testing.assert_allclose(ours, ref, rtol=1e-6)


def test_tags_by_size_on_slide22_uses_three_storages():
    from memlab.memory.offsets import plan_tags_by_size

    g = slide22()
    plan = plan_tags_by_size(g["G"], order=g["order"])
    check_plan(plan)
    assert plan.num_storages == 3 and plan.storage[g["E"]] == plan.storage[g["G"]]


@given(random_dags())
def test_the_scan_planner_is_valid_and_runs_in_its_arena(data):
    outs, feed = data
    plan = plan_offsets(outs, method="scan")
    check_plan(plan)
    assert plan.total_bytes >= live_bytes_lower_bound(plan)
    want = ml.Executor(outs).run(feed)
    got = ml.Executor(outs, plan=plan).run(feed)
    for a, b in zip(want, got):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_scan_stays_near_the_bound_on_training_graphs():
    m = mlp(depth=30, batch=16, n_in=32, hidden=32, n_out=10)
    plan = plan_offsets(m["outputs"], method="scan")
    assert plan.total_bytes <= 1.1 * live_bytes_lower_bound(plan)
    with pytest.raises(ml.PlanError, match="method must be"):
        plan_offsets(m["outputs"], method="fast")

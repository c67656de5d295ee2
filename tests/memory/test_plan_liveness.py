"""Issue 23, item 7: a plan carries the liveness it was made from. The lower bound, the plan's
reference counts and the arena runner read it instead of walking the graph again;
``Executor(plan=plan)`` takes the outputs and the order from the plan."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings

import memlab as ml
from memlab.memory import liveness as lv, order as order_mod, planner as planner_mod
from memlab.execute import runner as runner_mod
from memlab.memory.offsets import live_bytes_lower_bound, plan_offsets, plan_tags_by_size
from memlab.memory.planner import plan_memory
from memlab.models import mlp
from strategies import random_dags


def _plans(outs):
    return [plan_memory(outs), plan_memory(outs, trace=True), plan_offsets(outs),
            plan_tags_by_size(outs), plan_memory(outs, order="dfs")]


@pytest.fixture
def count_walks(monkeypatch):
    """Counts every call of prepare and reference_counts, wherever they are imported."""
    calls = []

    def counted(name, f):
        def wrapper(*args, **kwargs):
            calls.append(name)
            return f(*args, **kwargs)
        return wrapper

    for mod in (lv, order_mod):
        monkeypatch.setattr(mod, "prepare", counted("prepare", lv.prepare))
    for mod in (lv, planner_mod, runner_mod):
        monkeypatch.setattr(mod, "reference_counts", counted("reference_counts", lv.reference_counts))
    return calls


def test_the_bound_the_counts_and_the_runner_read_the_plans_liveness(count_walks):
    m = mlp(depth=4, batch=4, n_in=4, hidden=4, n_out=2)
    outs, feed = m["outputs"], m["make_feed"](0)
    want = ml.Executor(outs).run(feed)
    for plan in _plans(outs):
        assert plan.liveness is not None and plan.liveness.order is plan.order
        count_walks.clear()
        bound = live_bytes_lower_bound(plan)
        refs = getattr(plan, "initial_refcount", None)
        ex = ml.Executor(outs, plan=plan)
        got = ex.run(feed)
        assert count_walks.count("prepare") == 0
        assert count_walks.count("reference_counts") <= 1           # the plan's counts, once
        live_bytes_lower_bound(plan)
        ml.Executor(plan=plan)
        assert count_walks.count("reference_counts") <= 1 and "prepare" not in count_walks
        if refs is not None:
            assert ex.runner.refcount is refs is plan.liveness.refcounts
        assert all(np.array_equal(u, v) for u, v in zip(want, got))
        # the same numbers as from a plan that kept nothing (worked out again, by prepare)
        bare = dataclasses.replace(plan, liveness=None)
        assert live_bytes_lower_bound(bare) == bound
        if refs is not None:
            assert bare.initial_refcount == refs
        assert count_walks.count("prepare") == 1


def test_a_plan_whose_order_was_replaced_is_walked_again(count_walks):
    outs = mlp(depth=2, batch=2, n_in=3, hidden=3, n_out=2)["outputs"]
    plan = plan_offsets(outs)
    moved = dataclasses.replace(plan, order=list(plan.order))
    count_walks.clear()
    assert live_bytes_lower_bound(moved) == live_bytes_lower_bound(plan)
    assert count_walks == ["prepare"]


@settings(max_examples=30)
@given(random_dags())
def test_one_inplace_rule_for_the_tag_planner_and_the_in_place_chains(dag):
    """The tag planner (colours off) takes in place exactly the pairs the offset planner chains."""
    outs, _ = dag
    tags, offsets = plan_memory(outs), plan_offsets(outs)
    chained = [(c[i], c[i + 1]) for c in offsets.clusters for i in range(len(c) - 1)]
    assert tags.order == offsets.order
    assert tags.inplace_pairs == sorted(chained, key=lambda p: tags.order.index(p[1]))
    for plan in (tags, offsets):
        ml.check_plan(plan)


@settings(max_examples=20)
@given(random_dags())
def test_executor_takes_the_outputs_and_order_from_the_plan(dag):
    outs, feed = dag
    for plan in (plan_memory(outs), plan_offsets(outs, order="dfs")):
        ex = ml.Executor(plan=plan)
        assert ex.outputs == list(plan.outputs) and ex.order == list(plan.order)
        got, want = ex.run(feed), ml.Executor(outs, plan=plan).run(feed)
        assert all(np.array_equal(u, v) for u, v in zip(got, want))
        naive = ml.Executor(outs).run(feed)
        assert all(np.allclose(u, v, equal_nan=True) for u, v in zip(got, naive))


def test_outputs_that_are_not_the_plans_are_an_error():
    m = mlp(depth=2, batch=2, n_in=3, hidden=3, n_out=2)
    plan = plan_memory(m["outputs"])
    with pytest.raises(ml.PlanError, match=r"made for other outputs .*Executor\(plan=plan\)"):
        ml.Executor(m["outputs"][:1], plan=plan)
    ml.Executor(list(reversed(m["outputs"])), plan=plan)     # the same outputs, in another order
    with pytest.raises(ml.MemlabError, match="needs the outputs"):
        ml.Executor()
    with pytest.raises(ml.PlanError, match="needs a memory plan"):
        ml.Executor(plan="a plan")

"""Executors computing inside a plan (one arena) or through a memory pool."""
import numpy as np
import pytest
from hypothesis import given, settings

import memlab as ml
from memlab.models import mlp, slide22
from memlab.memory.offsets import plan_offsets
from memlab.memory.planner import plan_memory
from strategies import random_dags


def _same(a, b):
    return all(np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True) for x, y in zip(a, b))


@settings(deadline=None, max_examples=30)
@given(random_dags())
def test_arena_equals_naive(dag):
    outs, feed = dag
    ref = ml.Executor(outs).run(feed)
    plans = [plan_memory(outs), plan_memory(outs, colors=2), plan_memory(outs, match="exact"),
             plan_offsets(outs), plan_offsets(outs, inplace=False)]
    for plan in plans:
        ex = ml.Executor(outs, plan=plan)
        got = ex.run(feed)
        assert _same(got, ref)
        assert ex.runner.arena_bytes == plan.total_bytes == ex.stats.peak_bytes
    pooled = ml.Executor(outs, memory="pool")
    assert _same(pooled.run(feed), ref)
    assert pooled.stats.peak_bytes == pooled.runner.pool.stats.peak_reserved


def test_outputs_are_safe_after_later_runs():
    g = slide22()
    plan = plan_memory(g["G"], order=g["order"])
    ex = ml.Executor(g["G"], plan=plan)
    rng = np.random.default_rng(0)
    f1 = {"A": rng.standard_normal((8, 16)).astype(np.float32)}
    f2 = {"A": rng.standard_normal((8, 16)).astype(np.float32)}
    r1 = ex.run(f1)[0]
    keep = r1.copy()
    ex.run(f2)
    assert np.array_equal(r1, keep)
    assert np.allclose(r1, ml.Executor(g["G"]).run(f1)[0])


def test_wrong_plan_gives_wrong_numbers():
    g = slide22()
    plan = plan_memory(g["G"], order=g["order"])
    plan.storage[g["C"]] = plan.storage[g["B"]]  # clobbers B before F reads it
    feed = {"A": np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)}
    bad = ml.Executor(g["G"], plan=plan).run(feed)[0]
    assert not np.allclose(bad, ml.Executor(g["G"]).run(feed)[0])


def test_mlp_training_step_in_arena_and_pool():
    m = mlp(depth=3, batch=16, n_in=20, hidden=12, n_out=5)
    feed = m["make_feed"](3)
    ref = ml.Executor(m["outputs"]).run(feed)
    for plan in (plan_memory(m["outputs"]), plan_offsets(m["outputs"])):
        assert _same(ml.Executor(m["outputs"], plan=plan).run(feed), ref)
    ex = ml.Executor(m["outputs"], memory="pool")
    assert _same(ex.run(feed), ref)
    naive = ml.Executor(m["outputs"])
    naive.run(feed)
    assert ex.stats.peak_bytes < naive.stats.peak_bytes
    assert ex.runner.pool.stats.from_pool > 0


def test_executor_errors():
    g = slide22()
    plan = plan_memory(g["G"])
    with pytest.raises(ml.PlanError, match="other outputs"):
        ml.Executor(g["F"], plan=plan)
    with pytest.raises(ml.MemlabError, match="memory"):
        ml.Executor(g["G"], memory="magic")
    with pytest.raises(ml.FeedError, match="'A'"):
        ml.Executor(g["G"], plan=plan).run({})

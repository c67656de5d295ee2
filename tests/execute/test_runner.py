"""One run loop behind every executor, and RunStats with one meaning across runners."""
from __future__ import annotations

import numpy as np
import pytest

import memlab as ml
from memlab.execute import ArenaRunner, NaiveRunner, PoolRunner, Runner
from memlab.models import mlp


def _model():
    m = mlp(depth=3, batch=16, n_in=64, hidden=64, n_out=10)
    return m["outputs"], m["make_feed"](0)


def test_every_runner_uses_the_one_loop():
    for cls in (NaiveRunner, PoolRunner, ArenaRunner):
        assert issubclass(cls, Runner)
        assert "run" not in cls.__dict__, f"{cls.__name__} writes its own run loop"


def test_stats_mean_the_same_for_every_runner():
    outs, feed = _model()
    computed = [n for n in ml.topo_order(outs) if n.op.computes]
    naive = ml.Executor(outs)
    want = naive.run(feed)
    # naive: one fresh array per value, none reused: obtained == held at the end == sum of sizes
    assert naive.stats.allocated_bytes == sum(n.nbytes for n in computed) == naive.stats.peak_bytes
    pooled = ml.Executor(outs, memory="pool")
    got = pooled.run(feed)
    st = pooled.runner.pool.stats
    # pool: obtained == new blocks reserved; the peak held is the pool's peak reservation
    assert pooled.stats.allocated_bytes == sum(s.allocated for s in pooled.stats.trace)
    assert pooled.stats.peak_bytes == st.peak_reserved >= max(s.held for s in pooled.stats.trace)
    assert pooled.stats.allocated_bytes < naive.stats.allocated_bytes
    plan = ml.plan_offsets(outs)
    arena = ml.Executor(outs, plan=plan)
    for _ in range(2):  # the arena is kept between runs and counted in each
        got2 = arena.run(feed)
        assert arena.stats.allocated_bytes == plan.total_bytes == arena.stats.peak_bytes
    for a, b, c in zip(want, got, got2):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-7)


def test_step_trace_counts_every_op_once():
    outs, feed = _model()
    ex = ml.Executor(outs, memory="pool")
    ex.run(feed)
    ran = [s.node for s in ex.stats.trace]
    assert ran == [n for n in ex.order if n.op.computes]
    ops = [n for n in ml.topo_order(outs) if n.op.computes]
    assert sorted(ran, key=id) == sorted(ops, key=id)             # every op once
    dfs = ml.Executor(outs, memory="pool", order="dfs")
    dfs.run(feed)
    assert [s.node for s in dfs.stats.trace] == ops               # order="dfs": the old order


@pytest.mark.parametrize("kwargs, match", [
    ({"memory": "pool", "plan": "PLAN"}, "plan= runs only in an arena"),
    ({"memory": "arena"}, "needs plan="),
    ({"memory": "gpu"}, "memory must be one of"),
    ({"plan": object()}, "must be a memory plan"),
])
def test_conflicting_or_bad_executor_options_are_errors(kwargs, match):
    outs, _ = _model()
    if kwargs.get("plan") == "PLAN":
        kwargs = dict(kwargs, plan=ml.plan_memory(outs))
    with pytest.raises(ml.MemlabError, match=match):
        ml.Executor(outs, **kwargs)


def test_a_custom_runner_only_says_where_values_live():
    """The Runner protocol: a new memory (here: one buffer per shape, reused) is a few hooks."""

    class ByShape(Runner):
        def start(self):
            self.buffers, self.held = {}, 0

        def allocate(self, node):
            key = (node.shape, node.dtype.str, node.id % 2)
            if key in self.buffers:
                return np.empty(node.shape, node.dtype), 0
            self.buffers[key] = True
            self.held += node.nbytes
            return np.empty(node.shape, node.dtype), node.nbytes

        def held_bytes(self):
            return self.held

    outs, feed = _model()
    runner = ByShape(outs, ml.topo_order(outs))
    got = runner.run(feed)
    for a, b in zip(ml.Executor(outs).run(feed), got):
        np.testing.assert_array_equal(a, b)
    assert runner.stats.allocated_bytes == runner.held > 0

"""The executor on PyTorch's caching allocator (and TensorFlow's BFC): every value a view into its
block, so split, merged and reused blocks must hold the right numbers."""
from __future__ import annotations

import numpy as np
import pytest

import memlab as ml
from memlab.memory.checksnapshot import check_snapshot
from memlab.models import mlp


@pytest.mark.parametrize("memory", ["caching", "caching-expandable", "bfc"])
def test_training_step_on_the_allocator_equals_numpy(memory):
    m = mlp(depth=3, batch=16, n_in=64, hidden=48, n_out=10)
    outs, feed = m["outputs"], m["make_feed"](0)
    want = ml.Executor(outs).run(feed)            # one fresh numpy array per value
    ex = ml.Executor(outs, memory=memory)
    for _ in range(2):
        got = ex.run(feed)
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)
    alloc = ex.runner.allocator
    check_snapshot(alloc.memory_snapshot())
    assert ex.stats.peak_bytes == alloc.max_memory_reserved()
    kept = sum(max(512, -(-o.nbytes // 512) * 512) for o in outs if o.op.computes)
    assert alloc.memory_allocated() <= kept + 512 * len(outs)   # only the outputs stay
    freed, reused = set(), 0        # some value was computed into memory freed by an earlier one
    for ev in alloc.trace:
        if ev["action"] == "free_completed":
            freed.add(ev["addr"])
        elif ev["action"] == "alloc":
            reused += ev["addr"] in freed
    assert reused > 0


def test_small_graph_equals_a_numpy_formula():
    x = ml.placeholder("x", (300, 200))           # 240 kB: small pool values, split and merged
    y = ml.exp(x) * 2.0 + x
    z = ml.sum(y * y)
    xv = np.random.default_rng(1).standard_normal((300, 200)).astype(np.float32)
    (got,) = ml.Executor(z, memory="caching").run({x: xv})
    yv = np.exp(xv) * 2.0 + xv
    np.testing.assert_allclose(got, np.sum(yv * yv), rtol=1e-5)


def test_caching_memory_is_cpu_only():
    x = ml.placeholder("x", (2,))
    with pytest.raises(ml.MemlabError, match="CPU only"):
        ml.Executor(ml.exp(x), memory="caching", device="cuda")


@pytest.mark.parametrize("order", [None, "dfs"])
def test_the_replayed_trace_is_the_executors(order):
    """memory.replay writes the runner's rule once more for allocators that do not compute: the
    executor on the caching allocator and the replay of allocation_trace make the same calls."""
    from memlab.memory.replay import allocation_trace, replay
    m = mlp(depth=3, batch=32, n_in=300, hidden=200, n_out=10)
    outs = m["outputs"]
    ml.graph.set_workspace(outs, {"matmul": 70_000})          # workspaces taken around their op
    ex = ml.Executor(outs, memory="caching", order=order)
    ex.run(m["make_feed"](0))
    again = replay(allocation_trace(outs, ex.order), ml.memory.CachingAllocator())
    assert again.trace == ex.runner.allocator.trace
    assert again.memory_stats() == ex.runner.allocator.memory_stats()
    assert any(e["owner"].endswith(".workspace") for e in again.trace)

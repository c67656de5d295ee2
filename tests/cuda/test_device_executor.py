"""The device executor against the numpy executor, the device pool against the host pool, and
bad input (dtype, alignment, out-of-range views, no device) refused with a MemlabError."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import memlab as ml
import memlab.cuda as mc
from memlab.errors import DeviceError, FeedError, PlanError
from memlab.models import mlp, slide22, slide23

PLANNERS = [ml.plan_memory, ml.plan_offsets, ml.plan_tags_by_size]


def same(got, want, tol=1e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, np.ndarray) and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("act,depth,planner", [("sigmoid", 2, ml.plan_memory),
                                               ("relu", 3, ml.plan_offsets),
                                               ("sigmoid", 3, ml.plan_tags_by_size)])
def test_mlp_training_step_in_one_device_arena(act, depth, planner):
    m = mlp(depth=depth, batch=5, n_in=7, hidden=6, n_out=3, act=act)
    feed = m["make_feed"](depth)
    want = ml.Executor(m["outputs"]).run(feed)
    plan = planner(m["outputs"], alignment=mc.DEVICE_ALIGN)
    ml.check_plan(plan)
    ex = ml.Executor(m["outputs"], plan=plan, device="cuda")
    same(ex.run(feed), want)
    # one allocation, of the plan's bytes, at the first step; none at any other
    assert [s.allocated for s in ex.stats.trace if s.allocated] == [plan.total_bytes]
    assert ex.runner.arena_bytes == plan.total_bytes
    same(ex.run(m["make_feed"](9)), ml.Executor(m["outputs"]).run(m["make_feed"](9)))


def test_device_pool_and_naive_runners_match_the_host_ones():
    m = mlp(depth=2, batch=3, n_in=5, hidden=7, n_out=3)
    feed = m["make_feed"](1)
    for memory in ("pool", "naive"):
        host = ml.Executor(m["outputs"], memory=memory)
        dev = ml.Executor(m["outputs"], memory=memory, device="cuda")
        same(dev.run(feed), host.run(feed))
        if memory == "naive":   # one cudaMalloc per value: whole 256-byte units, at least one
            assert [s.allocated for s in dev.stats.trace] == \
                [0 if a == 0 else 256 * ((a + 255) // 256) for a in
                 (s.allocated for s in host.stats.trace)]
            assert dev.stats.allocated_bytes >= 256 * sum(s.allocated > 0 for s in host.stats.trace)
            continue
        assert [(s.node, s.allocated, s.held) for s in dev.stats.trace] == \
            [(s.node, s.allocated, s.held) for s in host.stats.trace]
        if memory == "pool":
            assert isinstance(dev.runner.pool, mc.DeviceMemoryPool)
            assert dev.runner.pool.stats == host.runner.pool.stats


@pytest.mark.parametrize("build", [slide22, slide23])
def test_slide_graphs_pool_conv_concat_on_the_device(build):
    g = build()
    out = g["G"] if "G" in g else g["A[8]"]
    x = next(n for n in ml.topo_order(out) if n.op is ml.PLACEHOLDER)
    feed = {x: np.random.default_rng(3).standard_normal(x.shape).astype(np.float32)}
    plan = ml.plan_offsets(out, alignment=256)
    same(ml.Executor(out, plan=plan, device="cuda").run(feed), ml.Executor(out).run(feed))


def test_a_host_plan_is_refused_naming_the_alignment():
    m = mlp(depth=2, batch=3, n_in=5, hidden=4, n_out=3)
    plan = ml.plan_memory(m["outputs"])          # 64-byte offsets
    with pytest.raises(PlanError, match="alignment=256"):
        ml.Executor(m["outputs"], plan=plan, device="cuda")


def test_out_of_range_views_and_writes_are_caught():
    arena = mc.DeviceArena(1024)
    with pytest.raises(PlanError, match="outside the device arena"):
        arena.view(768, (100,), np.float32)
    with pytest.raises(PlanError, match="not a multiple of 256"):
        arena.view(64, (4,), np.float32)
    assert arena.view(768, (64,), np.float32).shape == (64,)
    g = slide22()
    plan = ml.plan_offsets(g["G"], alignment=256)
    plan.offset[g["C"]] = plan.total_bytes        # C would be written past the arena's end
    with pytest.raises(PlanError, match="'C'"):
        ml.Executor(g["G"], plan=plan, device="cuda")
    with pytest.raises(ml.ShapeError):
        mc.binary("add", mc.device_empty((3, 4)), mc.device_empty((4,)), mc.device_empty((3, 5)))


def test_bad_dtypes_and_labels_are_refused():
    x = ml.placeholder("x64", (3, 4), np.float64)
    with pytest.raises(DeviceError, match="'x64'.*float32"):
        ml.Executor(ml.exp(x), device="cuda")
    with pytest.raises(DeviceError, match="float32"):
        mc.unary("exp", mc.to_device(np.ones(3, np.float64)), mc.device_empty((3,)))
    logits, labels = ml.placeholder("logits", (2, 3)), ml.placeholder("y", (2,), np.int32)
    loss = ml.softmax_cross_entropy(logits, labels, name="loss")
    feed = {logits: np.zeros((2, 3), np.float32), labels: np.array([0, 3], np.int32)}
    with pytest.raises(FeedError, match="'loss'.*label 3"):
        ml.Executor(loss, device="cuda").run(feed)
    with pytest.raises(ml.MemlabError, match="device must be"):
        ml.Executor(loss, device="tpu")


def test_no_gpu_and_no_simulator_names_the_fix():
    code = ("import memlab as ml\nx = ml.placeholder('x', (2,))\n"
            "try:\n    ml.Executor(ml.exp(x), device='cuda')\n"
            "except ml.MemlabError as e:\n    print(type(e).__name__, e)\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120).stdout
    code2 = "from numba import cuda; print(cuda.is_available())"
    has_gpu = subprocess.run([sys.executable, "-c", code2], capture_output=True, text=True,
                             env=env, timeout=120).stdout.strip() == "True"
    if has_gpu:
        pytest.skip("this machine has a GPU")
    assert out.startswith("DeviceError") and "NUMBA_ENABLE_CUDASIM=1" in out, out


def test_cpu_executor_does_not_import_numba():
    code = ("import sys, memlab as ml\nx = ml.placeholder('x', (2,))\n"
            "ml.Executor(ml.exp(x)).run({x: [1, 2]})\nprint('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip()
    assert out == "False"


@settings(max_examples=25)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3000)), min_size=1, max_size=30))
def test_device_pool_keeps_the_host_pools_statistics(actions):
    """Same requests and frees: same stats and trace as MemoryPool; live blocks never alias."""
    host, dev = ml.MemoryPool(), mc.DeviceMemoryPool()
    live_h, live_d = [], []
    for free, nbytes in actions:
        if free and live_h:
            host.free(live_h.pop(0))
            dev.free(live_d.pop(0))
        else:
            live_h.append(host.allocate(nbytes, f"v{len(live_h)}"))
            live_d.append(dev.allocate(nbytes, f"v{len(live_d)}"))
    assert dev.stats == host.stats and dev.events == host.events
    views = [dev.view(b, (b.requested // 4,)) for b in live_d]
    for i, v in enumerate(views):
        mc.fill(v, float(i + 1))
    for i, v in enumerate(views):
        assert np.all(v.copy_to_host() == i + 1)
    assert dev.empty_cache() == host.empty_cache()
    assert dev.stats == host.stats


@pytest.mark.parametrize("planner", PLANNERS)
def test_planners_align_offsets_for_the_device(planner):
    m = mlp(depth=3, batch=3, n_in=5, hidden=7, n_out=3)
    for a in (64, 256, 512):
        plan = planner(m["outputs"], alignment=a)
        ml.check_plan(plan)
        assert all(o % a == 0 for o in plan.offset.values())
        assert plan.total_bytes % a == 0
    with pytest.raises(PlanError, match="alignment"):
        planner(m["outputs"], alignment=0)

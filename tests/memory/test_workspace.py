"""Workspace: scratch an op holds while it runs (cuDNN's workSpace), counted alive during its op's
step only by every planner, the verifier, the order's peak and the executors; checked against an
independent brute-force replay of each plan."""
import numpy as np
import pytest

import memlab as ml
from memlab.memory.checkplan import check_plan
from memlab.testing import random_graph

PLANNERS = {"offsets": lambda o: ml.plan_offsets(o),
            "offsets scan": lambda o: ml.plan_offsets(o, method="scan"),
            "tags": lambda o: ml.plan_memory(o),
            "tags by size": lambda o: ml.memory.plan_tags_by_size(o),
            "tags, no sharing": lambda o: ml.plan_memory(o, share=False)}


def _graph(seed, table=None):
    outs = random_graph(seed, n=14)
    ml.graph.set_workspace(outs, table or {"matmul": 512, "pool": lambda n: 3 * n.nbytes // 2})
    return outs


def _replay(plan):
    """Every value and every workspace, with the steps it is alive at and its byte interval,
    worked out here from the graph and the order; then every pair alive at a common step must
    not overlap, but for an op's output exactly on an input it may overwrite, dying there."""
    order, outs = list(plan.order), set(plan.outputs)
    step = {n: i for i, n in enumerate(order)}
    end = len(order)
    items = []
    for n in order:
        if not n.op.computes:
            continue
        readers = [step[r] for r in order if n in r.inputs]
        last = end if n in outs else max(readers, default=step[n])
        items.append(("value", n, step[n], last, plan.offset[n], n.nbytes))
        w = n.op.workspace(n)
        if w:
            items.append(("workspace", n, step[n], step[n], plan.workspace_offset[n], w))
    peak = 0
    for i in range(end + 1):
        alive = [it for it in items if it[2] <= i <= it[3]]
        peak = max(peak, sum(it[5] for it in alive))
        for a in range(len(alive)):
            for b in range(a + 1, len(alive)):
                ka, x, _, _, ox, sx = alive[a]
                kb, y, _, _, oy, sy = alive[b]
                if ox < oy + sy and oy < ox + sx:
                    first, second = (x, y) if step[x] <= step[y] else (y, x)
                    inplace = ka == kb == "value" and ox == oy and sx == sy and \
                        step[second] == i and any(second.inputs[p] is first
                                                  for p in second.op.inplace(second))
                    assert inplace, f"{ka} {x.name} and {kb} {y.name} overlap at step {i}"
    return peak


@pytest.mark.parametrize("planner", sorted(PLANNERS))
@pytest.mark.parametrize("seed", range(4))
def test_planners_place_workspaces_by_brute_force(planner, seed):
    outs = _graph(seed)
    plan = PLANNERS[planner](outs)
    works = {n: n.op.workspace(n) for n in plan.order if n.op.computes and n.op.workspace(n)}
    assert works and set(plan.workspace_offset) == set(works)
    check_plan(plan)
    peak = _replay(plan)            # live bytes with workspaces, no in-place credit
    assert ml.memory.order_peak(outs, plan.order) == peak
    assert ml.live_bytes_lower_bound(plan) <= plan.total_bytes


def test_workspace_raises_the_peak_by_its_bytes_at_its_step():
    x, w = ml.placeholder("x", (16, 16)), ml.placeholder("w", (16, 16))
    y = ml.relu(ml.matmul(x, w))
    before = ml.memory.order_peak([y])
    assert before == 2 * 16 * 16 * 4          # relu's step: its input and its output
    ml.graph.set_workspace([y], {"matmul": 10_000})
    # the matmul's step holds its output and the workspace; relu's step, matmul's and relu's outputs
    assert ml.memory.order_peak([y]) == max(16 * 16 * 4 + 10_000, before)
    plan = ml.plan_offsets([y])
    assert plan.total_bytes >= 16 * 16 * 4 + 10_000
    check_plan(plan)


def test_verifier_refuses_a_misplaced_or_missing_workspace():
    outs = _graph(0)
    plan = ml.plan_offsets(outs)
    n = next(iter(plan.workspace_offset))
    bad = ml.memory.offsets.OffsetPlan(plan.outputs, plan.order, plan.offset, plan.total_bytes,
                                       workspace_offset={**plan.workspace_offset,
                                                         n: plan.offset[n]})
    with pytest.raises(ml.PlanError, match="workspace of node"):
        check_plan(bad)
    missing = ml.memory.offsets.OffsetPlan(plan.outputs, plan.order, plan.offset,
                                           plan.total_bytes)
    with pytest.raises(ml.PlanError, match="no place"):
        check_plan(missing)
    with pytest.raises(ml.PlanError, match="workspace"):
        ml.Executor(plan=missing)


def test_executors_hold_a_workspace_during_its_op_only():
    outs = _graph(1)
    feed = {n: np.random.default_rng(0).standard_normal(n.shape).astype(n.dtype)
            for n in ml.topo_order(outs) if n.op is ml.PLACEHOLDER}
    want = ml.Executor(outs).run(feed)
    plan = ml.plan_offsets(outs)
    for ex in (ml.Executor(plan=plan), ml.Executor(outs, memory="pool")):
        for a, b in zip(ex.run(feed), want):
            np.testing.assert_array_equal(a, b)
    naive = ml.Executor(outs)
    naive.run(feed)
    computed = [n for n in naive.order if n.op.computes]
    # the naive executor never reuses: every value and every workspace, to the end
    assert naive.stats.peak_bytes == sum(n.nbytes + n.op.workspace(n) for n in computed)
    pool = ml.Executor(outs, memory="pool")
    pool.run(feed)
    assert pool.stats.peak_bytes >= ml.memory.order_peak(outs, pool.order)


def test_set_workspace_checks_its_table():
    outs = _graph(0)
    for table, match in (([1], "map op names"), ({"conv": -1}, "integer >= 0"),
                         ({"conv": 1.5}, "integer >= 0"), ({3: 1}, "op names")):
        with pytest.raises(ml.MemlabError, match=match):
            ml.graph.set_workspace(outs, table)
    with pytest.raises(ml.MemlabError, match="matmul"):
        ml.graph.set_workspace(outs, {"matmul": lambda n: -5})


def test_a_recomputed_copy_takes_its_originals_workspace():
    m = ml.models.mlp(depth=4, batch=4, n_in=4, hidden=4, n_out=2)
    outs = m["outputs"]
    ml.graph.set_workspace(outs, {"matmul": 256})
    new = ml.checkpoint.recompute_graph(outs, ml.checkpoint.sqrt_checkpoints(outs))
    copies = [n for n in ml.checkpoint.recomputed_nodes(new) if n.attrs["of"].op.name == "matmul"]
    assert copies and all(ml.graph.workspace_of(c) == 256 for c in copies)
    check_plan(ml.plan_offsets(new))

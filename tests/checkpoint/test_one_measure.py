"""One measure of bytes: Checkmate's program (optimal_rematerialization) counts memory as the
planners do (in place over a dying input, a workspace during its op), so a rewrite that
plan_offsets plans in B bytes is a schedule the program admits at budget B, in the same order,
and the program's optimum never recomputes more than that rewrite."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import memlab as ml
from memlab import checkpoint as ck
from memlab.checkpoint.remat_milp import optimal_rematerialization
from memlab.models import mlp

ACTS = {"sigmoid": ml.sigmoid, "relu": ml.relu, "tanh": ml.tanh}
REWRITES = {"sqrt(N)": ck.sqrt_checkpoints, "memonger": ck.memonger,
            "every 2": lambda outs: ck.every_k(outs, 2), "every 3": lambda outs: ck.every_k(outs, 3)}


@st.composite
def training_steps(draw):
    """A small random MLP training step: 2 to 4 layers of random widths, each a product, maybe
    a bias, and an activation; a squared or cross-entropy loss; gradients of some weights and
    maybe of the input; maybe a workspace on the products."""
    batch = draw(st.integers(1, 3))
    widths = draw(st.lists(st.integers(1, 4), min_size=3, max_size=5))
    x = ml.placeholder("x", (batch, widths[0]))
    h, params = x, []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        w = ml.placeholder(f"w{i}", (a, b))
        params.append(w)
        h = ml.matmul(h, w)
        if draw(st.booleans()):
            bias = ml.placeholder(f"b{i}", (b,))
            params.append(bias)
            h = h + bias
        h = ACTS[draw(st.sampled_from(sorted(ACTS)))](h)
    if draw(st.booleans()):
        loss = ml.softmax_cross_entropy(h, ml.placeholder("y", (batch,), np.int32))
    else:
        loss = ml.sum(h * h)
    wrt = [p for p in params if draw(st.booleans())] or params[:1]
    if draw(st.booleans()):
        wrt = [x] + wrt
    outs = [loss, *ml.gradients(loss, wrt)]
    if draw(st.booleans()):
        ml.graph.set_workspace(outs, {"matmul": draw(st.sampled_from([8, 64, 200]))})
    return outs


def _check(outs):
    for name, rewrite in REWRITES.items():
        new = ck.recompute_graph(outs, rewrite(outs))
        plan = ml.plan_offsets(new)
        budget = plan.total_bytes
        # feasible at B in the rewrite's own order, and no worse than the rewrite
        best = optimal_rematerialization(outs, budget, order=plan.order, time_limit=60)
        assert best.recomputations <= len(ck.recomputed_nodes(new)), name


@settings(max_examples=5, deadline=None, derandomize=True)
@given(training_steps())
def test_a_planned_rewrite_is_feasible_and_never_beats_the_optimum(outs):
    _check(outs)


def test_the_sigmoid_mlp_of_the_counterexample_is_consistent():
    """The 4-layer sigmoid MLP step: plan_memory ran store-all in 768 bytes and sqrt(N)'s
    rewrite in 704, while the program, counting no in-place, found no schedule at 704 and needed
    2 recomputations at 800. Counted alike, each planner's bytes admit a schedule no costlier."""
    m = mlp(depth=4, batch=8, n_in=4, hidden=4, n_out=4)
    outs = m["outputs"]
    store_all = ml.plan_memory(outs)
    assert optimal_rematerialization(outs, store_all.total_bytes,
                                     order=store_all.order).recomputations == 0
    new = ck.recompute_graph(outs, ck.sqrt_checkpoints(outs))
    plan = ml.plan_memory(new)
    assert plan.total_bytes < store_all.total_bytes
    best = optimal_rematerialization(outs, plan.total_bytes, order=plan.order)
    assert best.recomputations <= len(ck.recomputed_nodes(new))

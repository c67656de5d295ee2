"""Checkmate's relaxation with two-phase rounding: every schedule it returns replays within the
budget (an independent replay, below), costs at most 10% above the integer program's optimum on
small graphs, and never recomputes more than memonger's rewrite at memonger's own peak."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import memlab as ml
from memlab import checkpoint as ck
from memlab.checkpoint.remat_lp import rounded_rematerialization
from memlab.checkpoint.remat_milp import minimum_budget, optimal_rematerialization
from memlab.models import mlp
from tests.strategies import random_dags


def replay(outputs, stages, order):
    """Run the schedule's computations one after another; return (computations, peak bytes).

    A value lives from its computation to its last read before it is computed again (to the end
    for a graph output). Bytes are counted as the planners count them: an op whose input of its
    size dies at its step, in a position the op may overwrite, writes its output there (p.19-20),
    and an op holds its workspace while it runs. Checks that every input was computed earlier,
    that each stage ends with the next node of ``order`` computed for the first time, and that
    every output is computed."""
    flat = [v for stage in stages for v in stage]
    computed = [n for n in order if n.op.computes]
    firsts = []
    done: set = set()
    for stage in stages:
        new = [v for v in stage if v not in done]
        done.update(stage)
        firsts += new
    assert firsts == computed, "first computations must follow the order"
    outs = {o for o in outputs if o.op.computes}
    end = {}  # position -> last position at which that computation is alive
    latest = {}
    for p, v in enumerate(flat):
        for x in v.inputs:
            if x.op.computes:
                assert x in latest, f"{v.name} reads {x.name} before it is computed"
                end[latest[x]] = p
        latest[v] = p
        end[p] = p
    for o in outs:
        end[latest[o]] = len(flat)
    def step(p):
        v = flat[p]
        held = sum(flat[q].nbytes for q in range(p + 1) if end[q] >= p)
        dying = {flat[q] for q in range(p) if end[q] == p}
        over = any(v.inputs[i] in dying and v.inputs[i].nbytes == v.nbytes
                   for i in v.op.inplace(v))
        return held - (v.nbytes if over else 0) + v.op.workspace(v)

    peak = max(step(p) for p in range(len(flat)))
    return len(flat), peak


def _store_all_peak(outs):
    order = ml.memory_order(outs)  # the default order of both solvers
    return replay(outs, [[v] for v in order if v.op.computes], order)[1]


def _training(outs):
    loss = ml.sum(outs[-1])
    xs = [n for n in ml.topo_order(outs) if n.op is ml.PLACEHOLDER]
    return [loss, *ml.gradients(loss, xs)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_dags(max_nodes=6), st.floats(0, 1.2))
def test_every_rounded_schedule_replays_within_its_budget(dag, frac):
    outs = _training(dag[0])
    low, high = minimum_budget(outs), _store_all_peak(outs)
    budget = low + (high - low) * frac
    try:
        r = rounded_rematerialization(outs, budget, more=64)   # a small second round, to keep it quick
    except ml.BudgetError as e:
        assert budget < high and "least peak reached" in str(e)
        return
    count, peak = replay(outs, r.stages, ml.memory_order(outs))
    assert peak <= budget
    assert count == r.cost == len([n for n in ml.topo_order(outs) if n.op.computes]) + r.recomputations
    assert r.bound <= r.cost + 1e-6


def _graphs():
    for depth in (2, 3, 4):
        m = mlp(depth=depth, batch=2, n_in=3, hidden=3, n_out=2)
        yield f"mlp{depth}-x", [m["loss"], *ml.gradients(m["loss"], [m["x"]])]
        yield f"mlp{depth}-train", m["outputs"]


# the four-layer MLP's integer programs (about 30 s together) in make test-extended
_CASES = [pytest.param(name, outs, frac, id=f"{name}-{frac}",
                       marks=pytest.mark.extended if name.startswith("mlp4") else ())
          for name, outs in _graphs() for frac in (0.0, 0.2, 0.5, 0.8)]


@pytest.mark.parametrize("name, outs, frac", _CASES)
def test_within_ten_percent_of_the_integer_program(name, outs, frac):
    low, high = minimum_budget(outs), _store_all_peak(outs)
    budget = low + (high - low) * frac
    try:
        best = optimal_rematerialization(outs, budget)
    except ml.BudgetError:
        return
    r = rounded_rematerialization(outs, budget)
    assert replay(outs, r.stages, ml.memory_order(outs))[1] <= budget
    assert r.bound <= best.cost + 1e-6  # the relaxation bounds the optimum from below
    assert r.cost <= 1.1 * best.cost, (r.cost, best.cost)


def _first_order(plan):
    """The original nodes in the order a plan of the rewritten graph first computes them (the
    memory-aware order may run a recomputed copy before its original)."""
    seen, order = set(), []
    for n in plan.order:
        if not n.op.computes:
            continue
        original = n.attrs["of"] if n.op is ck.rewrite.RECOMPUTE else n
        if original not in seen:
            seen.add(original)
            order.append(original)
    return order


def _step(depth, wrt):
    m = mlp(depth=depth, batch=4, n_in=4, hidden=4, n_out=3)
    return [m["loss"], *ml.gradients(m["loss"], [m["x"]])] if wrt == "x" else m["outputs"]


def _at_its_peak(outs, keep):
    """A heuristic's rewrite of ``outs`` with its peak, the order in which it first computes the
    original nodes, and its computations."""
    by_name = {n.name: n for n in ml.topo_order(outs)}  # rebuilt backward nodes keep their names
    new = ck.recompute_graph(outs, keep)
    plan = ml.plan_offsets(new)             # in place, as the solvers count bytes
    order = [by_name[n.name] for n in _first_order(plan)]
    computations = len([n for n in ml.topo_order(new) if n.op.computes])
    return new, ml.live_bytes_lower_bound(plan), order, computations


# depth 6 (about 10 s each) in make test-extended
@pytest.mark.parametrize("depth, wrt", [(3, "x"), (3, "params"),
                                        *(pytest.param(6, w, marks=pytest.mark.extended)
                                          for w in ("x", "params"))])
def test_never_worse_than_memonger_at_its_peak(depth, wrt):
    outs = _step(depth, wrt)
    for keep in (ck.memonger(outs), ck.sqrt_checkpoints(outs)):
        new, peak, order, computations = _at_its_peak(outs, keep)
        # without the second round, so quicker: it only adds candidates, so it can only do better
        r = rounded_rematerialization(outs, peak, order=order, more=0)
        assert replay(outs, r.stages, order)[1] <= peak
        assert r.cost <= computations


def test_a_budget_below_the_minimum_names_it():
    m = mlp(depth=2, batch=2, n_in=3, hidden=3, n_out=2)
    outs = m["outputs"]
    low = minimum_budget(outs)
    with pytest.raises(ml.BudgetError, match=f"the minimum is {low} bytes"):
        rounded_rematerialization(outs, low - 1)
    with pytest.raises(ml.PlanError, match="samples"):
        rounded_rematerialization(outs, 10**6, samples=-1)
    with pytest.raises(ml.PlanError, match="more"):
        rounded_rematerialization(outs, 10**6, more=1.5)
    with pytest.raises(ml.PlanError, match="not topological"):
        rounded_rematerialization(outs, 10**6, order=ml.topo_order(outs)[::-1])


@pytest.mark.parametrize("depth, wrt", [(6, "x"), (6, "params"), (16, "x")])
def test_a_rewrite_as_a_starting_schedule_is_exact(depth, wrt):
    """``held_of``: memonger's and sqrt(N)'s rewrites as held values, completed by phase two and
    replayed by the independent simulator, cost and hold exactly what the rewrite does; as an
    incumbent the rounding returns no more than it."""
    from memlab.checkpoint.remat_lp import complete, held_of
    from memlab.checkpoint.remat_milp import build_problem
    outs = _step(depth, wrt)
    for keep in (ck.memonger(outs), ck.sqrt_checkpoints(outs)):
        new, peak, order, computations = _at_its_peak(outs, keep)
        p = build_problem(outs, peak, lambda v: 1.0, order, None)
        R, _ = complete(p, held_of(p, new))
        stages = [[p.order[j] for j in np.flatnonzero(R[t])] for t in range(len(R))]
        assert replay(outs, stages, order) == (computations, peak)
    if depth == 6:
        r = rounded_rematerialization(outs, peak, order=order, incumbent=new, more=0)
        assert r.cost <= computations and replay(outs, r.stages, order)[1] <= peak
    dfs = [n for n in ml.topo_order(outs) if n.op.computes]
    if dfs != order:                  # the rewrite's first computations follow another order
        with pytest.raises(ml.PlanError, match="order"):
            held_of(build_problem(outs, peak, lambda v: 1.0, dfs, None), new)


def test_with_an_incumbent_never_worse_than_it_on_a_big_graph():
    """Blocked stages (forced here, as beyond CELLS) cannot always hold a rewrite's schedule; the
    rewrite's own schedule is then the answer when it is cheaper: replayed within the budget, with
    the rewrite's computations."""
    outs = _step(12, "x")
    new, peak, order, computations = _at_its_peak(outs, ck.memonger(outs))
    with pytest.raises(ml.BudgetError):     # two blocked stages: no rounding fits on its own
        rounded_rematerialization(outs, peak, order=order, more=0, stages=2, improve=0.5)
    r = rounded_rematerialization(outs, peak, order=order, incumbent=new, more=0, stages=2,
                                  improve=0.5)
    count, held = replay(outs, r.stages, order)
    assert held <= peak and count == r.cost == computations

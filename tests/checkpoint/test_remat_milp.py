"""Checkmate's integer program: equal to a search over every schedule in the same order, never
beaten by sqrt(N) or memonger given their order and their peak."""
from __future__ import annotations

import heapq
import itertools

import numpy as np
import pytest

import memlab as ml
from memlab import checkpoint as ck
from memlab.checkpoint.remat_milp import minimum_budget, optimal_rematerialization
from memlab.models import mlp


def search(outputs, budget, order):
    """Fewest computations over every schedule whose first computations follow ``order``
    (A* over (held values, how many nodes were computed at least once), guided by the nodes not
    yet computed, each at least one computation: a consistent bound), bytes counted as
    the planners count them: an op holds its workspace while it runs, and may write its output
    over an input of its size that its op lets it overwrite, that input then dropped."""
    order = [n for n in order if n.op.computes]
    n, pos = len(order), {v: i for i, v in enumerate(order)}
    ins = [[pos[x] for x in dict.fromkeys(v.inputs) if x in pos] for v in order]
    size = [v.nbytes for v in order]
    work = [v.op.workspace(v) for v in order]
    outs = frozenset(pos[o] for o in outputs if o in pos)
    over = [{pos[v.inputs[p]] for p in v.op.inplace(v) if v.inputs[p] in pos
             and v.inputs[p].nbytes == v.nbytes and pos[v.inputs[p]] not in outs} for v in order]
    start = (frozenset(), 0)
    dist, tick, heap = {start: 0}, itertools.count(), [(n, 0, 0, 0, start)]
    while heap:
        _, _, _, d, (held, f) = heapq.heappop(heap)
        if d > dist[(held, f)]:
            continue
        if f == n and outs <= held:
            return d
        mem = sum(size[i] for i in held)
        ready = [k for k in range(min(f + 1, n))
                 if k not in held and all(i in held for i in ins[k])]
        moves = [((held | {k}, max(f, k + 1)), 1) for k in ready
                 if mem + size[k] + work[k] <= budget]
        moves += [(((held | {k}) - {i}, max(f, k + 1)), 1) for k in ready
                  for i in over[k] & held if mem + work[k] <= budget]
        moves += [((held - {i}, f), 0) for i in held if i not in outs]
        for s, w in moves:
            if dist.get(s, 1e18) > d + w:
                dist[s] = d + w
                heapq.heappush(heap, (d + w + n - s[1], -s[1], next(tick), d + w, s))
    return float("inf")


def _graphs():
    for depth in (1, 2):
        m = mlp(depth=depth, batch=2, n_in=3, hidden=3, n_out=2)
        yield f"mlp{depth}", [m["loss"], *ml.gradients(m["loss"], [m["x"]])]
    x, w = ml.placeholder("x", (2, 3)), ml.placeholder("w", (3, 3))
    h = ml.tanh(ml.matmul(x, w))
    loss = ml.sum(h * ml.sigmoid(h) + h)          # a branch
    yield "branch", [loss, *ml.gradients(loss, [x])]


@pytest.mark.parametrize("method", [None, "dfs"])
@pytest.mark.parametrize("name, outs", list(_graphs()), ids=lambda v: v if isinstance(v, str) else "")
def test_the_program_equals_exhaustive_search(name, outs, method):
    # default: the memory-aware order of the planners; "dfs": the depth-first one
    order = ml.memory_order(outs) if method is None else ml.topo_order(outs)
    low = minimum_budget(outs, method)
    total = sum(n.nbytes for n in order if n.op.computes)
    for budget in sorted({low, low + 8, low + 16, low + 32, low + 64, total}):
        want = search(outs, budget, order)
        if want == float("inf"):
            with pytest.raises(ml.BudgetError):
                optimal_rematerialization(outs, budget, order=method)
            continue
        got = optimal_rematerialization(outs, budget, order=method)
        assert got.cost == want, (name, budget)
        assert got.recomputations == want - len([n for n in order if n.op.computes])
        assert got.optimal and got.bound == pytest.approx(want)


@pytest.mark.parametrize("depth", [3])
def test_never_beaten_by_sqrt_or_memonger(depth):
    m = mlp(depth=depth, batch=4, n_in=4, hidden=4, n_out=3)
    outs = [m["loss"], *ml.gradients(m["loss"], [m["x"]])]
    for keep in (ck.sqrt_checkpoints(outs), ck.memonger(outs), ck.every_k(outs, 2)):
        new = ck.recompute_graph(outs, keep)
        plan = ml.plan_offsets(new, inplace=False)
        peak = ml.live_bytes_lower_bound(plan)
        # the plan's own order: copies read as what they copy, rebuilt nodes as the originals
        best = optimal_rematerialization(outs, peak, order=plan.order)
        assert best.recomputations <= len(ck.recomputed_nodes(new))


def test_bad_input():
    m = mlp(depth=2, batch=2, n_in=3, hidden=3, n_out=2)
    outs = [m["loss"], *ml.gradients(m["loss"], [m["x"]])]
    with pytest.raises(ml.BudgetError, match="the minimum is"):
        optimal_rematerialization(outs, 1)
    with pytest.raises(ml.PlanError, match="not topological"):
        optimal_rematerialization(outs, 10**6, order=ml.topo_order(outs)[::-1])
    big = mlp(depth=20, batch=2, n_in=3, hidden=3, n_out=2)["outputs"]  # 142 nodes
    with pytest.raises(ml.PlanError, match="above the limit"):
        optimal_rematerialization(big, 10**9)


def test_the_optimum_curve_equals_exhaustive_search():
    """The curve, budget by budget, against the exhaustive search; it ends where the search
    finds no schedule, and fewer bytes never cost fewer recomputations."""
    outs = next(g for name, g in _graphs() if name == "mlp1")
    order = ml.memory_order(outs)
    computed = len([n for n in order if n.op.computes])
    low = minimum_budget(outs)
    budgets = [low + 8 * k for k in range(8)]
    curve = ck.optimum_curve(outs, budgets)
    feasible = [b for b in budgets if search(outs, b, order) < float("inf")]
    assert [b for b, _ in curve] == feasible
    assert [r for _, r in curve] == [search(outs, b, order) - computed for b in feasible]
    assert len(curve) > 1 and all(a[1] >= b[1] for a, b in zip(curve, curve[1:]))


def test_workspaces_count_at_their_step_as_in_the_search():
    """With workspaces on the matrix products, the program still equals the exhaustive search,
    which holds an op's workspace while the op runs only."""
    m = mlp(depth=1, batch=2, n_in=3, hidden=3, n_out=2)
    outs = [m["loss"], *ml.gradients(m["loss"], [m["x"]])]
    ml.graph.set_workspace(outs, {"matmul": 40})
    order = ml.memory_order(outs)
    low = minimum_budget(outs)
    for budget in (low, low + 16, low + 48):
        want = search(outs, budget, order)
        if want == float("inf"):
            with pytest.raises(ml.BudgetError):
                optimal_rematerialization(outs, budget)
            continue
        assert optimal_rematerialization(outs, budget).cost == want


def test_a_program_asked_again_is_answered_without_solving_it_again(monkeypatch):
    """The same integer program (same graph, budget, order) is solved once and answered the same;
    another budget, or a workspace set on the graph since, is a new program."""
    import scipy.optimize

    from memlab.checkpoint import remat_milp

    real, calls = scipy.optimize.milp, []
    monkeypatch.setattr(scipy.optimize, "milp", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(remat_milp, "_SOLVED", {})
    m = mlp(depth=1, batch=2, n_in=3, hidden=3, n_out=2)
    outs = [m["loss"], *ml.gradients(m["loss"], [m["x"]])]
    low = minimum_budget(outs)
    first = optimal_rematerialization(outs, low + 16)
    again = optimal_rematerialization(outs, low + 16)
    assert len(calls) == 1 and again == first
    optimal_rematerialization(outs, low + 48)
    assert len(calls) == 2
    ml.graph.set_workspace(outs, {"matmul": 40})
    optimal_rematerialization(outs, minimum_budget(outs) + 16)
    assert len(calls) == 3

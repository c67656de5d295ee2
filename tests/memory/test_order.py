"""The memory-aware execution order (seed 002 part 1, "Sequential problem"): every method gives a
topological order; "exact" equals a brute force over every order; "best" never above depth-first;
every order computes the same values under every planner and executor; bad input is refused."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import memlab as ml
from memlab.errors import PlanError
from memlab.memory.order import METHODS, PREFERENCE, memory_order, order_peak
from memlab.models import mlp, training_outputs
from strategies import all_topological_orders, random_dags

HEURISTICS = ("greedy", "autograd", "reverse_dfs", "dfs", "best")


def brute_peak(order, outputs):
    """Most bytes alive at one step, counted value by value from the definition: a computed value
    is alive from its step to the step of its last reader; outputs to the end."""
    pos = {n: i for i, n in enumerate(order)}
    outs = set(outputs)
    alive = []
    for v in order:
        if not v.op.computes:
            continue
        readers = [pos[r] for r in order if v in r.inputs]
        end = len(order) if v in outs else max(readers, default=pos[v])
        alive.append((pos[v], end, v.nbytes))
    return max((sum(b for a, e, b in alive if a <= i <= e) for i in range(len(order) + 1)), default=0)


def is_topological(order, outputs):
    need = ml.topo_order(outputs)
    pos = {n: i for i, n in enumerate(order)}
    return (len(order) == len(need) and set(order) == set(need)
            and all(pos[x] < pos[n] for n in order for x in n.inputs))


@settings(max_examples=40, deadline=None)
@given(random_dags(max_nodes=12))
def test_every_method_gives_a_topological_order(data):
    outs, _ = data
    for method in HEURISTICS:
        order = memory_order(outs, method)
        assert is_topological(order, outs), method
        assert order_peak(outs, order) == brute_peak(order, outs), method
    assert memory_order(outs, "dfs") == ml.topo_order(outs)
    assert memory_order(outs, "reverse_dfs") == ml.topo_order(outs[::-1])


@settings(max_examples=30, deadline=None)
@given(random_dags(max_nodes=7))
def test_exact_is_the_least_peak_over_every_order(data):
    outs, _ = data
    ops = [n for n in ml.topo_order(outs) if n.op.computes]
    leaves = [n for n in ml.topo_order(outs) if not n.op.computes]
    preds = {n: [x for x in n.inputs if x.op.computes] for n in ops}
    least = min(brute_peak(leaves + o, outs) for o in all_topological_orders(ops, preds))
    exact = memory_order(outs, "exact")
    assert is_topological(exact, outs)
    assert brute_peak(exact, outs) == least
    peaks = {m: brute_peak(memory_order(outs, m), outs) for m in HEURISTICS}
    assert min(peaks.values()) >= least
    assert peaks["best"] <= peaks["dfs"]
    # "best" is the least of the heuristics (ties to the first in PREFERENCE), sifted: never above
    heuristic = min(peaks[m] for m in PREFERENCE)
    assert peaks["best"] <= heuristic
    if peaks["best"] == heuristic:      # sifting keeps only moves that lower the peak
        first = next(m for m in PREFERENCE if peaks[m] == heuristic)
        assert memory_order(outs, "best") == memory_order(outs, first)


def definition_greedy(outputs):
    """The greedy order from its definition, every score worked out again at every step: of the
    ready nodes, run the one whose step changes the bytes held the least (its bytes, less those of
    the inputs it is the last to read; outputs are kept), ties to the depth-first position."""
    nodes = ml.topo_order(outputs)
    pos = {n: i for i, n in enumerate(nodes)}
    outs = set(outputs)
    ins = [list(dict.fromkeys(n.inputs)) for n in nodes]
    readers = [[r for r in nodes if n in r.inputs] for n in nodes]
    size = [n.nbytes if n.op.computes else 0 for n in nodes]
    ran: set = set()
    order = []
    while len(order) < len(nodes):
        ready = [n for n in nodes if n not in ran and all(x in ran for x in ins[pos[n]])]

        def score(n):
            freed = sum(size[pos[x]] for x in ins[pos[n]] if x not in outs
                        and all(r in ran or r is n for r in readers[pos[x]]))
            return size[pos[n]] - freed, pos[n]
        best = min(ready, key=score)
        ran.add(best)
        order.append(best)
    return order


@settings(max_examples=60, deadline=None)
@given(random_dags(max_nodes=12))
def test_greedy_is_its_definition(data):
    outs, _ = data
    assert memory_order(outs, "greedy") == definition_greedy(outs)


def test_greedy_with_an_op_of_no_bytes():
    """Given values leave first, unless an op of 0 bytes (an empty slice) ties with them."""
    x, y = ml.placeholder("x", (3, 8)), ml.placeholder("y", (3, 8))
    empty = ml.slice_axis(x, -1, 2, 2)
    outs = [ml.exp(empty) * ml.exp(empty), ml.exp(x) + y]
    assert empty.nbytes == 0
    order = memory_order(outs, "greedy")
    assert order == definition_greedy(outs)
    assert order.index(empty) < order.index(y)     # it ties with the given values, by position


def test_the_autograd_order_is_the_graphs_own():
    """The autograd order reads the adjoints of the graph it orders: differentiating the same
    forward graph again, and dropping that second gradient, leave it as it was."""
    import gc
    m = mlp(4, batch=8, n_in=8, hidden=8, n_out=4)
    outs = m["outputs"]
    before = memory_order(outs, "autograd")
    again = ml.gradients(m["loss"], m["params"])
    assert memory_order(outs, "autograd") == before
    del again
    gc.collect()
    assert memory_order(outs, "autograd") == before


def test_sifting_lowers_the_peak_of_a_bad_order():
    """The local search of "best", started from the depth-first order of a training step (where
    it holds every gradient): a topological order of lower peak, counted by brute force, and no
    lower than the exact minimum."""
    from memlab.memory.liveness import IndexedGraph
    from memlab.memory.order import _sift
    outs = mlp(2, batch=64, n_in=16, hidden=16, n_out=4)["outputs"]
    dfs = ml.topo_order(outs)
    graph = IndexedGraph(outs)
    sifted = [graph.nodes[i] for i in _sift(graph, list(range(len(dfs))))]
    assert is_topological(sifted, outs)
    least = brute_peak(memory_order(outs, "exact"), outs)
    assert least <= brute_peak(sifted, outs) < brute_peak(dfs, outs)


@settings(max_examples=20, deadline=None)
@given(random_dags(max_nodes=10))
def test_every_order_computes_the_same_values(data):
    outs, feed = data
    want = ml.Executor(outs, order="dfs").run(feed)
    for method in HEURISTICS:
        runs = [ml.Executor(outs, order=method), ml.Executor(outs, memory="pool", order=method),
                ml.Executor(outs, plan=ml.plan_memory(outs, order=method)),
                ml.Executor(outs, plan=ml.plan_offsets(outs, order=method))]
        for ex in runs:
            for a, b in zip(want, ex.run(feed)):
                np.testing.assert_array_equal(a, b, err_msg=method)
        assert ml.plan_memory(outs, order=method).order == memory_order(outs, method)


def test_training_step_default_order():
    """The issue's example: on [loss, dW1, ..., dWn] the depth-first order holds every input
    gradient; the autograd order runs each layer's weight gradient with its input gradient."""
    m = mlp(depth=8, batch=64, n_in=16, hidden=16, n_out=4)
    outs = training_outputs(m)
    order = memory_order(outs, "autograd")
    forward = set(ml.topo_order(outs[0]))
    ops = [n for n in order if n.op.computes]
    first_backward = next(i for i, n in enumerate(ops) if n not in forward)
    assert all(n in forward for n in ops[:first_backward])
    assert not any(n in forward for n in ops[first_backward:])
    pos = {n: i for i, n in enumerate(order)}
    assert [pos[g] for g in outs[1:]] == sorted((pos[g] for g in outs[1:]), reverse=True)
    dfs, best = brute_peak(ml.topo_order(outs), outs), brute_peak(memory_order(outs), outs)
    assert best < 0.7 * dfs
    assert ml.plan_offsets(outs).total_bytes < ml.plan_offsets(outs, order="dfs").total_bytes
    assert ml.live_bytes_lower_bound(ml.plan_memory(outs)) <= best


def test_autograd_order_on_a_checkpointed_step():
    """A rewrite rebuilds the backward ops that read recomputed copies; the autograd order must
    still recognise their gradients and run each copy with its group, as PyTorch's checkpointing
    recomputes a segment when the backward pass reaches it (it used to run every weight gradient
    last and hold every recomputed value: 1.9x store all)."""
    from memlab import checkpoint as ck
    m = mlp(depth=12, batch=64, n_in=16, hidden=16, n_out=4)
    outs = training_outputs(m)
    new = ck.recompute_graph(outs, ck.sqrt_checkpoints(outs))
    order = memory_order(new, "autograd")
    assert is_topological(order, new)
    assert brute_peak(order, new) < 0.8 * brute_peak(memory_order(outs, "autograd"), outs)
    pos = {n: i for i, n in enumerate(order)}
    assert [pos[g] for g in new[1:]] == sorted((pos[g] for g in new[1:]), reverse=True)


def test_explicit_orders_still_work():
    g = ml.models.slide22()
    plan = ml.plan_memory(g["G"], order=g["order"])
    assert plan.order == g["order"]
    ex = ml.Executor(g["G"], memory="pool", order=g["order"])
    assert ex.order == g["order"]


def test_bad_input():
    g = ml.models.slide22()
    with pytest.raises(PlanError, match="method must be one of 'best', 'greedy'.*got 'fast'"):
        memory_order(g["G"], "fast")
    # the caller passed order=, so the message names order (not memory_order's method)
    with pytest.raises(PlanError, match="order must be None .*'dfs'.*got 'fast'"):
        ml.plan_offsets(g["G"], order="fast")
    bad = [g["A"], g["C"], g["B"], g["F"], g["E"], g["G"]]  # C reads B
    with pytest.raises(PlanError, match="not topological: node 'C' comes before its input 'B'"):
        ml.plan_memory(g["G"], order=bad)
    with pytest.raises(PlanError, match="not topological: node 'C'"):
        ml.Executor(g["G"], order=bad)
    with pytest.raises(ml.MemlabError, match="own order"):
        ml.Executor(g["G"], plan=ml.plan_memory(g["G"]), order="dfs")
    big = mlp(depth=6, batch=2, n_in=3, hidden=3, n_out=2)["outputs"]
    with pytest.raises(PlanError, match="above the limit max_ops=24"):
        memory_order(big, "exact")
    assert set(METHODS) == {"best", "exact", *HEURISTICS}

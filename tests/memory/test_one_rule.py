"""One rule of live bytes (memlab.memory.liveness): every path that measures the bytes alive at a
step of an order gives the same bytes at every step as a count from the definition, written here
value by value: the order's methods, ``Liveness`` built by ``prepare`` and by ``plan_liveness``,
the lower bound of every planner's plan, ``order_peak``, the exact search's incremental form
(``search_tasks``, replayed) and the verifier's lifetimes; on random graphs with in-place ops,
values read twice by one op, workspaces and given values."""
from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings, strategies as st

import memlab as ml
from memlab.memory.liveness import IndexedGraph, lifetimes, prepare, search_tasks
from memlab.memory.offsets import live_bytes_lower_bound, plan_offsets, plan_tags_by_size
from memlab.memory.order import METHODS, memory_order, order_peak, plan_liveness
from memlab.memory.planner import plan_memory
from strategies import planning_graphs


def definition(order, outputs, inplace=False):
    """Bytes alive at each step 0..len(order), from the definition: a computed value from its step
    to its last reader's (an output to the end), a given value never, each op's workspace
    (``op.workspace``) at its step; with ``inplace``, an input the op may overwrite
    (``op.inplace``, same bytes, computed, not an output) whose last reader is this op is counted
    once with the output (the first such position)."""
    pos = {n: i for i, n in enumerate(order)}
    end = {}
    for v in order:
        if v.op.computes:
            readers = [pos[r] for r in order if any(x is v for x in r.inputs)]
            end[v] = len(order) if any(v is o for o in outputs) else max(readers, default=pos[v])
    curve = []
    for i in range(len(order) + 1):
        total = sum(v.nbytes for v in end if pos[v] <= i <= end[v])
        if i < len(order):
            n = order[i]
            if n.op.computes:
                total += n.op.workspace(n)
                if inplace:
                    for p in n.op.inplace(n):
                        x = n.inputs[p]
                        if x in end and end[x] == i and x.nbytes == n.nbytes:
                            total -= x.nbytes
                            break
        curve.append(total)
    return curve


def random_topological_order(outputs, rng):
    nodes = ml.topo_order(outputs)
    done, order = set(), []
    while len(order) < len(nodes):
        ready = [n for n in nodes if n not in done and all(x in done for x in n.inputs)]
        n = rng.choice(ready)
        done.add(n)
        order.append(n)
    return order


def replay_tasks(graph, order):
    """The held bytes of the exact search's incremental form (search_tasks) at each op's step of
    ``order`` (nodes), each free task run right after its value's last reader."""
    tasks, needs, cost, delta = search_tasks(graph)
    ops = [t for t in tasks if t is not None]
    bit_of = {t: 1 << k for k, t in enumerate(ops)}
    frees = [k for k, t in enumerate(tasks) if t is None]
    held, done, at = 0, 0, {}
    for step, n in enumerate(order):
        i = graph.index[n]
        if i not in bit_of:
            continue
        k = ops.index(i)
        assert needs[k] & done == needs[k]
        at[step] = held + cost[k]
        held += delta[k]
        done |= bit_of[i]
        for f in frees:
            if needs[f] & done == needs[f] and not done & (1 << f):
                held += delta[f]
                done |= 1 << f
    return at


@settings(max_examples=60, deadline=None)
@given(planning_graphs(max_nodes=10), st.integers(0, 2**16))
def test_every_path_gives_the_same_bytes_at_every_step(data, seed):
    outs, _ = data
    rng = random.Random(seed)
    orders = {m: memory_order(outs, m) for m in METHODS if m != "exact"}
    orders["random"] = random_topological_order(outs, rng)
    graph = IndexedGraph(outs)
    assert graph.nodes == ml.topo_order(outs)
    for name, order in orders.items():
        want = definition(order, outs)
        want_inplace = definition(order, outs, inplace=True)
        idx = graph.positions(order)
        assert graph.step_bytes(idx).tolist() == want, name
        assert graph.step_bytes(idx, inplace=True).tolist() == want_inplace, name
        live = prepare(outs, order)
        assert live.live_bytes().tolist() == want, name
        assert live.live_bytes(inplace=True).tolist() == want_inplace, name
        assert order_peak(outs, order) == max(want), name
        for plan in (plan_memory(outs, order=order), plan_offsets(outs, order=order),
                     plan_tags_by_size(outs, order=order)):
            assert live_bytes_lower_bound(plan) == max(want_inplace), name
            assert plan.total_bytes >= max(want_inplace)
            ml.check_plan(plan)
        bare = plan_memory(outs, order=order, inplace=False)
        assert live_bytes_lower_bound(bare) == max(want), name
        # the exact search's incremental form: the same bytes at every op's step
        for step, held in replay_tasks(graph, order).items():
            assert held == want[step], (name, step)
        # lifetimes as the lessons and the verifier read them
        life = lifetimes(order, outs)
        for v, (a, b) in life.items():
            assert all((a <= i <= b) == (v in alive_at(order, outs, i)) for i in range(len(order) + 1))
    for m in METHODS:
        if m == "exact" and len(search_tasks(graph)[0]) > 14:
            continue
        live = plan_liveness(outs, m)
        assert live.live_bytes().tolist() == definition(live.order, outs), m


def alive_at(order, outputs, i):
    """The computed values alive at step ``i``, by the definition."""
    out = set()
    for k, v in enumerate(order):
        if not v.op.computes or k > i:
            continue
        later = [j for j, r in enumerate(order) if any(x is v for x in r.inputs)]
        end = len(order) if any(v is o for o in outputs) else max(later, default=k)
        if i <= end:
            out.add(v)
    return out


@settings(max_examples=25, deadline=None)
@given(planning_graphs(max_nodes=6))
def test_the_exact_search_finds_the_least_peak_of_the_rule(data):
    """The incremental form is the rule: the exact order's peak, by the definition, is the least
    over every topological order (brute force)."""
    from strategies import all_topological_orders
    outs, _ = data
    nodes = ml.topo_order(outs)
    given_values = [n for n in nodes if not n.op.computes]
    ops = [n for n in nodes if n.op.computes]
    preds = {n: [x for x in n.inputs if x.op.computes] for n in ops}
    least = min(max(definition(given_values + o, outs)) for o in all_topological_orders(ops, preds))
    assert max(definition(memory_order(outs, "exact"), outs)) == least


def test_a_value_read_twice_counts_once():
    x = ml.placeholder("x", (4, 4))
    y = ml.tanh(x)
    z = ml.mul(y, y)
    live = prepare([z], None)
    assert live.refcounts[y] == 1
    assert live.live_bytes().tolist() == [0, 64, 128, 64]
    assert np.array_equal(live.live_bytes(inplace=True), [0, 64, 64, 64])

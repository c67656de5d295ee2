"""Issue 23, item 4: the near-linear ``recompute_graph`` builds exactly the graph of the quadratic
one it replaced (kept verbatim in ``_reference_rewrite.py``), and its gradients equal store all."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from _reference_rewrite import recompute_graph as reference_recompute_graph
from strategies import random_dags

import memlab as ml
from memlab import checkpoint as ck
from memlab.checkpoint.rewrite import forward_nodes
from memlab.models import lstm, resnet, training_outputs


def canonical(outputs):
    """The rewritten graph as plain data, from a deterministic walk (each node after its inputs, in
    input order): per node its op, name, shape, the original it copies (by identity), whether it
    is a node of the original graph (by identity) and where its inputs are, control deps included."""
    order = ml.topo_order(outputs)
    pos = {n: i for i, n in enumerate(order)}
    return [(n.op.name, n.name, n.shape, id(n.attrs["of"]) if n.op is ck.rewrite.RECOMPUTE else None,
             n.attrs.get("arity"), id(n) if n.id < FIRST_NEW[0] else None,
             tuple(pos[x] for x in n.inputs)) for n in order] + [tuple(pos[o] for o in outputs)]


FIRST_NEW = [0]  # node ids from here on were made by a rewrite: compared by position, not identity


def _same_rewrite(outs, keep):
    FIRST_NEW[0] = ml.placeholder("mark").id
    want = canonical(reference_recompute_graph(outs, keep))
    got = canonical(ck.recompute_graph(outs, keep))
    assert got == want
    return ck.recompute_graph(outs, keep)


def _random_levels(outs, rng):
    cands = [n for n in forward_nodes(outs) if n is not outs[0]]
    levels = [{n for n in cands if rng.random() < p} for p in rng.uniform(0, 0.7, rng.integers(1, 4))]
    return levels[0] if len(levels) == 1 and rng.random() < 0.5 else levels


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(dag=random_dags(max_nodes=12), seed=st.integers(0, 2**16),
       addto=st.sampled_from([False, True, "all"]))
def test_same_graph_as_the_reference_on_random_training_graphs(dag, seed, addto):
    outs, feed = dag
    xs = [n for n in feed]
    loss = ml.sum(outs[0])
    for o in outs[1:]:
        loss = loss + ml.sum(o)
    train = [loss, *ml.gradients(loss, xs, addto=addto)]
    keep = _random_levels(train, np.random.default_rng(seed))
    new = _same_rewrite(train, keep)
    want = ml.Executor(train).run(feed)
    assert all(np.array_equal(u, v) for u, v in zip(want, ml.Executor(new).run(feed)))


@pytest.mark.parametrize("model", [lambda: lstm(6, batch=2, hidden=4), lambda: resnet(6, 4)])
@pytest.mark.parametrize("wrt", ["params", "data"])
def test_same_graph_as_the_reference_on_the_zoo(model, wrt):
    outs = training_outputs(model(), wrt)
    for keep in (ck.every_k(outs, 2), ck.every_k(outs, 4), ck.sqrt_checkpoints(outs),
                 ck.recursive_checkpoints(outs, 2), ck.recursive_checkpoints(outs, 3), set()):
        _same_rewrite(outs, keep)
    rng = np.random.default_rng(7)
    for _ in range(5):
        _same_rewrite(outs, _random_levels(outs, rng))


def _reaches(src, dst):
    """Brute force: whether ``dst`` depends on ``src`` (a walk of its inputs)."""
    return src in set(ml.topo_order(dst))


@settings(max_examples=60)
@given(data=st.data(), n=st.integers(2, 12))
def test_the_dynamic_order_answers_like_a_walk_and_stays_topological(data, n):
    """The cycle check's machinery on its own: random DAGs, then random edges added whenever they
    close no cycle, many of them against the current order so that nodes must be re-placed."""
    from memlab.checkpoint.rewrite import _DynamicOrder
    nodes = [ml.placeholder(f"p{i}", (1,)) for i in range(2)]
    for _ in range(n):
        a, b = data.draw(st.sampled_from(nodes)), data.draw(st.sampled_from(nodes))
        nodes.append(a + b)
    starts = data.draw(st.permutations(nodes))
    order = _DynamicOrder(list(starts))
    for _ in range(data.draw(st.integers(1, 15))):
        a, r = data.draw(st.sampled_from(nodes)), data.draw(st.sampled_from(nodes[2:]))
        sources = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=3))
        assert order.reaches(sources, a) == any(s is not a and _reaches(s, a) for s in sources)
        if a is not r and not _reaches(r, a):
            order.add_edge(a, r)
            r.inputs.append(a)
        assert all(order.place[x] < order.place[m] for m in nodes for x in m.inputs)

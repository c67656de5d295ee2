"""Graphs, trees, task graphs and chains as plain data, and back (what crosses between the judge and a
student's kernel): every structure round-trips through the codec to an equal one."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memlab as ml
from memlab.checkpoint.chain import Backward, Forward, Free, action_from_plain, action_to_plain
from memlab.checkpoint.hetero import HeteroChain
from memlab.errors import GraphError, ScheduleError, TreeError, UnknownOpError
from memlab.grading.codec import decode, encode
from memlab.graph.node import Node, Op
from memlab.graph.plain import from_plain, to_plain
from memlab.scheduling.taskgraph import TaskGraph, random_taskgraph
from memlab.scheduling.treebase import Tree
from memlab.testing import random_graph

from strategies import parent_arrays


def _wire(x):
    return decode(encode(x))


def _same_graph(a: list[Node], b: list[Node]) -> None:
    """Two graphs are the same: same nodes in the same order, ops, names, shapes, dtypes, attrs,
    constants and inputs (by position)."""
    oa, ob = ml.topo_order(a), ml.topo_order(b)
    assert len(oa) == len(ob)
    pos = {id(n): i for i, n in enumerate(oa)}
    posb = {id(n): i for i, n in enumerate(ob)}
    for x, y in zip(oa, ob):
        assert (x.op, x.name, x.shape, x.dtype, x.scope) == (y.op, y.name, y.shape, y.dtype, y.scope)
        assert [pos[id(i)] for i in x.inputs] == [posb[id(i)] for i in y.inputs]
        assert (x.value is None) == (y.value is None)
        if x.value is not None:
            assert np.array_equal(x.value, y.value) and x.value.dtype == y.value.dtype
        assert set(x.attrs) == set(y.attrs)
        for k in x.attrs:
            va, vb = x.attrs[k], y.attrs[k]
            if isinstance(va, Node):
                assert pos[id(va)] == posb[id(vb)]
            else:
                assert type(va) is type(vb) and va == vb


def _round_trip(outputs: list[Node]) -> list[Node]:
    records, keys = to_plain(outputs)
    nodes = from_plain(_wire(records))
    return [nodes[keys[o]] for o in outputs]


@pytest.mark.parametrize("build", [
    lambda: ml.models.mlp()["outputs"],
    lambda: ml.models.mlp(depth=3, act="relu")["outputs"],
    lambda: [(c := ml.models.conv_resnet(blocks=2))["loss"], *ml.gradients(c["loss"], c["params"])],
    lambda: [ml.models.slide22()["G"]],
    lambda: [ml.models.slide23()["A[8]"]],
    lambda: [(r := ml.models.shape_only.alexnet())["loss"], *ml.gradients(r["loss"], r["params"])],
], ids=["mlp", "mlp-relu", "conv-resnet-grads", "slide22", "slide23", "shape-only-resnet"])
def test_models_round_trip(build):
    outs = build()
    _same_graph(outs, _round_trip(outs))


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.booleans(), st.integers(4, 25))
def test_random_graphs_round_trip(seed, branchy, n):
    outs = random_graph(seed, n=n, shape=(2, 2), branchy=branchy)
    _same_graph(outs, _round_trip(outs))


def test_known_nodes_are_named_by_key_and_kept():
    a = ml.placeholder("a", (2,))
    y = ml.exp(a) * 2
    records, keys = to_plain([y], known={a: "A"})
    assert keys[a] == "A" and all(r["key"] != "A" for r in records)
    mine = ml.placeholder("a", (2,))
    nodes = from_plain(_wire(records), known={"A": mine})
    assert nodes["A"] is mine and mine in ml.topo_order(nodes[keys[y]])


def test_scopes_and_node_attrs_cross():
    with ml.graph.scope("layer", 3):
        x = ml.placeholder("x", (2, 3))
        h = ml.tanh(ml.matmul(x, ml.placeholder("w", (3, 4))))
    s = ml.sum(h, axis=(0,), keepdims=True)
    back = _round_trip([s])
    _same_graph([s], back)
    assert back[0].inputs[0].scope == h.scope and h.scope is not None


@pytest.mark.parametrize("edit, error", [
    (lambda r: r[-1].update(op="no_such_op"), UnknownOpError),
    (lambda r: r[-1].update(shape=(99,)), GraphError),
    (lambda r: r[-1].update(inputs=["nowhere"]), GraphError),
    (lambda r: r.append(dict(r[0])), GraphError),
    (lambda r: r[0].update(dtype="object"), GraphError),
    (lambda r: r[-1].pop("attrs"), GraphError),
])
def test_bad_records_are_refused(edit, error):
    a = ml.placeholder("a", (3,))
    records, _ = to_plain([ml.exp(a + 1)])
    edit(records)
    with pytest.raises(error):
        from_plain(records)


def test_an_op_memlab_does_not_know_cannot_be_written():
    class Mine(Op):
        name = "exp"

        def infer(self, node):
            return node.inputs[0].shape, node.inputs[0].dtype
    with pytest.raises(UnknownOpError):
        to_plain([Mine()(ml.placeholder("a"))])


@settings(max_examples=20, deadline=None)
@given(parent_arrays(max_nodes=12), st.data())
def test_trees_round_trip(parent, data):
    n = len(parent)
    f = data.draw(st.lists(st.floats(0, 100), min_size=n, max_size=n))
    m = data.draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    t = Tree(parent, f, m)
    back = Tree.from_plain(_wire(t.to_plain()))
    assert (back.parent, back.f, back.m, back.root, back.children) == (t.parent, t.f, t.m, t.root, t.children)


def test_a_bad_plain_tree_is_refused_by_the_constructor():
    with pytest.raises(TreeError):
        Tree.from_plain({"parent": [-1, -1], "f": [1, 1], "m": [0, 0]})
    with pytest.raises(TreeError):
        Tree.from_plain({"parent": [-1]})


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 12), st.floats(0, 1), st.integers(0, 1000))
def test_task_graphs_round_trip(n, p, seed):
    g = random_taskgraph(n, p, seed=seed)
    back = TaskGraph.from_plain(_wire(g.to_plain()))
    assert back.tasks == g.tasks and back.size == g.size
    assert back.duration == g.duration and back.memory == g.memory
    assert back.topological_order() == g.topological_order()


def test_task_graphs_with_named_tasks_and_bad_edges():
    g = TaskGraph.from_edges([("load", "fft", 2.0), (("a", 1), "fft", 1.5)], durations={"fft": 3.0})
    back = TaskGraph.from_plain(_wire(g.to_plain()))
    assert back.tasks == g.tasks and back.size == g.size and back.duration == g.duration
    bad = g.to_plain()
    bad["edges"].append(("fft", "load", 1.0))       # a cycle is found when the graph is used
    with pytest.raises(TreeError):
        TaskGraph.from_plain(bad).topological_order()
    bad = g.to_plain()
    bad["edges"].append(("fft", "nowhere", 1.0))
    with pytest.raises(TreeError):
        TaskGraph.from_plain(bad)


def test_chains_and_actions_round_trip():
    chain = HeteroChain([1, 2, 3], [1.0, 2.5], [0.5, 1.0, 2.0])
    back = HeteroChain.from_plain(_wire(chain.to_plain()))
    assert back == chain
    actions = [Forward(0, True), Forward(1), Backward(2), Free("x1"), Backward(1)]
    back = [action_from_plain(a) for a in _wire([action_to_plain(a) for a in actions])]
    assert back == actions and [type(a) for a in back] == [type(a) for a in actions]
    for bad in (("F", 1), ("B", "1"), ("free", 3), ("X", 1), (), None):
        with pytest.raises(ScheduleError):
            action_from_plain(bad)
    with pytest.raises(ScheduleError):
        HeteroChain.from_plain({"sizes": [1, 2], "forward_costs": [1.0, 2.0], "backward_costs": [1.0]})

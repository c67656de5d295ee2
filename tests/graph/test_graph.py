"""Graph building, topological order and the clear errors on bad graphs and feeds."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import memlab as ml
from strategies import random_dags


def test_exp_ab_plus_3_structure():
    a, b = ml.placeholder("a"), ml.placeholder("b")
    y = ml.exp(a * b + 3)
    ops = [n.op.name for n in ml.topo_order(y)]
    assert ops.count("placeholder") == 2 and ops[-1] == "exp"
    assert [n.op.name for n in ml.topo_order(y) if not n.is_leaf] == ["mul", "add", "exp"]


def test_topo_order_puts_inputs_first_and_lists_each_node_once():
    x = ml.placeholder("x", (2,))
    h = ml.sigmoid(x)
    y = h * h + ml.exp(h)
    order = ml.topo_order([y, h])
    pos = {n: i for i, n in enumerate(order)}
    assert len(order) == len(set(order))
    assert all(pos[i] < pos[n] for n in order for i in n.inputs)


def test_deep_chain_does_not_hit_recursion_limit():
    x = ml.placeholder("x", (1,))
    y = x
    for _ in range(5000):
        y = ml.neg(y)
    assert len(ml.topo_order(y)) == 5001


def test_nbytes_and_dtype_defaults():
    x = ml.placeholder("x", (3, 4))
    assert x.dtype == np.float32 and x.nbytes == 48
    assert (x + 3).dtype == np.float32  # a Python scalar takes x's dtype
    assert ml.placeholder("d", (2,), np.float64).nbytes == 16


def test_cycle_is_reported_with_a_node_name():
    a = ml.placeholder("a", (2,))
    b = ml.exp(a, name="b")
    c = ml.exp(b, name="c")
    b.inputs[0] = c  # mutate the graph into a cycle
    with pytest.raises(ml.CycleError, match="cycle through node '(b|c)'"):
        ml.topo_order(c)


@pytest.mark.parametrize("build, pattern", [
    (lambda x, w: x + w, r"node 'bad' \(add\): shapes do not broadcast: x\[3, 4\], w\[4, 2\]"),
    (lambda x, w: ml.matmul(w, w), r"matmul inner dimensions differ"),
    (lambda x, w: ml.reshape(x, (5,)), r"cannot reshape x\[3, 4\]"),
    (lambda x, w: ml.sum(x, axis=2), r"axis 2 is out of range for x\[3, 4\]"),
    (lambda x, w: ml.pool(x, 2), r"odd window"),
])
def test_shape_mismatch_names_node_and_problem(build, pattern):
    x, w = ml.placeholder("x", (3, 4)), ml.placeholder("w", (4, 2))
    with pytest.raises(ml.ShapeError, match=pattern):
        if "bad" in pattern:
            ml.add(x, w, name="bad")
        else:
            build(x, w)


def test_unknown_op_and_non_node_inputs():
    with pytest.raises(ml.UnknownOpError, match="is not a memlab Op"):
        ml.Node("matmul", [])
    with pytest.raises(ml.GraphError, match="input 0 is list"):
        ml.Node(ml.ops.elementwise.EXP, [[1, 2]])


def test_feed_errors_name_the_placeholder():
    x = ml.placeholder("x", (2, 3))
    ex = ml.Executor(ml.exp(x))
    with pytest.raises(ml.FeedError, match="'x' is missing"):
        ex.run({})
    with pytest.raises(ml.FeedError, match=r"'x' expects shape \[2, 3\], fed \[3, 2\]"):
        ex.run({x: np.zeros((3, 2), np.float32)})
    with pytest.raises(ml.FeedError, match="'x' expects dtype float32, fed float64"):
        ex.run({x: np.zeros((2, 3))})
    with pytest.raises(ml.FeedError, match="cannot convert"):
        ex.run({x: "hello"})
    # Python lists are converted; feeding by name works
    assert ex.run({"x": [[0, 0, 0], [0, 0, 0]]})[0].dtype == np.float32


def test_bad_labels_are_reported():
    z = ml.placeholder("z", (2, 3))
    y = ml.placeholder("y", (2,), np.int64)
    with pytest.raises(ml.FeedError, match="label 5 is outside"):
        ml.Executor(ml.softmax_cross_entropy(z, y)).run({z: np.zeros((2, 3), np.float32),
                                                         y: np.array([0, 5])})


def test_numpy_failure_inside_an_op_names_the_node():
    class Broken(ml.Op):
        name = "broken"

        def infer(self, node):
            return node.inputs[0].shape, node.inputs[0].dtype

        def compute(self, node, inputs, out):
            raise ZeroDivisionError("boom")

    x = ml.placeholder("x", (1,))
    y = Broken()(x, name="brk")
    with pytest.raises(ml.MemlabError, match="node 'brk' \\(broken\\) failed: ZeroDivisionError"):
        ml.Executor(y).run({x: [1.0]})


def test_naive_executor_measures_linear_temporary_space():
    """p.13: the naive executor's temporary space grows with every op."""
    x = ml.placeholder("x", (10,))
    y = x
    for _ in range(6):
        y = ml.exp(y) * 0.5
    ex = ml.Executor(y)
    (out,) = ex.run({x: np.zeros(10, np.float32)})
    expected = np.zeros(10)
    for _ in range(6):
        expected = np.exp(expected) * 0.5
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    ops = [n for n in ml.topo_order(y) if not n.is_leaf]
    assert ex.stats.allocated_bytes == 40 * len(ops) == ex.stats.peak_bytes
    held = [s.held for s in ex.stats.trace]
    assert held == [40 * (i + 1) for i in range(len(ops))]


def test_check_order_rejects_bad_orders():
    a = ml.placeholder("a", (2,))
    b = ml.exp(a, name="b")
    c = ml.exp(b, name="c")
    with pytest.raises(ml.PlanError, match="node 'c' comes before its input 'b'"):
        ml.graph.check_order(c, [a, c, b])
    with pytest.raises(ml.PlanError, match="missing node"):
        ml.graph.check_order(c, [a, b])
    with pytest.raises(ml.PlanError, match="twice"):
        ml.graph.check_order(c, [a, b, b, c])


def test_op_without_gradient_is_reported():
    class NoGrad(ml.Op):
        name = "nograd"

        def infer(self, node):
            return node.inputs[0].shape, node.inputs[0].dtype

    x = ml.placeholder("x", (2,))
    y = NoGrad()(x, name="ng")
    with pytest.raises(ml.GraphError, match="node 'ng': op 'nograd' has no gradient"):
        ml.gradients(ml.sum(y), [x])


@settings(deadline=None, max_examples=40)
@given(random_dags())
def test_last_readers_match_a_search_of_every_later_node(dag):
    outs, _ = dag
    order, last = ml.last_readers(outs)
    assert order == ml.topo_order(outs)
    for v in order:       # brute force: scan the whole order for the nodes that read v
        readers = [n for n in order if any(x is v for x in n.inputs)]
        assert last[v] is (readers[-1] if readers else v), v.name
    rev = ml.priority_order(outs, key=lambda n: -n.id)       # another valid order
    order2, last2 = ml.last_readers(outs, rev)
    pos = {n: i for i, n in enumerate(order2)}
    for v in order2:
        readers = [n for n in order2 if v in n.inputs]
        assert last2[v] is max(readers, key=pos.__getitem__, default=v)

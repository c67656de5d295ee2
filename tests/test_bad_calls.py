"""The bad calls a new user met: each raises a MemlabError naming the argument and what
is allowed, where it used to return garbage or raise a raw traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import memlab as ml
import memlab.viz  # noqa: F401  (ml.viz: the drawing part, not loaded by memlab itself)
from memlab.checkpoint import HeteroChain, parallel
from memlab.scheduling import trees

ROOT = Path(__file__).resolve().parents[1]


def raises(error: type[ml.MemlabError], *needles: str):
    """``pytest.raises`` that also wants every needle in the message."""
    return _Raises(error, needles)


class _Raises:
    def __init__(self, error, needles):
        self.ctx, self.needles = pytest.raises(error), needles

    def __enter__(self):
        self.info = self.ctx.__enter__()
        return self.info

    def __exit__(self, *exc):
        out = self.ctx.__exit__(*exc)
        for needle in self.needles:
            assert needle in str(self.info.value), f"{needle!r} not in {str(self.info.value)!r}"
        return out


@pytest.fixture
def x():
    return ml.placeholder("x", (2, 3))


def test_add_none_is_an_error_not_nan(x):
    with raises(ml.GraphError, "add: input 1", "a Node, a number or an array of numbers", "None"):
        ml.add(x, None)


def test_add_a_string(x):
    with raises(ml.GraphError, "add: input 1", "'hello'"):
        ml.add(x, "hello")
    with raises(ml.GraphError, "input 0"):
        "hello" * x  # noqa: B018  (the operator goes through the same op)


def test_a_number_still_broadcasts(x):
    (out,) = ml.Executor(ml.add(x, 2)).run({x: np.ones((2, 3), np.float32)})
    assert out.dtype == np.float32 and np.all(out == 3)


def test_hetero_chain_lengths_must_agree():
    with raises(ml.ScheduleError, "backward_costs", "l + 1 = 2", "got 3"):
        HeteroChain([1, 2], [1.0], [1, 2, 3])
    with raises(ml.ScheduleError, "sizes", "l + 1 = 3", "got 2"):
        HeteroChain([1, 2], [1.0, 1.0], [1, 2, 3])


def test_hetero_chain_negative_size():
    with raises(ml.ScheduleError, "sizes[1]", ">= 0", "-2"):
        HeteroChain([1, -2], [1.0], [1.0, 1.0])
    with raises(ml.ScheduleError, "forward_costs[0]"):
        ml.checkpoint.hetero_chain([1, 2], [-1.0])


def test_hetero_chain_empty_lists():
    with raises(ml.ScheduleError, "forward_costs", "non-empty"):
        HeteroChain([], [], [])
    with raises(ml.ScheduleError, "forward_costs", "non-empty"):
        ml.checkpoint.hetero_chain([], [])


def test_optimal_hetero_needs_a_chain():
    with raises(ml.ScheduleError, "optimal_hetero: chain", "HeteroChain"):
        ml.checkpoint.optimal_hetero([1, 2, 3], 5)


@pytest.mark.parametrize("S,M,bad", [(0, 0, "S"), (-1, 4, "S"), (2, 0, "M")])
def test_bubble_fraction_needs_positive_counts(S, M, bad):
    with raises(ml.MemlabError, f"bubble_fraction: {bad}", "an integer >= 1"):
        parallel.bubble_fraction(S, M)


def test_bubble_fraction_still_right():
    assert parallel.bubble_fraction(1, 5) == 0.0
    assert parallel.bubble_fraction(4, 4) == pytest.approx(3 / 7)


def test_plan_memory_inplace_must_be_a_boolean(x):
    with raises(ml.PlanError, "plan_memory: inplace", "True or False", "'maybe'"):
        ml.plan_memory(ml.exp(x), inplace="maybe")
    ml.plan_memory(ml.exp(x), inplace=lambda n: True)      # a predicate stays allowed


def test_plan_sharing_vertical_must_be_a_boolean(x):
    with raises(ml.PlanError, "plan_sharing: vertical", "True or False", "'yes'"):
        ml.memory.plan_sharing(ml.exp(x), vertical="yes")


def test_feed_with_an_unknown_name_is_an_error(x):
    ex = ml.Executor(ml.exp(x))
    with raises(ml.FeedError, "'y'", "not a placeholder", "'x'"):
        ex.run({"x": np.ones((2, 3), np.float32), "y": 1.0})
    with raises(ml.FeedError, "exp node"):
        ex.run({x: np.ones((2, 3), np.float32), ml.exp(x): np.ones((2, 3), np.float32)})
    with raises(ml.FeedError, "a dict"):
        ex.run([1.0])


def test_a_feed_may_serve_two_graphs(x):
    """A placeholder node of another graph is skipped: check_gradient_fn feeds every input."""
    y = ml.placeholder("y", (2,))
    (out,) = ml.Executor(ml.exp(x)).run({x: np.zeros((2, 3), np.float32), y: np.zeros(2)})
    assert np.all(out == 1)


def test_placeholder_shape_and_dtype():
    with raises(ml.ShapeError, "placeholder 'p': shape", "integers >= 0", "'abc'"):
        ml.placeholder("p", shape="abc")
    with raises(ml.ShapeError, "shape"):
        ml.placeholder("p", shape=(2, -1))
    with raises(ml.GraphError, "placeholder 'p': dtype", "'banana'"):
        ml.placeholder("p", dtype="banana")
    with raises(ml.GraphError, "dtype"):
        ml.placeholder("p", dtype=object)


def test_plan_memory_of_a_number_is_a_graph_error_like_topo_order():
    with raises(ml.GraphError, "outputs", "a Node or a list of Nodes", "42"):
        ml.plan_memory(42)
    with raises(ml.GraphError, "output 0 is str"):
        ml.topo_order(["str"])


def test_priority_order_key_must_be_a_function(x):
    with raises(ml.GraphError, "priority_order: key", "a function", "None"):
        ml.priority_order(ml.exp(x), key=None)


def test_best_postorder_of_a_string():
    with raises(ml.TreeError, "best_postorder: tree", "a Tree", "'x'"):
        trees.best_postorder("x")


def test_mlp_unknown_activation():
    with raises(ml.GraphError, "mlp: act", "'sigmoid', 'relu'", "'tanh'"):
        ml.models.mlp(act="tanh")


def test_cycle_message_prints_the_cycle_once_closed():
    g = ml.TaskGraph()
    for t in "sabc":
        g.add_task(t)
    for u, v in [("s", "a"), ("a", "b"), ("b", "c"), ("c", "a")]:
        g.add_edge(u, v)
    with pytest.raises(ml.TreeError) as info:
        g.topological_order()
    msg = str(info.value)
    task = msg.split("'")[1]
    cycle = msg.split(": ", 1)[1].split(" -> ")
    assert cycle[0] == cycle[-1] == repr(task), msg          # closed, on the named task
    assert sorted(cycle[:-1]) == ["'a'", "'b'", "'c'"], msg   # each task of the cycle once
    edges = {("a", "b"), ("b", "c"), ("c", "a")}
    assert all((u.strip("'"), v.strip("'")) in edges for u, v in zip(cycle, cycle[1:])), msg


def test_hostile_bench_names_the_known_cases():
    if not (ROOT / "bench" / "hostile.py").is_file():
        pytest.skip("bench/ is not in a student copy of the course (memlab release)")
    out = subprocess.run([sys.executable, "bench/hostile.py", "--cases", "liar"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "unknown case(s) 'liar'" in out.stderr and "the known cases are" in out.stderr
    assert "Traceback" not in out.stderr


def _paged():
    kv = ml.memory.kvcache
    a = kv.PagedAllocator(8, 4)
    a.admit(0, 5)
    return a


def _contiguous():
    return ml.memory.kvcache.ContiguousAllocator(1000, 1, 10)


def _step():
    x, w = ml.placeholder("x", (2, 3)), ml.placeholder("W", (3, 2))
    loss = ml.sum(ml.sigmoid(ml.matmul(x, w)))
    return loss, [loss, *ml.gradients(loss, [w])]


def _old_feed():
    """A feed built for an older graph (its cell run before the graph's was run again)."""
    old = ml.placeholder("x", (2,))
    new = ml.placeholder("x", (2,))
    return lambda: ml.Executor(ml.exp(new)).run({old: np.ones(2, np.float32)})


def _conv_net(elem: str = "FLOAT", dims=(1, 3, 32, 32), flatten_to_fc: bool = False):
    """A network of one's own, written with onnx.helper: conv, pool, conv, global pooling (or
    a fully connected layer whose input size fixes the image), softmax."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)

    def w(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
    node = helper.make_node
    head = [node("Conv", ["x", "w1"], ["c1"], name="conv1", kernel_shape=[3, 3]),
            node("MaxPool", ["c1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2])]
    if flatten_to_fc:
        tail = [node("Flatten", ["p1"], ["f"], name="flat")]
        weights = [w("w1", (8, 3, 3, 3)), w("w3", (10, 8 * 15 * 15))]
    else:
        tail = [node("Conv", ["p1", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3]),
                node("GlobalAveragePool", ["c2"], ["g"], name="gap"),
                node("Flatten", ["g"], ["f"], name="flat")]
        weights = [w("w1", (8, 3, 3, 3)), w("w2", (8, 8, 3, 3)), w("w3", (10, 8))]
    tail += [node("Gemm", ["f", "w3"], ["z"], name="fc", transB=1),
             node("Softmax", ["z"], ["y"], name="prob")]
    x = helper.make_tensor_value_info("x", getattr(TensorProto, elem), list(dims))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [dims[0], 10])
    graph = helper.make_graph(head + tail, "own", [x], [y], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _dense_net():
    """A 2-D input (N, features): a fully connected layer and softmax."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.ones((10, 784), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["z"], name="fc", transB=1),
         helper.make_node("Softmax", ["z"], ["y"], name="prob")], "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 784])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 10])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _show(depth=2):
    print(depth)


def _show_both(depth, width=3):
    print(depth, width)


#: (call, error, words the message must hold)
_CH = ml.checkpoint.hetero_chain([2, 1, 1], [1.0, 1.0])
_CK = ml.checkpoint
BAD_CALLS = {
    "hetero replay of an unheld value": (
        lambda: _CK.hetero.replay_memory([_CK.Forward(1)], _CH), ml.ScheduleError,
        ("F1", "needs x1", "not held")),
    "hetero replay past the chain": (
        lambda: _CK.hetero.replay_memory([_CK.Forward(0, True), _CK.Forward(1), _CK.Forward(2)], _CH),
        ml.ScheduleError, ("needs x2", "i < 2")),
    "hetero replay of a backward without its gradient": (
        lambda: _CK.hetero.replay_memory([_CK.Backward(0)], _CH), ml.ScheduleError,
        ("needs x0 and y1", "not both held")),
    "hetero replay frees a bad name": (
        lambda: _CK.hetero.replay_memory([_CK.Free("zz")], _CH), ml.ScheduleError,
        ("frees zz", "not held")),
    "pipeline schedule unknown": (
        lambda: _CK.parallel.pipeline_memory(_CK.parallel.uniform_model(4, 10, 1.0), 2, 2, 4,
                                             schedule="pipedream"),
        ml.MemlabError, ("schedule must be one of", "gpipe", "1f1b", "'pipedream'")),
    "pipeline timeline negative time": (
        lambda: _CK.parallel.pipeline_timeline(2, 2, backward=-1.0), ml.MemlabError,
        ("pipeline_timeline: backward", "-1")),
    "paged admit fractional tokens": (lambda: _paged().admit(1, 2.5), ml.BudgetError,
                                      ("PagedAllocator.admit: tokens", "integer >= 0", "2.5")),
    "paged admit negative tokens": (lambda: _paged().admit(1, -3), ml.BudgetError,
                                    ("PagedAllocator.admit: tokens", ">= 0", "-3")),
    "paged release unknown": (lambda: _paged().release(99), ml.PlanError,
                              ("PagedAllocator.release", "request 99 is unknown", "held: 0")),
    "paged fork unknown": (lambda: _paged().fork(7, 1), ml.PlanError,
                           ("PagedAllocator.fork: parent", "request 7 is unknown")),
    "paged grow unknown": (lambda: _paged().grow(5, 3), ml.PlanError,
                           ("PagedAllocator.grow", "request 5 is unknown")),
    "contiguous admit string": (lambda: _contiguous().admit(0, "5"), ml.BudgetError,
                                ("ContiguousAllocator.admit: tokens", "integer", "'5'")),
    "contiguous admit negative": (lambda: _contiguous().admit(0, -3), ml.BudgetError,
                                  ("ContiguousAllocator.admit: tokens", ">= 0", "-3")),
    "pool release unknown": (lambda: ml.memory.kvcache.PoolAllocator(1000, 1).release(3),
                             ml.PlanError, ("PoolAllocator.release", "request 3 is unknown")),
    "causal mask, more queries than keys": (
        lambda: ml.causal_mask(ml.placeholder("s", (5, 3))), ml.ShapeError,
        ("causal_mask", "s_q <= s_k", "5 queries and 3 keys")),
    "plan_offsets alignment 3": (lambda: ml.plan_offsets(_step()[1], alignment=3), ml.PlanError,
                                 ("plan_offsets", "alignment=3", "multiple of 4")),
    "plan_memory alignment 2": (lambda: ml.plan_memory(_step()[1], alignment=2), ml.PlanError,
                                ("plan_memory", "alignment=2", "multiple of 4")),
    "recompute_graph without backward": (
        lambda: ml.checkpoint.recompute_graph([_step()[0]], []), ml.PlanError,
        ("recompute_graph", "no backward pass", "[loss, *gradients]")),
    "drop_cheap ops a string": (lambda: ml.checkpoint.drop_cheap(_step()[1], ops="relu"),
                                ml.PlanError, ("drop_cheap: ops", "a non-empty list", "'relu'")),
    "drop_cheap ops not names": (lambda: ml.checkpoint.drop_cheap(_step()[1], ops=[1]),
                                 ml.PlanError, ("drop_cheap: ops", "op names", "[1]")),
    "recompute_graph mask": (lambda: ml.checkpoint.recompute_graph(_step()[1], [], mask="fused"),
                             ml.PlanError, ("recompute_graph: mask", "'seed', 'replay'", "fused")),
    "check_gradient_fn None": (
        lambda: ml.testing.check_gradient_fn(None, ml.exp, [(2,)]), ml.GraphError,
        ("check_gradient_fn: gradient", "must be a function", "None")),
    "gradients of a name": (lambda: ml.gradients(_step()[0], ["W"]), ml.GraphError,
                            ("gradients: xs[0]", "str", "'W'", "not a Node")),
    "order='bfs'": (lambda: ml.plan_offsets(_step()[1], order="bfs"), ml.PlanError,
                    ("order must be", "'dfs'", "'bfs'")),
    "executor order='bfs'": (lambda: ml.Executor(_step()[1], order="bfs"), ml.PlanError,
                             ("order must be", "'bfs'")),
    "gpt_7b(seq=0)": (lambda: ml.models.gpt_7b(seq=0), ml.MemlabError,
                      ("gpt_7b: seq", ">= 1", "0")),
    "feed from an older graph": (_old_feed(), ml.FeedError,
                                 ("belongs to another graph", "re-run the cell that builds the feed")),
    "set_workspace negative": (lambda: ml.graph.set_workspace(_step()[1], {"matmul": -1}),
                               ml.GraphError, ("set_workspace: table['matmul']", ">= 0", "-1")),
    "interact with a control no parameter takes": (
        lambda: ml.viz.interact(lambda depth=2: print(depth), width=(1, 4)), ml.MemlabError,
        ("interact: width=", "not a parameter", "its parameters are depth")),
    "interact without a control for a required parameter": (
        lambda: ml.viz.interact(_show_both, width=(1, 4)), ml.MemlabError,
        ("_show_both's parameter 'depth'", "no default and no control", "depth=(low, high)")),
    "interact with a default off its range": (
        lambda: ml.viz.interact(_show, depth=(4, 8)), ml.MemlabError,
        ("depth's default 2", "outside its range (4, 8)")),
    "interact with an inverted range": (
        lambda: ml.viz.interact(_show, depth=(8, 2)), ml.MemlabError,
        ("interact: depth=(low, high)", "low < high", "(8, 2)", "did you mean (2, 8)")),
    "interact with a zero step": (
        lambda: ml.viz.interact(_show, depth=(1, 4, 0)), ml.MemlabError,
        ("depth=(low, high, step)", "step > 0")),
    "interact on a number": (lambda: ml.viz.interact(42, depth=(1, 3)), ml.MemlabError,
                             ("interact: fn", "a function", "42")),
    "training_outputs wrt misspelt": (
        lambda: ml.models.training_outputs(ml.models.mlp(), wrt="parms"), ml.GraphError,
        ("training_outputs: wrt", "'params', 'data'", "'parms'")),
    "set_workspace on an op no node has": (
        lambda: ml.graph.set_workspace(_step()[1], {"convolution": 1 << 20}), ml.GraphError,
        ("set_workspace: table key 'convolution'", "no node of this graph",
         "its ops are", "'matmul'")),
    "set_workspace on memlab ops the graph lacks": (
        lambda: ml.graph.set_workspace(_step()[1], {"conv2d": 1 << 20}), ml.GraphError,
        ("table key 'conv2d'", "no node of this graph", "'sigmoid'")),
    "from_onnx image on a 2-D input": (
        lambda: ml.models.from_onnx(_dense_net(), batch=8, image=32), ml.ShapeError,
        ("from_onnx: image=32", "(N, C, H, W)", "'x' is 2-D", "leave image out")),
    "from_onnx image too small for the pooling": (
        lambda: ml.models.from_onnx(_conv_net(), image=3), ml.ShapeError,
        ("image=3 is too small for this network's pooling", "'pool1' (MaxPool)",
         "1 x 1 feature map", "2 x 2 window", "the file's input is 32 x 32")),
    "from_onnx image too small for a convolution": (
        lambda: ml.models.from_onnx(_conv_net(), image=5), ml.ShapeError,
        ("image=5 is too small", "'conv2' (Conv)", "1 x 1 feature map", "3 x 3 window")),
    "from_onnx image too small before a fully connected layer": (
        lambda: ml.models.from_onnx(_conv_net(flatten_to_fc=True), image=2), ml.ShapeError,
        ("image=2 is too small", "'conv1' (Conv)", "2 x 2 feature map")),
    "from_onnx image the fully connected layer does not take": (
        lambda: ml.models.from_onnx(_conv_net(flatten_to_fc=True), image=16), ml.ShapeError,
        ("node 'fc' (Gemm)", "1800 and 392", "f [1, 392]", "fixes the image size",
         "32 x 32")),
    "from_onnx int64 input": (
        lambda: ml.models.from_onnx(_conv_net("INT64")), ml.ShapeError,
        ("input 'x' holds int64 elements", "floating point", "declare 'x' as float32")),
}



def _freed_block():
    a = ml.memory.CachingAllocator()
    b = a.malloc(100)
    a.free(b)
    return a, b


BAD_CALLS.update({
    "caching malloc 0 bytes": (lambda: ml.memory.CachingAllocator().malloc(0), ml.MemlabError,
                               ("CachingAllocator.malloc: nbytes", "integer >= 1", "0")),
    "caching malloc 1.5 bytes": (lambda: ml.memory.CachingAllocator().malloc(1.5),
                                 ml.MemlabError, ("malloc: nbytes", "integer", "1.5")),
    "caching free twice": (lambda: (lambda a, b: a.free(b))(*_freed_block()), ml.MemlabError,
                           ("CachingAllocator.free", "freed twice")),
    "caching free another's block": (
        lambda: ml.memory.CachingAllocator().free(ml.memory.CachingAllocator().malloc(8)),
        ml.MemlabError, ("CachingAllocator.free", "belongs to another allocator")),
    "caching free a number": (lambda: ml.memory.CachingAllocator().free(4096), ml.MemlabError,
                              ("CachingAllocator.free: block", "a Block from malloc()", "int")),
    "caching negative capacity": (lambda: ml.memory.CachingAllocator(capacity=-1),
                                  ml.MemlabError, ("CachingAllocator: capacity", ">= 0", "-1")),
    "caching expandable 'yes'": (
        lambda: ml.memory.CachingAllocator(expandable_segments="yes"), ml.MemlabError,
        ("CachingAllocator: expandable_segments", "True or False", "'yes'")),
    "bfc malloc -5": (lambda: ml.memory.BFCAllocator().malloc(-5), ml.MemlabError,
                      ("BFCAllocator.malloc: nbytes", ">= 1", "-5")),
    "bfc negative capacity": (lambda: ml.memory.BFCAllocator(capacity=-3), ml.MemlabError,
                              ("BFCAllocator: capacity", ">= 0", "-3")),
    "bfc free a caching block": (
        lambda: ml.memory.BFCAllocator().free(ml.memory.CachingAllocator().malloc(8)),
        ml.MemlabError, ("BFCAllocator.free", "belongs to another allocator")),
    "check_snapshot of a string": (lambda: ml.memory.checksnapshot.check_snapshot("x"),
                                   ml.PlanError, ("check_snapshot: snapshot", "list of segments")),
})


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_call_raises_a_clear_error(case):
    call, error, needles = BAD_CALLS[case]
    with raises(error, *needles):
        call()


def test_gpt_7b_message_does_not_name_gpt2():
    with pytest.raises(ml.MemlabError) as info:
        ml.models.gpt_7b(seq=0)
    assert "gpt2:" not in str(info.value)

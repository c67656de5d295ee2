"""from_onnx, checked by other routes: parameter counts from the files' own initializers, shapes
from ONNX's shape inference, values from ONNX's reference evaluator, gradients by central
differences, and clear errors on bad files. Each zoo network is imported once per module."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import memlab as ml  # noqa: E402
from memlab.checkpoint import recompute_graph, sqrt_checkpoints  # noqa: E402
from memlab.models import (feature_map_bytes, from_onnx, load_onnx, onnx_zoo,  # noqa: E402
                           training_outputs)
from memlab.testing import central_difference, check_plan_runs  # noqa: E402

ZOO = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
       "squeezenet", "vgg19", "zfnet512"]


@pytest.fixture(scope="module")
def zoo():
    """Every shipped network at the file's own batch (1) and image size (224)."""
    return {name: from_onnx(name) for name in onnx_zoo()}


def test_the_nine_networks_are_listed():
    assert onnx_zoo() == ZOO


def _weights_in_file(proto) -> int:
    """Weight elements by the file itself: each ConstantOfShape stand-in's shape, plus the float
    initializers nodes read (the light files keep a few small ones, such as VGG-19's first
    biases)."""
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    read = {name for node in proto.graph.node for name in node.input}
    stand_ins = sum(int(np.prod(inits[n.input[0]])) for n in proto.graph.node
                    if n.op_type == "ConstantOfShape")
    kept = sum(a.size for name, a in inits.items() if a.dtype.kind == "f" and name in read)
    return stand_ins + kept


@pytest.mark.parametrize("name", ZOO)
def test_parameter_count_is_the_files_weights(zoo, name):
    m = zoo[name]
    assert m["parameters"] == _weights_in_file(load_onnx(name))
    assert m["parameters"] == sum(p.size for p in m["params"] + m["buffers"])


def test_published_parameter_counts():
    # BVLC AlexNet (Caffe's model zoo) and VGG-19 (Simonyan and Zisserman 2015, torchvision)
    assert from_onnx("bvlc_alexnet")["parameters"] == 60_965_224
    assert from_onnx("vgg19")["parameters"] == 143_667_240


def test_reconstructions_have_the_imported_networks_weights(zoo):
    # trainable weights: the zoo's files also store each batch norm's running mean and variance
    trained = {name: sum(p.size for p in zoo[name]["params"])
               for name in ("bvlc_alexnet", "resnet50")}
    assert sum(p.size for p in ml.models.alexnet(1)["params"]) == trained["bvlc_alexnet"]
    resnet50 = sum(p.size for p in ml.models.resnet(50, 1)["params"])
    assert resnet50 == trained["resnet50"] == 25_557_032
    assert len(zoo["resnet50"]["buffers"]) == 2 * 53      # mean and variance of 53 batch norms


@pytest.mark.parametrize("layers, published", [(18, 11_689_512), (34, 21_797_672),
                                               (101, 44_549_160), (152, 60_192_808)])
def test_resnets_at_published_depths_have_published_parameters(layers, published):
    # He et al. 2015's networks as torchvision counts them (weights, biases, batch-norm affine)
    assert sum(p.size for p in ml.models.resnet(layers, 1)["params"]) == published


@pytest.mark.parametrize("name", ZOO)
def test_every_node_has_the_shape_onnx_infers(zoo, name):
    inferred = onnx.shape_inference.infer_shapes(load_onnx(name), strict_mode=True)
    shapes = {vi.name: tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
              for vi in [*inferred.graph.value_info, *inferred.graph.output]}
    proto = load_onnx(name)
    m = zoo[name]
    checked = 0
    for node in proto.graph.node:
        if node.op_type == "ConstantOfShape":
            continue
        got = m["nodes"][node.name or node.output[0]]
        assert got.shape == shapes[node.output[0]], (node.name, node.op_type)
        assert got.attrs["onnx_op"] == node.op_type
        checked += 1
    assert checked == len([n for n in proto.graph.node if n.op_type != "ConstantOfShape"])


@pytest.fixture(scope="module")
def zoo_batch2():
    return {name: from_onnx(name, batch=2) for name in ZOO}


@pytest.mark.parametrize("name", ZOO)
def test_training_step_plans_and_checkpoints(zoo_batch2, name):
    m = zoo_batch2[name]
    assert m["data"].shape[0] == 2 and m["loss"].shape == ()
    outs = training_outputs(m)
    assert [g.shape for g in outs[1:]] == [p.shape for p in m["params"]]
    naive = ml.plan_memory(outs, inplace=False, share=False, trace=False).total_bytes
    both = ml.plan_memory(outs, trace=False).total_bytes
    forward = sum(n.nbytes for n in ml.topo_order([m["loss"]]) if n.op.computes)
    assert both < naive and naive > forward
    rewritten = recompute_graph(outs, sqrt_checkpoints(outs))
    ml.check_plan(ml.plan_offsets(rewritten))
    # feature maps: what checkpointing acts on
    kept, before = feature_map_bytes(rewritten), feature_map_bytes(outs)
    # at batch 2 AlexNet's, VGG's and ZFNet's steps are their weight gradients: nothing to win
    assert kept < before if len(m["nodes"]) > 100 else kept <= before


def test_batch_and_image_size_reach_every_shape():
    m = from_onnx("squeezenet", batch=3, image=64)
    assert m["data"].shape == (3, 3, 64, 64) and m["output"].shape == (3, 1000, 1, 1)
    with pytest.raises(ml.ShapeError, match=r"node 'n15' \(Reshape\).*image 64.*9216"):
        from_onnx("bvlc_alexnet", image=64)   # its first fully connected layer needs 224 x 224


def test_an_imported_zoo_network_runs_in_its_plan():
    # squeezenet at 48 x 48: every op of a real network computes, forward and backward
    m = from_onnx("squeezenet", batch=1, image=48)
    outs = training_outputs(m)
    feed = m["make_feed"](0)
    loss, *grads = ml.Executor(outs).run(feed)
    assert np.isfinite(loss) and all(np.isfinite(g).all() for g in grads)
    check_plan_runs(ml.plan_offsets(outs), feed, rtol=1e-4)


# A small network with onnx.helper: every attribute the zoo uses, and a few more.
def _small(dtype=TensorProto.FLOAT, batch=4, opset=15):
    rng = np.random.default_rng(0)
    npd = np.float32 if dtype == TensorProto.FLOAT else np.float64

    def w(name, shape, low=None):
        v = rng.uniform(0.5, 1.5, shape) if low else rng.standard_normal(shape) * 0.4
        return numpy_helper.from_array(v.astype(npd), name)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", strides=[2, 1],
                         pads=[1, 0, 2, 1], dilations=[1, 2], group=2),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("LRN", ["r1"], ["l1"], name="lrn1", size=3, alpha=0.3, beta=0.75,
                         bias=1.0),
        helper.make_node("MaxPool", ["l1"], ["p1"], name="pool1", kernel_shape=[3, 2],
                         strides=[2, 2], pads=[1, 0, 1, 0], ceil_mode=1),
        helper.make_node("BatchNormalization", ["p1", "s", "bb", "mu", "var"], ["n1"], name="bn1",
                         epsilon=1e-3),
        helper.make_node("AveragePool", ["n1"], ["a1"], name="avg1", kernel_shape=[2, 2],
                         pads=[1, 1, 0, 0]),
        helper.make_node("Flatten", ["a1"], ["f1"], name="flat"),
        helper.make_node("Gemm", ["f1", "w2", "b2"], ["g1"], name="fc", transB=1, alpha=0.7,
                         beta=0.5),
        helper.make_node("Softmax", ["g1"], ["y"], name="prob")]
    inits = [w("w1", (4, 2, 3, 2)), w("b1", (4,)), w("s", (4,)), w("bb", (4,)), w("mu", (4,)),
             w("var", (4,), low=True), w("w2", (3, 24)), w("b2", (3,))]
    x = helper.make_tensor_value_info("x", dtype, [batch, 4, 7, 5])
    graph = helper.make_graph(nodes, "small", [x],
                              [helper.make_tensor_value_info("y", dtype, [batch, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _feed_with_file_weights(m, proto, seed=1):
    feed = m["make_feed"](seed)
    weights = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    feed.update({p: weights[p.name] for p in m["params"] + m["buffers"]})
    return feed


def test_small_network_matches_onnx_reference_evaluator():
    # batch 4 = channels 4 at the LRN: onnx 1.23's reference LRN loops over the batch axis
    # instead of the channels (onnx/onnx#7805), which gives the spec's values only when N == C
    proto = _small(batch=4)
    m = from_onnx(proto)
    feed = _feed_with_file_weights(m, proto)
    ref = ReferenceEvaluator(proto)
    for node in proto.graph.node:
        want = ref.run([node.output[0]], {"x": feed[m["data"]]})[0]
        (got,) = ml.Executor([m["nodes"][node.name]]).run(feed)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=node.name)


def test_lrn_follows_the_spec_when_batch_and_channels_differ():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 3, 3)).astype(np.float64)
    size, alpha, beta, bias = 4, 0.2, 0.75, 2.0
    want = np.empty_like(x)
    for c in range(5):   # the ONNX operator's definition, channel by channel
        lo, hi = max(0, c - (size - 1) // 2), min(4, c + int(np.ceil((size - 1) / 2)))
        sq = (x[:, lo:hi + 1] ** 2).sum(axis=1)
        want[:, c] = x[:, c] / (bias + alpha / size * sq) ** beta
    xp = ml.placeholder("x", x.shape, np.float64)
    (got,) = ml.Executor([ml.lrn(xp, size, alpha, beta, bias)]).run({xp: x})
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_small_network_gradients_pass_central_differences():
    proto = _small(TensorProto.DOUBLE, batch=2)
    m = from_onnx(proto)
    wrt = [m["data"], *m["params"]]
    grads = ml.gradients(m["loss"], wrt)
    feed = _feed_with_file_weights(m, proto, seed=2)
    got = ml.Executor(grads).run(feed)

    def loss(arrays):
        return float(ml.Executor([m["loss"]]).run({**feed, **dict(zip(wrt, arrays))})[0])
    for i, x in enumerate(wrt):
        want = central_difference(loss, [feed[w] for w in wrt], i)
        np.testing.assert_allclose(got[i], want, atol=1e-6, err_msg=x.name)


def test_softmax_before_opset_13_flattens_the_trailing_axes():
    # Softmax-1/11 normalise over all axes from `axis` on (the input coerced to 2-D), Softmax-13
    # over `axis` alone; onnx 1.23's reference evaluator implements only the latter
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 2])
    node = helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 2])
    v = np.random.default_rng(0).standard_normal((2, 3, 2)).astype(np.float32)
    rows = np.exp(v.reshape(2, 6))
    want = {11: (rows / rows.sum(axis=1, keepdims=True)).reshape(2, 3, 2)}
    for opset in (11, 13):
        proto = helper.make_model(helper.make_graph([node], "sm", [x], [y]),
                                  opset_imports=[helper.make_opsetid("", opset)])
        m = from_onnx(proto, loss=False)
        (got,) = ml.Executor([m["output"]]).run({m["data"]: v})
        expected = want.get(opset, ReferenceEvaluator(proto).run(None, {"x": v})[0])
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_truncated_file_is_a_clear_error(tmp_path):
    data = load_onnx("bvlc_alexnet").SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(ml.GraphError, match="not a readable ONNX file"):
        from_onnx(path)


def test_unknown_op_names_the_op_the_node_and_what_is_supported():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    proto = helper.make_model(helper.make_graph(
        [helper.make_node("Erf", ["x"], ["y"], name="my_erf")], "g", [x], [y]))
    with pytest.raises(ml.UnknownOpError, match=r"'my_erf'.*'Erf'.*supported:.*Conv.*Gemm"):
        from_onnx(proto)


def test_missing_input_shape_names_the_input():
    x = helper.make_tensor_value_info("img", TensorProto.FLOAT, ["N", 3, "H", "W"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    proto = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["img"], ["y"], name="r")], "g", [x], [y]))
    with pytest.raises(ml.ShapeError, match=r"'img'.*unknown.*image="):
        from_onnx(proto, batch=2)
    assert from_onnx(proto, batch=2, image=8, loss=False)["output"].shape == (2, 3, 8, 8)


def test_bad_arguments():
    with pytest.raises(ml.GraphError, match="neither a file nor one of"):
        from_onnx("no_such_net")
    with pytest.raises(ml.GraphError, match="must be a path"):
        from_onnx(42)
    with pytest.raises(ml.ShapeError, match="batch"):
        from_onnx("squeezenet", batch=0)

"""DenseNet (memlab.models.densenet) against the ONNX zoo's densenet121, and Pleiss et al.'s
three implementations: same values, the naive one's concatenations counted by formula."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import memlab as ml
from memlab.checkpoint import forward_nodes_of, recompute_graph
from memlab.models import densenets as D
from memlab.models import training_outputs


def _signature(loss):
    return collections.Counter((n.op.name, n.shape) for n in ml.topo_order([loss]) if n.op.computes)


def test_densenet121_is_the_onnx_zoos_node_for_node():
    pytest.importorskip("onnx")
    mine, real = D.densenet(batch=2), ml.models.from_onnx("densenet121", batch=2)
    assert mine["parameters"] == real["parameters"] == 8_146_152
    assert sum(p.size for p in mine["params"]) == sum(p.size for p in real["params"])
    assert _signature(mine["loss"]) == _signature(real["loss"])


TINY = dict(blocks=(2, 3), batch=2, image=32, growth=4)


def test_concatenating_from_features_keeps_every_value():
    m = D.densenet(**TINY)
    flat = D.concat_from_features(m)
    assert any(len(n.inputs) > 2 for n in ml.topo_order([flat["loss"]]) if n.op.name == "concat")
    feed = m["make_feed"](0)
    a = ml.Executor(training_outputs(m)).run(feed)
    b = ml.Executor(training_outputs(flat)).run(feed)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7)


def test_recomputed_step_gives_the_same_gradients():
    m = D.densenet(**TINY)
    flat = D.concat_from_features(m)
    outs = training_outputs(flat)
    keep = set(forward_nodes_of(outs)) - set(D.concat_bn_values(flat["loss"]))
    new = recompute_graph(outs, keep)
    feed = m["make_feed"](1)
    for x, y in zip(ml.Executor(outs).run(feed), ml.Executor(new).run(feed)):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7)


def _concat_bn_bytes(layers, batch, image, growth=32, stem=64):
    """By formula: in each block, concatenation l holds c + l k channels, and it and its batch
    norm, scale, shift and relu outputs are five values of that size."""
    total, c, side = 0, stem, image // 4
    for i in range(4):
        total += sum(5 * (c + l * growth) * side * side for l in range(1, layers + 1))
        c, side = (c + layers * growth) // 2, side // 2
    return 4 * batch * total


@pytest.mark.parametrize("layers", [1, 3, 6])
def test_naive_concatenations_and_batch_norms_grow_as_the_formula(layers):
    m = D.densenet((layers,) * 4, batch=2, image=64)
    found = D.concat_bn_values(m["loss"])
    assert sum(n.nbytes for n in found) == _concat_bn_bytes(layers, 2, 64)


def test_shared_buffers_with_recomputation_grow_linearly():
    rows = D.depth_curve((4, 8, 12), batch=2, image=64)
    for key, grows in (("naive total", True), ("shared total", True),
                       ("shared + recomputed total", False)):
        v = [r[key] - r["naive gradients"] for r in rows]   # feature maps: less the gradients
        second = (v[2] - v[1]) / (v[1] - v[0])
        assert (second > 1.25) if grows else (second < 1.1), (key, v)
    for r in rows:
        assert r["shared + recomputed total"] < r["shared total"] < r["naive total"]

"""Convolution workspaces (models.conv_workspace): the unfolded matrix counted against numpy's
own im2col, MXNet's workspace limit, and the planners holding the workspace during its op."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import memlab as ml
from memlab.errors import GraphError
from memlab.graph.ops.image import conv2d as numeric_conv2d
from memlab.models import conv_workspace as cw
from memlab.models import shape_only as so


def im2col_nbytes(x: np.ndarray, k: int, stride: int, pad: int) -> int:
    """The unfolded input of one image, built for real: (C*k*k, H'*W') columns."""
    xp = np.pad(x[0], ((0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::stride, ::stride]
    c, ho, wo = win.shape[:3]
    cols = win.transpose(0, 3, 4, 1, 2).reshape(c * k * k, ho * wo)
    return cols.nbytes


@pytest.mark.parametrize("c,h,k,stride,pad", [(3, 9, 3, 1, 1), (4, 11, 5, 2, 2), (2, 8, 1, 2, 0),
                                              (5, 7, 3, 2, 0)])
def test_columns_equal_numpys_im2col(c, h, k, stride, pad):
    x = so.placeholder("x", (6, c, h, h))
    y = so.conv2d(x, 4, k, stride, pad)
    cols = im2col_nbytes(np.zeros((1, c, h, h), np.float32), k, stride, pad)
    assert cw.columns_per_image(y) == cols
    step = ml.models.training_outputs(
        {"loss": so.softmax_loss(so.fc(y, 3)), "params": [y.inputs[1]], "data": x}, wrt="data")
    grads = [n for n in ml.topo_order(step) if n.op.name == "conv2d_grad"]
    assert grads and all(cw.columns_per_image(g) == cols for g in grads)


def test_numeric_conv_ops_read_the_same_matrix():
    x = ml.placeholder("x", (2, 3, 8, 8))
    w = ml.placeholder("w", (4, 3, 3, 3))
    y = numeric_conv2d(x, w, strides=(2, 2), pads=(1, 1, 1, 1))
    dx, dw = ml.gradients(ml.sum(y), [x, w])
    cols = im2col_nbytes(np.zeros((1, 3, 8, 8), np.float32), 3, 2, 1)
    assert [cw.columns_per_image(n) for n in (y, dx, dw)] == [cols] * 3


def test_a_1x1_convolution_unfolds_nothing():
    y = so.conv2d(so.placeholder("x", (2, 8, 6, 6)), 4, 1, 1, 0)
    assert cw.columns_per_image(y) == 0
    assert cw.mxnet_gemm()["conv2d"](y) == 0


def test_mxnet_limit_sets_the_effective_batch():
    y = so.conv2d(so.placeholder("x", (64, 64, 56, 56)), 64, 3)
    per = 64 * 9 * 56 * 56 * 4                       # 7.2 MB a picture
    assert cw.mxnet_gemm()["conv2d"](y) == 64 * per  # all 64 fit in 1024 MB
    assert cw.mxnet_gemm(100)["conv2d"](y) == (100 * 2 ** 20 // per) * per
    assert cw.mxnet_gemm(1)["conv2d"](y) == per      # enlarged to one picture


def test_planners_hold_the_workspace_during_its_op_only():
    m = so.resnet(50, 8)
    outs = ml.models.training_outputs(m)
    base = ml.plan_memory(outs, trace=False).total_bytes
    assert ml.graph.set_workspace(outs, cw.mxnet_gemm()) > 0
    biggest = max(cw.mxnet_gemm()["conv2d"](n) for n in ml.topo_order(outs)
                  if n.op.name == "conv2d")
    planned = ml.plan_memory(outs, trace=False).total_bytes
    assert base + biggest <= planned
    ml.graph.set_workspace(outs, {name: 0 for name in cw.CONV_OPS})
    assert ml.plan_memory(outs, trace=False).total_bytes == base


def test_bad_input():
    with pytest.raises(GraphError, match="limit_mb"):
        cw.mxnet_gemm(0)
    with pytest.raises(GraphError, match="convolution ops"):
        cw.columns_per_image(ml.placeholder("x", (2, 2)) + 1)


def test_runtime_totals_add_weights_gradients_inputs_and_the_largest_workspace():
    rows = [{"x": 8, "sharing": 1.0, "sublinear": 0.5}]
    build = lambda b: so.resnet(50, b)                      # noqa: E731
    (r,) = cw.runtime_totals(rows, build, cw.mxnet_gemm())
    m = build(8)
    weights = 4 * sum(int(np.prod(p.shape)) for p in m["params"])
    inputs = 4 * 8 * 3 * 224 * 224 + 4 * 8                 # the images and one label each
    convs = [n for n in ml.topo_order(m["loss"]) if n.op.name == "conv2d"]
    work = max(8 * cw.columns_per_image(n) for n in convs)  # all 8 pictures fit in 1024 MB
    assert work >= 8 * 3 * 7 * 7 * 112 * 112 * 4            # at least the 7x7 stem's columns
    assert (r["weights"], r["gradients"], r["inputs"]) == (weights / 1e9, weights / 1e9, inputs / 1e9)
    assert r["workspace"] == work / 1e9
    assert r["sharing total"] == pytest.approx(1.0 + (2 * weights + inputs + work) / 1e9)
    assert r["sublinear total"] == pytest.approx(0.5 + (2 * weights + inputs + work) / 1e9)
    (z,) = cw.runtime_totals(rows, build, cw.CUDNN_IMPLICIT_GEMM)
    assert z["workspace"] == 0 and z["sharing total"] < r["sharing total"]

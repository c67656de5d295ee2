"""What each op's gradient reads (its saved values) against PyTorch's documented choice, and the
shape-only ops of :mod:`memlab.models.shape_only` against the numeric ops of the same meaning.

The expected column is written from PyTorch's ``tools/autograd/derivatives.yaml`` (the formula
names which of ``self``, ``other``, ``result`` or a saved mask each backward reads), not from
memlab: relu ``threshold_backward(grad, result, 0)``; sigmoid ``sigmoid_backward(grad, result)``;
tanh ``tanh_backward(grad, result)``; exp ``grad * result``; softmax
``_softmax_backward_data(grad, result, ...)``; log ``grad / self``; gelu ``gelu_backward(grad,
self)``; mm ``grad.mm(mat2.t())``, ``self.t().mm(grad)``; mul ``grad * other``, ``grad * self``;
div ``grad / other``, ``-grad * self / (other * other)``; native_dropout
``native_dropout_backward(grad, mask, scale)``; convolution ``convolution_backward(grad, input,
weight, ...)``; add nothing.
"""
import numpy as np
import pytest

import memlab as ml
from memlab.graph import saved_for_backward
from memlab.models import shape_only

X = (4, 6)


def _kind(node):
    """"output", "inputs" (float inputs), "mask" (a non-float input), "both" or "none"."""
    saved = saved_for_backward(node)
    out = node in saved
    ins = [x for x in saved if x is not node]
    floats = [x for x in ins if x.dtype.kind == "f"]
    if out and floats:
        return "both"
    if out:
        return "output"
    if floats:
        return "inputs"
    return "mask" if ins else "none"


def _x(name="x", shape=X):
    return ml.placeholder(name, shape, np.float64)


NUMERIC = {
    "relu": (lambda: ml.relu(_x()), "output"),
    "sigmoid": (lambda: ml.sigmoid(_x()), "output"),
    "tanh": (lambda: ml.tanh(_x()), "output"),
    "exp": (lambda: ml.exp(_x()), "output"),
    "softmax": (lambda: ml.softmax(_x()), "output"),
    "log": (lambda: ml.log(_x()), "inputs"),
    "gelu": (lambda: ml.gelu(_x()), "inputs"),
    "matmul": (lambda: ml.matmul(_x(), _x("w", (6, 3))), "inputs"),
    "mul": (lambda: ml.mul(_x(), _x("b")), "inputs"),
    "div": (lambda: ml.div(_x(), _x("b")), "inputs"),
    "dropout": (lambda: ml.dropout(_x(), 0.5), "mask"),
    "conv": (lambda: ml.conv(_x(), _x("w", (3,))), "inputs"),
    "add": (lambda: ml.add(_x(), _x("b")), "none"),
}


@pytest.mark.parametrize("op", sorted(NUMERIC))
def test_gradient_reads_what_pytorch_saves(op):
    build, want = NUMERIC[op]
    assert _kind(build()) == want


def test_both_inputs_saved_where_pytorch_saves_both():
    a, b = _x(), _x("b")
    for y in (ml.mul(a, b), ml.div(a, b)):
        assert saved_for_backward(y) == [a, b]
    w = _x("w", (6, 3))
    assert saved_for_backward(ml.matmul(a, w)) == [a, w]


#: numeric op -> the shape-only op of the same meaning
PAIRS = {"relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "softmax": "softmax",
         "matmul": "fc", "conv": "conv2d", "mul": "mul", "dropout": "dropout", "add": "add"}


@pytest.mark.parametrize("op", sorted(PAIRS))
def test_shape_only_ops_save_what_the_numeric_ops_read(op):
    build, _ = NUMERIC[op]
    assert shape_only.SAVES[PAIRS[op]] == _kind(build())


def test_shape_only_constructors_follow_the_table():
    x = ml.placeholder("x", (2, 3, 8, 8))
    relu, drop = shape_only.relu(x), shape_only.dropout(x)
    assert relu.op.saves == "output" and drop.op.saves == "mask"
    mask = drop.inputs[1]
    assert mask.dtype == np.uint8 and mask.shape == x.shape
    (g,) = ml.gradients(drop, [x], grad_y=ml.placeholder("g", x.shape))
    # the gradient op of dropout reads the incoming gradient and the mask, not the float output
    assert mask in g.inputs and drop not in g.inputs


def test_relu_mlp_keeps_one_value_per_layer():
    """A ReLU MLP holds, when its forward pass ends, one activation per layer: each relu's output,
    which is also the next matmul's input (PyTorch keeps the same storage for both). Were relu's
    gradient to read its input, each matmul's output would stay alive too: twice as much."""
    batch, width, depth = 8, 16, 4
    x = ml.placeholder("x", (batch, width))
    h, ws = x, []
    for i in range(depth):
        w = ml.placeholder(f"w{i}", (width, width))
        ws.append(w)
        h = ml.relu(ml.matmul(h, w))
    loss = ml.sum(h)
    outs = [loss, *ml.gradients(loss, ws)]
    forward = ml.topo_order(loss)
    order = forward + [n for n in ml.topo_order(outs) if n not in set(forward)]
    life = ml.memory.liveness.prepare(outs, order).lifetimes()
    end = len(forward) - 1
    alive = [n for n, (a, b) in life.items() if a <= end < b and n is not loss]
    assert sorted(n.op.name for n in alive) == ["relu"] * depth
    assert sum(n.nbytes for n in alive) == depth * batch * width * 4

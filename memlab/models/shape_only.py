"""Shape-only networks big enough for the lecture's memory estimates (p.29, p.35).

At ImageNet sizes a numpy compute is pointless: a planner needs only shapes.
A :class:`ShapeOnly` op carries a name, an output shape, an in-place flag
and which values its backward reads (``saves``); its gradient builds more
shape-only nodes, so ``ml.gradients`` produces the backward graph and the
planner sees what training must keep alive. Tensors are ``(N, C, H, W)``
float32; weights are placeholders (given, not planned). Residual sums use
the real ``ml.add`` (in-place allowed). :func:`alexnet` and :func:`resnet` at 18, 34, 50, 101 and
152 layers are the published networks, weight for weight (:func:`bvlc_alexnet`,
:func:`resnet_v1`); :func:`vgg` and :func:`googlenet` leave out the biases (within 0.1% of the
ONNX zoo's VGG-19 and Inception v1 parameters, ``bench/onnx_zoo.py``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import MemlabError
from ..graph import Node, Op, add, placeholder, topo_order
from ..graph.plain import register_op_family

_OPS: dict[tuple, "ShapeOnly"] = {}

#: what each shape-only op's backward reads, by op name; the numeric op of the same meaning reads
#: the same (``tests/models/test_shape_only_saves.py``), as in PyTorch's ``derivatives.yaml``:
#: relu, sigmoid, tanh and softmax their ``result``; convolution, a fully connected layer (mm) and
#: a product their inputs; batch norm its input (and statistics); dropout its mask; max pooling
#: its input and the positions it chose (here: input and output); average pooling, add and concat
#: nothing of their own (PyTorch's avg_pool2d saves its input for its shape only).
SAVES = {"conv2d": "inputs", "fc": "inputs", "fullc": "inputs", "mul": "inputs",
         "batchnorm": "inputs", "lrn": "both", "relu": "output", "sigmoid": "output",
         "tanh": "output", "softmax": "output", "dropout": "mask", "maxpool": "both",
         "avgpool": "none", "add": "none", "concat": "none", "softmax_xent": "inputs",
         "log-loss": "none"}


class ShapeOnly(Op):
    """An op with a name, a shape and an in-place flag, and no compute.

    ``saves``: what its backward reads besides the incoming gradient:
    ``"inputs"`` (its float inputs: conv, fc, batchnorm), ``"output"`` (relu, sigmoid, tanh,
    softmax), ``"both"`` (max pooling), ``"mask"`` (its non-float inputs: dropout's one-byte
    mask) or ``"none"`` (add, concat). :data:`SAVES` lists the choice of each op by name, as the
    numeric ops of :mod:`memlab.graph.ops` make it (tested) and PyTorch documents it.
    ``grad_inplace``: the gradient op may overwrite the incoming gradient.
    """

    def __init__(self, name: str, inplace: bool = False, saves: str = "inputs",
                 grad_inplace: bool = False) -> None:
        self.name, self.inplace_ok, self.saves, self.grad_inplace = name, inplace, saves, grad_inplace

    def infer(self, node: Node) -> tuple[tuple[int, ...], np.dtype]:
        return tuple(node.attrs["shape"]), np.dtype(node.attrs.get("dtype", np.float32))

    def compute(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        raise MemlabError(f"node {node.name!r}: {self.name} is a shape-only op, with no numpy compute")

    #: A gradient contribution can be added straight into an accumulator (MXNet's ``kAddTo``):
    #: :func:`~memlab.graph.accumulate` fuses it when ``gradients(..., addto="all")`` asks.
    accumulates = True

    def add_into(self, node: Node, inputs: Sequence[np.ndarray], out: np.ndarray) -> None:
        self.compute(node, inputs, out)

    def inplace(self, node: Node) -> tuple[int, ...]:
        if self.inplace_ok and node.inputs and node.inputs[0].shape == node.shape \
                and node.inputs[0].dtype == node.dtype:
            return (0,)
        return ()

    def gradient(self, node: Node, grad: Node) -> list[Node | None]:
        floats = [x for x in node.inputs if x.dtype.kind == "f"]
        masks = [x for x in node.inputs if x.dtype.kind != "f"]
        saved = {"inputs": floats, "output": [node], "both": floats + [node], "none": [],
                 "mask": masks}[self.saves]
        gop = shape_op(self.name + "_grad", inplace=self.grad_inplace, saves="none")
        return [gop(grad, *saved, shape=x.shape) if x.dtype.kind == "f" else None
                for x in node.inputs]


def shape_op(name: str, inplace: bool = False, saves: str | None = None,
             grad_inplace: bool = False) -> ShapeOnly:
    """The (cached) shape-only op with these properties; ``saves`` defaults to :data:`SAVES`'s
    entry for ``name``, else ``"inputs"``."""
    saves = SAVES.get(name, "inputs") if saves is None else saves
    key = (name, inplace, saves, grad_inplace)
    if key not in _OPS:
        _OPS[key] = ShapeOnly(name, inplace, saves, grad_inplace)
    return _OPS[key]


def _param(shape: Sequence[int], name: str) -> Node:
    return placeholder(name, tuple(shape))


def conv2d(x: Node, out_ch: int, k: int, stride: int = 1, pad: int | None = None) -> Node:
    """Shape-only 2-D convolution ``(N, C, H, W) -> (N, out_ch, H', W')`` with its weight."""
    n, c, h, w = x.shape
    p = k // 2 if pad is None else pad
    ho, wo = (h + 2 * p - k) // stride + 1, (w + 2 * p - k) // stride + 1
    return shape_op("conv2d")(x, _param((out_ch, c, k, k), "w"), shape=(n, out_ch, ho, wo))


def fc(x: Node, out: int) -> Node:
    """Shape-only fully connected layer ``(N, ...) -> (N, out)``."""
    return shape_op("fc")(x, _param((int(np.prod(x.shape[1:])), out), "w"), shape=(x.shape[0], out))


def relu(x: Node) -> Node:
    """Shape-only relu: in place, backward reads its output, gradient in place."""
    return shape_op("relu", inplace=True, grad_inplace=True)(x, shape=x.shape)


def batchnorm(x: Node) -> Node:
    """Shape-only batch normalisation (backward reads its input)."""
    return shape_op("batchnorm")(x, _param(x.shape[1:2], "gamma"), shape=x.shape)


def lrn(x: Node) -> Node:
    """Shape-only local response normalisation (AlexNet, GoogLeNet)."""
    return shape_op("lrn")(x, shape=x.shape)


def dropout(x: Node) -> Node:
    """Shape-only dropout: in place; backward reads its mask, one byte per element (a value of its
    own, made by a ``dropout_mask`` op, as :func:`memlab.graph.dropout` and PyTorch's
    ``native_dropout`` keep it)."""
    mask = shape_op("dropout_mask", saves="none")(shape=x.shape, dtype=np.dtype(np.uint8))
    return shape_op("dropout", inplace=True, grad_inplace=True)(x, mask, shape=x.shape)


def pool2d(x: Node, k: int, stride: int, pad: int = 0, kind: str = "max") -> Node:
    """Shape-only max (backward reads input and output) or average pooling."""
    n, c, h, w = x.shape
    ho, wo = -(-(h + 2 * pad - k) // stride) + 1, -(-(w + 2 * pad - k) // stride) + 1
    op = shape_op("maxpool") if kind == "max" else shape_op("avgpool")
    return op(x, shape=(n, c, ho, wo))


def concat_channels(*xs: Node) -> Node:
    """Shape-only concatenation along channels (GoogLeNet's inception output)."""
    n, _, h, w = xs[0].shape
    return shape_op("concat")(*xs, shape=(n, sum(x.shape[1] for x in xs), h, w))


def softmax_loss(x: Node) -> Node:
    """Shape-only softmax cross-entropy against integer labels: a scalar loss."""
    labels = placeholder("labels", (x.shape[0],), np.int32)
    return shape_op("softmax_xent")(x, labels, shape=())


def alexnet(batch: int = 64) -> dict[str, Any]:
    """BVLC AlexNet, weight for weight (60,965,224 parameters: grouped convolutions, LRN,
    biases; :func:`bvlc_alexnet`), as the ONNX model zoo has it."""
    return bvlc_alexnet(batch)


def vgg(batch: int = 64, layers: Sequence[int] = (2, 2, 3, 3, 3)) -> dict[str, Any]:
    """VGG-16-like: blocks of 3x3 conv + relu and max pooling, then 3 fc layers with dropout."""
    x = placeholder("data", (batch, 3, 224, 224))
    h = x
    for ch, reps in zip((64, 128, 256, 512, 512), layers):
        for _ in range(reps):
            h = relu(conv2d(h, ch, 3))
        h = pool2d(h, 2, 2)
    for width in (4096, 4096):
        h = dropout(relu(fc(h, width)))
    return _model(x, softmax_loss(fc(h, 1000)))


def _inception(x: Node, c1: int, c3r: int, c3: int, c5r: int, c5: int, cp: int) -> Node:
    b1 = relu(conv2d(x, c1, 1))
    b3 = relu(conv2d(relu(conv2d(x, c3r, 1)), c3, 3))
    b5 = relu(conv2d(relu(conv2d(x, c5r, 1)), c5, 5))
    bp = relu(conv2d(pool2d(x, 3, 1, 1), cp, 1))
    return concat_channels(b1, b3, b5, bp)


_INCEPTION = {"3a": (64, 96, 128, 16, 32, 32), "3b": (128, 128, 192, 32, 96, 64),
              "4a": (192, 96, 208, 16, 48, 64), "4b": (160, 112, 224, 24, 64, 64),
              "4c": (128, 128, 256, 24, 64, 64), "4d": (112, 144, 288, 32, 64, 64),
              "4e": (256, 160, 320, 32, 128, 128), "5a": (256, 160, 320, 32, 128, 128),
              "5b": (384, 192, 384, 48, 128, 128)}


def googlenet(batch: int = 64) -> dict[str, Any]:
    """GoogLeNet-like (Inception v1): stem, nine inception modules, average pooling, fc."""
    x = placeholder("data", (batch, 3, 224, 224))
    h = pool2d(relu(conv2d(x, 64, 7, 2, 3)), 3, 2)
    h = lrn(h)
    h = relu(conv2d(relu(conv2d(h, 64, 1)), 192, 3))
    h = pool2d(lrn(h), 3, 2)
    for name, cfg in _INCEPTION.items():
        h = _inception(h, *cfg)
        if name in ("3b", "4e"):
            h = pool2d(h, 3, 2)
    h = dropout(pool2d(h, h.shape[2], 1, kind="avg"))
    return _model(x, softmax_loss(fc(h, 1000)))


def resnet(layers: int = 152, batch: int = 32, image: int = 224) -> dict[str, Any]:
    """ResNet-``layers``. At 18, 34, 50, 101 and 152 layers, the published network of He et al.
    2015 (:func:`resnet_v1`: post-activation basic or bottleneck blocks at Table 1's
    stage counts; ResNet-50 has 25,557,032 parameters, as the ONNX model zoo's). At any other depth
    (p.35's 100 to 1000 layers and more), a pre-activation bottleneck ResNet (He et al. 2016) of
    ``(layers - 2) // 3`` units of (bn, relu, 1x1 conv, bn, relu, 3x3 conv, bn, relu, 1x1 conv) +
    shortcut, spread over four stages like ResNet-152 (3 : 8 : 36 : 3), widths 256-2048, after a
    7x7 stem and max pooling; its convolutions carry no bias and its batch norms a scale only.
    """
    if layers in RESNETS:
        return resnet_v1(layers, batch, image)
    units = max(4, (layers - 2) // 3)
    share = (3, 8, 36, 3)
    per = [max(1, round(units * s / 50)) for s in share]
    per[2] += units - sum(per)
    x = placeholder("data", (batch, 3, image, image))
    h = pool2d(relu(batchnorm(conv2d(x, 64, 7, 2, 3))), 3, 2, 1)
    h = _bottleneck_stages(h, per, (256, 512, 1024, 2048))
    return _model(x, softmax_loss(fc(h, 1000)))


def resnet_cifar(layers: int = 1001, batch: int = 64) -> dict[str, Any]:
    """The pre-activation bottleneck ResNet for CIFAR-10 (He et al. 2016, "Identity Mappings in
    Deep Residual Networks"; ResNet-1001 is lecture 7 p.9's "ResNet-1k on CIFAR-10"): 32 x 32
    images, a 3x3 stem of 16 channels, ``(layers - 2) // 9`` bottleneck units in each of three
    stages of widths 64, 128, 256 (at 32, 16 and 8 pixels), average pooling, 10 classes."""
    per = max(1, (layers - 2) // 9)
    x = placeholder("data", (batch, 3, 32, 32))
    h = _bottleneck_stages(conv2d(x, 16, 3), (per, per, per), (64, 128, 256))
    return _model(x, softmax_loss(fc(h, 10)))


def _bottleneck_stages(h: Node, units: Sequence[int], widths: Sequence[int]) -> Node:
    """Stages of pre-activation bottleneck units (bn, relu, 1x1 conv, bn, relu, 3x3 conv, bn,
    relu, 1x1 conv, + shortcut; a projection on each stage's first unit, which halves the size
    from the second stage on), then bn, relu and global average pooling."""
    for stage, (n_units, width) in enumerate(zip(units, widths)):
        for u in range(n_units):
            stride = 2 if (u == 0 and stage > 0) else 1
            a = relu(batchnorm(h))
            short = conv2d(a, width, 1, stride) if u == 0 else h
            r = conv2d(a, width // 4, 1, stride)
            r = conv2d(relu(batchnorm(r)), width // 4, 3)
            r = conv2d(relu(batchnorm(r)), width, 1)
            h = add(r, short)
    return pool2d(relu(batchnorm(h)), h.shape[2], 1, kind="avg")


_WEIGHTS = ("w", "b", "gamma", "beta")


def _model(data: Node, loss: Node) -> dict[str, Any]:

    params = [n for n in topo_order(loss) if n.op.name == "placeholder" and n.name in _WEIGHTS]
    return {"data": data, "loss": loss, "params": params}


def lstm(steps: int = 40, batch: int = 1024, hidden: int = 1024, layers: int = 1) -> dict[str, Any]:
    """A shape-only LSTM unrolled ``steps`` times, ``layers`` deep, loss on the last step.

    Per step and layer, as in MXNet's LSTM example: per gate ``fc(x) + fc(h)``,
    sigmoid / tanh gates, ``c = f*c + i*g`` and ``h = o * tanh(c)``. The weights of a layer are
    shared by every step (``params``: 8 matrices per layer and the output layer's), so a full
    training step sums each weight's gradient over the steps.
    """
    sig = shape_op("sigmoid", inplace=True, grad_inplace=True)
    tnh = shape_op("tanh", inplace=True, grad_inplace=True)
    emul = shape_op("mul", grad_inplace=True)
    eadd = shape_op("add", inplace=True, grad_inplace=True)
    fully = shape_op("fc")
    shp = (batch, hidden)
    h0 = [placeholder(f"h0_{l}", shp) for l in range(layers)]
    c0 = [placeholder(f"c0_{l}", shp) for l in range(layers)]
    weights = [[(_param((hidden, hidden), f"Wx{l}_{g}"), _param((hidden, hidden), f"Wh{l}_{g}"))
                for g in "ifog"] for l in range(layers)]
    w_out = _param((hidden, 10), "W_out")
    h, c = list(h0), list(c0)
    for t in range(steps):
        x = placeholder(f"x{t}", shp)
        for l in range(layers):
            pre = [eadd(fully(x, wx, shape=shp), fully(h[l], wh, shape=shp), shape=shp)
                   for wx, wh in weights[l]]
            i, f, o = (sig(p, shape=shp) for p in pre[:3])
            g = tnh(pre[3], shape=shp)
            c[l] = eadd(emul(f, c[l], shape=shp), emul(i, g, shape=shp), shape=shp)
            h[l] = emul(o, tnh(c[l], shape=shp), shape=shp)
            x = h[l]
    loss = softmax_loss(fully(x, w_out, shape=(batch, 10)))
    params = [w for layer in weights for pair in layer for w in pair] + [w_out]
    return {"data": h0[0], "loss": loss, "params": params}


def mlp2_fused(batch: int = 64, n_in: int = 784, hidden: int = 256, n_out: int = 10
               ) -> dict[str, Any]:
    """Slide p.28's two-layer MLP as MXNet runs it: one backward op per layer.

    fullc, sigmoid, fullc, softmax and a log-loss read by nothing else; the backward pass is
    ``gradients(softmax, [input], grad_y=label)``: like MXNet's ``SoftmaxOutput``, the softmax's
    backward reads its output and the label (not an incoming gradient), then each layer's
    backward op reads the gradient and what its layer saved (p.28's "gradient calculation
    graph", gradient with respect to the input as the slide draws it). Shape-only: planned,
    never run. Returns ``input``, ``label``, ``loss``, ``input_grad`` and ``outputs``.
    """
    from ..graph import gradients
    x = placeholder("input", (batch, n_in))
    label = placeholder("label", (batch, n_out))
    fullc = shape_op("fullc")
    act = shape_op("sigmoid", inplace=True, grad_inplace=True)
    h = fullc(x, _param((n_in, hidden), "W1"), shape=(batch, hidden), name="fullc1")
    h = act(h, shape=h.shape, name="sigmoid")
    h = fullc(h, _param((hidden, n_out), "W2"), shape=(batch, n_out), name="fullc2")
    prob = shape_op("softmax", inplace=True)(h, shape=h.shape, name="softmax")
    loss = shape_op("log-loss")(prob, label, shape=(), name="log-loss")
    (dx,) = gradients(prob, [x], grad_y=label)
    return {"input": x, "label": label, "loss": loss, "softmax": prob, "input_grad": dx,
            "outputs": [loss, dx]}


def _spec(op: Op) -> tuple | None:
    return (op.name, op.inplace_ok, op.saves, op.grad_inplace) if isinstance(op, ShapeOnly) else None


def _make(spec: object) -> ShapeOnly:
    name, inplace, saves, grad_inplace = spec  # type: ignore[misc]
    if not isinstance(name, str) or saves not in ("inputs", "output", "both", "mask", "none"):
        raise ValueError(f"not a shape-only op's parameters: {spec!r:.80}")
    return shape_op(name, bool(inplace), saves, bool(grad_inplace))


register_op_family("shape_only", _spec, _make)   # a shape-only graph crosses as plain data too


# Networks as published, weight for weight, checked against the ONNX model zoo's files
# (``from_onnx``, ``bench/onnx_zoo.py``): BVLC AlexNet has 60,965,224 parameters; ResNet-18 / 34 /
# 50 / 101 / 152 have 11,689,512 / 21,797,672 / 25,557,032 / 44,549,160 / 60,192,808 (weights,
# biases, batch-norm scales and shifts; the zoo's files also store each batch norm's running
# mean and variance: 2 x 26,560 more numbers in ResNet-50).

#: He et al. 2015, Table 1: blocks per stage (conv2_x .. conv5_x), basic (two 3x3 convs) for 18
#: and 34 layers, bottleneck (1x1, 3x3, 1x1) from 50 on.
RESNETS = {18: ("basic", (2, 2, 2, 2)), 34: ("basic", (3, 4, 6, 3)),
           50: ("bottleneck", (3, 4, 6, 3)), 101: ("bottleneck", (3, 4, 23, 3)),
           152: ("bottleneck", (3, 8, 36, 3))}


def conv_bias(x: Node, out_ch: int, k: int, stride: int = 1, pad: int | None = None,
              groups: int = 1, bias: bool = True) -> Node:
    """A shape-only 2-D convolution with its weight ``(out_ch, C / groups, k, k)`` and bias."""
    n, c, h, w = x.shape
    p = k // 2 if pad is None else pad
    ho, wo = (h + 2 * p - k) // stride + 1, (w + 2 * p - k) // stride + 1
    ins = [x, placeholder("w", (out_ch, c // groups, k, k))]
    if bias:
        ins.append(placeholder("b", (out_ch,)))
    return shape_op("conv2d")(*ins, shape=(n, out_ch, ho, wo))


def fc_bias(x: Node, out: int) -> Node:
    """A shape-only fully connected layer with weight and bias."""
    w = placeholder("w", (int(np.prod(x.shape[1:])), out))
    return shape_op("fc")(x, w, placeholder("b", (out,)), shape=(x.shape[0], out))


def batchnorm_affine(x: Node) -> Node:
    """A shape-only batch norm with its scale (gamma) and shift (beta)."""
    c = x.shape[1:2]
    return shape_op("batchnorm")(x, placeholder("gamma", c), placeholder("beta", c), shape=x.shape)


def bvlc_alexnet(batch: int = 64, image: int = 224) -> dict[str, Any]:
    """BVLC AlexNet (Caffe's model zoo, as the ONNX zoo has it): conv1 96 11x11 stride 4, relu,
    LRN, max pool; conv2 256 5x5 in two groups, relu, LRN, max pool; conv3 384 3x3; conv4 384 and
    conv5 256 3x3 in two groups (Krizhevsky et al. 2012's two GPUs); max pool; fc 4096, 4096 with
    dropout; fc 1000. 60,965,224 parameters."""
    x = placeholder("data", (batch, 3, image, image))
    h = pool2d(lrn(relu(conv_bias(x, 96, 11, 4, 0))), 3, 2)
    h = pool2d(lrn(relu(conv_bias(h, 256, 5, 1, 2, groups=2))), 3, 2)
    h = relu(conv_bias(h, 384, 3))
    h = relu(conv_bias(h, 384, 3, groups=2))
    h = pool2d(relu(conv_bias(h, 256, 3, groups=2)), 3, 2)
    for width in (4096, 4096):
        h = dropout(relu(fc_bias(h, width)))
    return _model(x, softmax_loss(fc_bias(h, 1000)))


def _basic(h: Node, width: int, stride: int) -> Node:
    r = relu(batchnorm_affine(conv_bias(h, width, 3, stride, bias=False)))
    r = batchnorm_affine(conv_bias(r, width, 3, bias=False))
    return relu(add(r, _shortcut(h, width, stride)))


def _shortcut(h: Node, width: int, stride: int) -> Node:
    """The identity, or a 1x1 projection with batch norm where the shape changes."""
    if stride == 1 and h.shape[1] == width:
        return h
    return batchnorm_affine(conv_bias(h, width, 1, stride, 0, bias=False))


def _bottleneck(h: Node, width: int, stride: int) -> Node:
    r = relu(batchnorm_affine(conv_bias(h, width // 4, 1, 1, 0, bias=False)))
    # the stride on the 3x3, as the ONNX zoo's ResNet-50 has it
    r = relu(batchnorm_affine(conv_bias(r, width // 4, 3, stride, bias=False)))
    r = batchnorm_affine(conv_bias(r, width, 1, 1, 0, bias=False))
    return relu(add(r, _shortcut(h, width, stride)))


def resnet_v1(layers: int, batch: int = 32, image: int = 224) -> dict[str, Any]:
    """ResNet-``layers`` of He et al. 2015 (``layers`` in :data:`RESNETS`): 7x7 stem with batch
    norm and relu, max pooling, four stages (widths 64-512 of basic blocks, 256-2048 of
    bottlenecks; a projection shortcut where the shape changes), average pooling, fc 1000."""
    kind, stages = RESNETS[layers]
    widths = (64, 128, 256, 512) if kind == "basic" else (256, 512, 1024, 2048)
    block = _basic if kind == "basic" else _bottleneck
    x = placeholder("data", (batch, 3, image, image))
    h = pool2d(relu(batchnorm_affine(conv_bias(x, 64, 7, 2, 3, bias=False))), 3, 2, 1)
    for s, (n, width) in enumerate(zip(stages, widths)):
        for u in range(n):
            h = block(h, width, 2 if (u == 0 and s > 0) else 1)
    h = pool2d(h, h.shape[2], 1, kind="avg")
    return _model(x, softmax_loss(fc_bias(h, 1000)))

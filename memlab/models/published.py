"""Shape-only networks as published, weight for weight: BVLC AlexNet and the ResNets of He et
al. 2015 (18, 34, 50, 101, 152 layers), so that :func:`~.shape_only.alexnet` and
:func:`~.shape_only.resnet` at those depths have the real networks' parameters and shapes.

Checked against the ONNX model zoo's files (:func:`~memlab.models.from_onnx`,
``bench/onnx_zoo.py``): BVLC AlexNet has 60,965,224 parameters; ResNet-18/34/50/101/152 have
11,689,512 / 21,797,672 / 25,557,032 / 44,549,160 / 60,192,808 (conv and fully connected weights
and biases, batch-norm scales and shifts; the zoo's files also store each batch norm's running
mean and variance, 2 x 26,560 more numbers in ResNet-50). Same shape-only ops as
:mod:`.shape_only` (relu, LRN, pooling, dropout, the loss), with biases and grouped convolutions.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..graph import Node, add, placeholder, topo_order
from . import shape_only as so

#: He et al. 2015, Table 1: blocks per stage (conv2_x .. conv5_x), basic (two 3x3 convs) for 18
#: and 34 layers, bottleneck (1x1, 3x3, 1x1) from 50 on.
RESNETS = {18: ("basic", (2, 2, 2, 2)), 34: ("basic", (3, 4, 6, 3)),
           50: ("bottleneck", (3, 4, 6, 3)), 101: ("bottleneck", (3, 4, 23, 3)),
           152: ("bottleneck", (3, 8, 36, 3))}
_NAMES = ("w", "b", "gamma", "beta")


def conv(x: Node, out_ch: int, k: int, stride: int = 1, pad: int | None = None, groups: int = 1,
         bias: bool = True) -> Node:
    """A shape-only 2-D convolution with its weight ``(out_ch, C / groups, k, k)`` and bias."""
    n, c, h, w = x.shape
    p = k // 2 if pad is None else pad
    ho, wo = (h + 2 * p - k) // stride + 1, (w + 2 * p - k) // stride + 1
    ins = [x, placeholder("w", (out_ch, c // groups, k, k))]
    if bias:
        ins.append(placeholder("b", (out_ch,)))
    return so.shape_op("conv2d")(*ins, shape=(n, out_ch, ho, wo))


def fc(x: Node, out: int) -> Node:
    """A shape-only fully connected layer with weight and bias."""
    w = placeholder("w", (int(_size(x.shape[1:])), out))
    return so.shape_op("fc")(x, w, placeholder("b", (out,)), shape=(x.shape[0], out))


def bn(x: Node) -> Node:
    """A shape-only batch norm with its scale (gamma) and shift (beta)."""
    c = x.shape[1:2]
    return so.shape_op("batchnorm")(x, placeholder("gamma", c), placeholder("beta", c), shape=x.shape)


def _size(shape: Sequence[int]) -> int:
    out = 1
    for n in shape:
        out *= n
    return out


def model(data: Node, loss: Node) -> dict[str, Any]:
    """The zoo's model dict; ``params``: every weight, bias, scale and shift."""
    params = [n for n in topo_order(loss) if n.op.name == "placeholder" and n.name in _NAMES]
    return {"data": data, "loss": loss, "params": params}


def bvlc_alexnet(batch: int = 64, image: int = 224) -> dict[str, Any]:
    """BVLC AlexNet (Caffe's model zoo, as the ONNX zoo has it): conv1 96 11x11 stride 4, relu,
    LRN, max pool; conv2 256 5x5 in two groups, relu, LRN, max pool; conv3 384 3x3; conv4 384 and
    conv5 256 3x3 in two groups (Krizhevsky et al. 2012's two GPUs); max pool; fc 4096, 4096 with
    dropout; fc 1000. 60,965,224 parameters."""
    x = placeholder("data", (batch, 3, image, image))
    h = so.pool2d(so.lrn(so.relu(conv(x, 96, 11, 4, 0))), 3, 2)
    h = so.pool2d(so.lrn(so.relu(conv(h, 256, 5, 1, 2, groups=2))), 3, 2)
    h = so.relu(conv(h, 384, 3))
    h = so.relu(conv(h, 384, 3, groups=2))
    h = so.pool2d(so.relu(conv(h, 256, 3, groups=2)), 3, 2)
    for width in (4096, 4096):
        h = so.dropout(so.relu(fc(h, width)))
    return model(x, so.softmax_loss(fc(h, 1000)))


def _basic(h: Node, width: int, stride: int) -> Node:
    r = so.relu(bn(conv(h, width, 3, stride, bias=False)))
    r = bn(conv(r, width, 3, bias=False))
    short = h if stride == 1 and h.shape[1] == width else bn(conv(h, width, 1, stride, 0, bias=False))
    return so.relu(add(r, short))


def _bottleneck(h: Node, width: int, stride: int) -> Node:
    r = so.relu(bn(conv(h, width // 4, 1, 1, 0, bias=False)))
    r = so.relu(bn(conv(r, width // 4, 3, stride, bias=False)))    # stride on the 3x3, as the
    r = bn(conv(r, width, 1, 1, 0, bias=False))                    # ONNX zoo's ResNet-50
    short = h if stride == 1 and h.shape[1] == width else bn(conv(h, width, 1, stride, 0, bias=False))
    return so.relu(add(r, short))


def resnet_v1(layers: int, batch: int = 32, image: int = 224) -> dict[str, Any]:
    """ResNet-``layers`` of He et al. 2015 (``layers`` in :data:`RESNETS`): 7x7 stem with batch
    norm and relu, max pooling, four stages (widths 64-512 of basic blocks, 256-2048 of
    bottlenecks; a projection shortcut where the shape changes), average pooling, fc 1000."""
    kind, stages = RESNETS[layers]
    widths = (64, 128, 256, 512) if kind == "basic" else (256, 512, 1024, 2048)
    block = _basic if kind == "basic" else _bottleneck
    x = placeholder("data", (batch, 3, image, image))
    h = so.pool2d(so.relu(bn(conv(x, 64, 7, 2, 3, bias=False))), 3, 2, 1)
    for s, (n, width) in enumerate(zip(stages, widths)):
        for u in range(n):
            h = block(h, width, 2 if (u == 0 and s > 0) else 1)
    h = so.pool2d(h, h.shape[2], 1, kind="avg")
    return model(x, so.softmax_loss(fc(h, 1000)))

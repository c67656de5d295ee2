"""DenseNet's memory (Huang et al. 2017; Pleiss et al. 2017, "Memory-Efficient Implementation of
DenseNets"): the network, its quadratic concatenations and batch-norm outputs, and the three
implementations Pleiss et al. compare, measured with memlab's planners.

:func:`densenet` builds DenseNet-121 (and any number of layers per block) with memlab's numeric
ops, op for op as the ONNX model zoo's ``densenet121`` file has it (Caffe's layout: batch norm,
a separate per-channel scale and shift, relu), so that ``densenet()`` and
``from_onnx("densenet121")`` agree node for node (tested). In a dense block, layer ``l`` reads
the concatenation of the block's input and the ``l - 1`` features before it, normalises it and
applies relu: a naive implementation stores a new concatenation and its normalised copies at
every layer, ``sum_l (c0 + l k)`` channels, quadratic in the block's depth.
:func:`concat_bn_values` finds those values; :func:`pleiss_variants` plans a training step
naively (one buffer per value), with memlab's sharing planner, and with the concatenations and
batch-norm outputs recomputed in the backward pass from the features they are made of, so that
the sharing planner can put them into a few shared buffers (Pleiss et al.'s "shared memory
storage" and recomputation).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..checkpoint import forward_nodes_of, recompute_graph
from ..errors import PlanError, ShapeError, check_int, check_list
from ..graph import (Node, add, concat, conv2d, mean, mul, placeholder, pool2d, relu, reshape,
                     softmax_cross_entropy, topo_order)
from ..graph.ops.normalization import batchnorm
from ..memory import plan_memory

#: DenseNet-121 (Huang et al. 2017, Table 1): layers per dense block, growth rate k, the stem's
#: channels, bottleneck width (4 k) and the transitions' compression (0.5).
DENSENET121 = {"blocks": (6, 12, 24, 16), "growth": 32, "stem": 64, "bottleneck": 4,
               "compression": 0.5}
#: Pleiss et al. 2017 and their reference implementation (github.com/gpleiss/efficient_densenet_
#: pytorch, README: DenseNet-BC, 100 layers, batch 64, one Titan-X): the facts beside ours.
PLEISS = {"naive GB": 2.863, "efficient GB": 1.605, "naive s": 0.165, "efficient s": 0.207,
          "params on one GPU before": 4e6, "params on one GPU after": 14e6}
GB = 1e9


class _Builder:
    def __init__(self) -> None:
        self.params: list[Node] = []
        self.buffers: list[Node] = []
        self.roles: dict[str, str] = {}

    def weight(self, name: str, shape: Sequence[int], role: str = "param") -> Node:
        p = placeholder(name, tuple(shape))
        self.roles[name] = role
        (self.buffers if role in ("mean", "var") else self.params).append(p)
        return p

    def bn_scale_relu(self, h: Node, name: str) -> Node:
        """Batch norm, Caffe's separate scale and shift, relu (the zoo file's seven nodes)."""
        c = h.shape[1]
        stats = [self.weight(f"{name}/bn_{k}", (c,), k if k in ("mean", "var") else "param")
                 for k in ("scale", "bias", "mean", "var")]
        y = batchnorm(h, *stats, name=f"{name}/bn")
        w = reshape(self.weight(f"{name}/scale_w", (c,)), (c, 1, 1))
        b = reshape(self.weight(f"{name}/scale_b", (c,)), (c, 1, 1))
        return relu(add(mul(y, w, name=f"{name}/scale"), b, name=f"{name}/shift"),
                    name=f"{name}/relu")

    def conv(self, h: Node, out: int, k: int, name: str, stride: int = 1, bias: bool = False
             ) -> Node:
        w = self.weight(f"{name}_w", (out, h.shape[1], k, k))
        b = self.weight(f"{name}_b", (out,)) if bias else None
        return conv2d(h, w, b, strides=(stride, stride), pads=(k // 2,) * 4, name=name)


def densenet(blocks: Sequence[int] = DENSENET121["blocks"], batch: int = 64, image: int = 224,
             growth: int = 32, classes: int = 1000) -> dict[str, Any]:
    """DenseNet-BC with ``blocks`` layers per dense block (DenseNet-121: (6, 12, 24, 16)), growth
    rate ``growth``, as the ONNX zoo's densenet121 is built. Returns the zoo's model dict with
    ``params`` (trained), ``buffers`` (batch-norm statistics), ``output``, ``labels``, ``loss``,
    ``make_feed(seed)`` and ``blocks``."""
    blocks = tuple(check_int(b, "densenet: blocks (layers per block)", 1, ShapeError)
                   for b in check_list(blocks, "densenet: blocks", ShapeError))
    batch = check_int(batch, "densenet: batch", 1, ShapeError)
    image = check_int(image, "densenet: image", 32, ShapeError)
    growth = check_int(growth, "densenet: growth", 1, ShapeError)
    classes = check_int(classes, "densenet: classes", 1, ShapeError)
    if not blocks:
        raise ShapeError("densenet: blocks must list at least one block's number of layers")
    nb = _Builder()
    x = placeholder("data", (batch, 3, image, image))
    h = nb.bn_scale_relu(nb.conv(x, 2 * growth, 7, "conv1", stride=2), "conv1")
    h = pool2d(h, (3, 3), "max", strides=(2, 2), pads=(1, 1, 1, 1), name="pool1")
    for i, layers in enumerate(blocks):
        for j in range(layers):
            name = f"conv{i + 2}_{j + 1}"
            r = nb.conv(nb.bn_scale_relu(h, f"{name}/x1"), 4 * growth, 1, f"{name}/x1")
            r = nb.conv(nb.bn_scale_relu(r, f"{name}/x2"), growth, 3, f"{name}/x2")
            h = concat(h, r, axis=1, name=f"{name}/concat")
        blk = nb.bn_scale_relu(h, f"conv{i + 2}_blk")
        if i + 1 < len(blocks):
            h = nb.conv(blk, h.shape[1] // 2, 1, f"conv{i + 2}_blk")
            h = pool2d(h, (2, 2), "avg", strides=(2, 2), name=f"pool{i + 2}")
    out = nb.conv(mean(blk, axis=(2, 3), keepdims=True, name="pool5"), classes, 1, "fc6", bias=True)
    labels = placeholder("labels", (batch,), np.int32)
    loss = softmax_cross_entropy(reshape(out, (batch, classes)), labels, name="loss")
    m: dict[str, Any] = {"data": x, "inputs": [x], "params": nb.params, "buffers": nb.buffers,
                         "roles": nb.roles, "output": out, "labels": labels, "loss": loss,
                         "blocks": blocks,
                         "parameters": sum(p.size for p in nb.params + nb.buffers)}
    from .onnx_import import _feed
    m["make_feed"] = lambda seed=0: _feed(m, seed)
    return m


def concat_bn_values(loss: Node) -> list[Node]:
    """The values that grow quadratically with a block's depth: every concatenation, and every
    batch norm, scale, shift and relu output of a concatenation's shape computed from it."""
    found: list[Node] = []
    grown: set[Node] = set()
    for n in topo_order([loss]):
        if n.op.name == "concat" or (n.op.name in ("batchnorm", "mul", "add", "relu")
                                     and n.inputs and n.inputs[0] in grown
                                     and n.shape == n.inputs[0].shape):
            grown.add(n)
            found.append(n)
    return found


def concat_from_features(model: dict[str, Any]) -> dict[str, Any]:
    """``model`` with each chained concatenation ``concat(concat(x, r1), r2)`` rebuilt as one
    concatenation of the features themselves, ``concat(x, r1, r2)`` (the same values): what
    Pleiss et al.'s shared storage does, writing each layer's input afresh from the stored
    features, so that no concatenation is read by the next one. Same weights, new forward nodes."""
    new: dict[Node, Node] = {}
    for n in topo_order([model["loss"]]):
        if not n.op.computes:
            new[n] = n
            continue
        ins = [new[x] for x in n.inputs]
        if n.op.name == "concat" and n.attrs["axis"] % len(n.shape) == 1:
            ins = [y for x in ins for y in (x.inputs if x.op.name == "concat" else [x])]
        new[n] = Node(n.op, ins, name=n.name, attrs=n.attrs)
    return {**model, "loss": new[model["loss"]], "output": new[model["output"]]}


def pleiss_variants(model: dict[str, Any], order: Sequence[Node] | str | None = None
                    ) -> dict[str, dict[str, float]]:
    """A training step (loss and every weight gradient) planned three ways, in GB:

    * ``naive``: every value its own buffer (:func:`~memlab.memory.plan_memory` with neither
      in-place nor sharing), the concatenations and batch-norm outputs among them;
    * ``shared``: memlab's offset planner on the same graph (:func:`~memlab.memory.plan_offsets`:
      a value's bytes are reused once its last reader has run), which cannot reuse what the
      backward pass still reads: every concatenation and batch-norm output;
    * ``shared + recomputed``: each layer's input concatenated afresh from the stored features
      (:func:`concat_from_features`), the concatenations and batch-norm outputs dropped after use
      and recomputed in the backward pass (:func:`~memlab.checkpoint.recompute_graph`), then the
      same planner: they now live one layer at a time, in shared buffers.

    Each row: ``total`` (planned bytes), ``peak`` (live bytes at the worst step of the order,
    which no plan can beat), ``tags`` (the tag planner's total, NNVM's, for comparison),
    ``gradients`` (the weight gradients the step returns, held to its end; their parameters too
    grow quadratically with depth, as each layer's first convolution reads all features before it)
    and ``concat+bn`` (bytes of the values :func:`concat_bn_values` finds, each counted once: what a
    naive implementation stores, quadratic in the blocks' depth)."""
    from ..memory import order_peak, plan_offsets
    from .zoo import training_outputs
    if not isinstance(model, dict) or not isinstance(model.get("loss"), Node) \
            or "params" not in model:
        raise PlanError(f"pleiss_variants: model must be a model dict with 'loss' and 'params' "
                        f"(from densenet() or from_onnx()), got {type(model).__name__}")
    outs = training_outputs(model)
    counted = sum(n.nbytes for n in concat_bn_values(model["loss"])) / GB
    flat = concat_from_features(model)
    flat_outs = training_outputs(flat)
    keep = set(forward_nodes_of(flat_outs)) - set(concat_bn_values(flat["loss"]))
    recomputed = recompute_graph(flat_outs, keep)
    rows = {}
    for name, graph in (("naive", outs), ("shared", outs), ("shared + recomputed", recomputed)):
        total = plan_memory(graph, inplace=False, share=False, trace=False, order=order) \
            if name == "naive" else plan_offsets(graph, order=order)
        rows[name] = {"total": total.total_bytes / GB, "peak": order_peak(graph, order) / GB,
                      "tags": plan_memory(graph, trace=False, order=order).total_bytes / GB,
                      "gradients": sum(g.nbytes for g in outs[1:]) / GB, "concat+bn": counted}
    return rows


def depth_curve(layers: Sequence[int] = (2, 4, 8, 16), batch: int = 64, image: int = 224
                ) -> list[dict[str, Any]]:
    """:func:`pleiss_variants` for DenseNets of four blocks of ``L`` layers each, per ``L``."""
    return [{"layers": L, **{f"{k} {c}": v for k, row in
                             pleiss_variants(densenet((L,) * 4, batch, image)).items()
                             for c, v in row.items()}} for L in layers]

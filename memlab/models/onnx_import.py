"""Real networks from ONNX files: :func:`from_onnx` builds a memlab graph from any ``.onnx`` model,
and :func:`onnx_zoo` lists the nine model-zoo architectures the ``onnx`` package ships.

ONNX is how models travel between frameworks. The ``onnx`` package (``pip install
'memlab[onnx]'``) keeps under ``onnx/backend/test/data/light/`` the real structure of nine
networks of the ONNX model zoo (AlexNet, GoogLeNet, VGG-19, ResNet-50, DenseNet-121, ...), each
weight replaced by a ``ConstantOfShape`` of the right shape. :func:`from_onnx` sets the batch
and image size, runs ONNX's shape inference, and lowers each ONNX node onto one memlab node of
the same name (two for ``Dropout``: its mask and its output, ONNX's two outputs). Weights become
parameter placeholders, so ``gradients`` gives the training step a planner sees (lecture 7,
p.26-29), and every op computes with numpy, so small imported networks also run.
Constant nodes and integer initializers (the shapes ``Reshape`` reads) become attributes.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import GraphError, MemlabError, ShapeError, UnknownOpError, check_bool, check_int
from ..graph import (Node, add, concat, div, mean, mul, placeholder, relu, softmax_cross_entropy,
                     sub, topo_order)
from ..graph.ops.attention import TRANSPOSE
from ..graph.ops.elementwise import COPY
from ..graph.ops.image import conv2d, pool2d
from ..graph.ops.layers import dropout
from ..graph.ops.normalization import batchnorm, lrn
from ..graph.ops.tensor import MATMUL, RESHAPE
from .onnx_checks import WINDOW_OPS, check_inputs, explain_failure, file_image, too_small
from .onnx_ops import ADD_N, GEMM, LOG_LOSS, SOFTMAX_AXIS

ZOO_DIR = ("backend", "test", "data", "light")


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise MemlabError("from_onnx needs the onnx package: pip install 'memlab[onnx]' "
                          "(make lab and make test install it)") from None
    return onnx


def onnx_zoo() -> list[str]:
    """The names of the model-zoo networks the ``onnx`` package ships (``from_onnx(name)``)."""
    folder = Path(_onnx().__file__).parent.joinpath(*ZOO_DIR)
    return sorted(p.name[len("light_"):-len(".onnx")] for p in folder.glob("light_*.onnx"))


def load_onnx(model: Any) -> Any:
    """An ONNX ``ModelProto`` from a path, a ``ModelProto`` or a name of :func:`onnx_zoo`."""
    onnx = _onnx()
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, str) and not model.endswith(".onnx") and model in onnx_zoo():
        model = Path(onnx.__file__).parent.joinpath(*ZOO_DIR, f"light_{model}.onnx")
    if not isinstance(model, (str, os.PathLike)):
        raise GraphError(f"from_onnx: model must be a path, an onnx.ModelProto or one of "
                         f"{onnx_zoo()}, got {type(model).__name__}")
    if not Path(model).is_file():
        raise GraphError(f"from_onnx: model {str(model)!r} is neither a file nor one of "
                         f"{onnx_zoo()}")
    try:
        proto = onnx.load(str(model))
    except Exception as e:  # protobuf's DecodeError and friends
        raise GraphError(f"from_onnx: {str(model)!r} is not a readable ONNX file (truncated or "
                         f"not ONNX: {type(e).__name__}: {e})") from None
    if not proto.graph.node:
        raise GraphError(f"from_onnx: {str(model)!r} holds no graph nodes (not an ONNX model?)")
    return proto


def _dims(value_info: Any) -> list[int | str] | None:
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim]


def _prepare(proto: Any, batch: int | None, image: int | None) -> tuple[Any, dict, int | None]:
    """A copy of ``proto`` with the batch and image size set and shapes inferred: (model, name ->
    shape of every value, the file's own batch size)."""
    onnx = _onnx()
    from onnx import numpy_helper
    m = onnx.ModelProto()
    m.CopyFrom(proto)
    g = m.graph
    inits = {i.name for i in g.initializer}
    file_batch = None
    for inp in g.input:
        if inp.name in inits:
            continue
        dims = _dims(inp)
        if dims is None:
            raise ShapeError(f"from_onnx: input {inp.name!r} has no shape in the file; memlab "
                             f"needs a static (N, C, H, W)-like shape to plan memory")
        new = list(dims)
        if new and batch is not None:
            file_batch = dims[0] if isinstance(dims[0], int) else None
            new[0] = batch
        if image is not None and len(new) == 4:
            new[2] = new[3] = image
        unknown = [i for i, d in enumerate(new) if not isinstance(d, int) or d <= 0]
        if unknown:
            raise ShapeError(f"from_onnx: input {inp.name!r} has shape {dims}, with dimension(s) "
                             f"{unknown} unknown; pass batch= (dimension 0) and image= (2 and 3)")
        for d, v in zip(inp.type.tensor_type.shape.dim, new):
            d.Clear()
            d.dim_value = v
    # Reshape targets written for the file's batch size follow the new one
    if batch is not None and file_batch not in (None, batch):
        for node in g.node:
            if node.op_type == "Reshape" and node.input[1] in inits:
                init = next(i for i in g.initializer if i.name == node.input[1])
                target = numpy_helper.to_array(init).copy()
                if target.size and target[0] == file_batch:
                    target[0] = batch
                    fixed = numpy_helper.from_array(
                        target, name=f"{init.name}__batch_{node.output[0]}")
                    g.initializer.append(fixed)
                    node.input[1] = fixed.name
    del g.value_info[:]
    for out in g.output:
        out.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    except Exception as e:
        raise ShapeError(explain_failure(m, str(e), batch, image, file_image(proto))) from None
    m = inferred
    shapes = {}
    for vi in [*m.graph.value_info, *m.graph.input, *m.graph.output]:
        dims = _dims(vi)
        if dims is not None and all(isinstance(d, int) for d in dims):
            shapes[vi.name] = tuple(dims)
    return m, shapes, file_batch


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class _Importer:
    """Walks the ONNX nodes in order, keeping ONNX value name -> memlab node (``values``) and the
    constants known at import (``consts``: initializers, ``Constant`` outputs)."""

    def __init__(self, m: Any, shapes: dict, batch_seed: int = 0) -> None:
        from onnx import numpy_helper
        self.m, self.shapes = m, shapes
        self.opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.consts = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
        self.values: dict[str, Node] = {}
        self.params: list[Node] = []
        self.buffers: dict[str, Node] = {}     # batch-norm statistics: counted, not trained
        self.roles: dict[str, str] = {}
        self.nodes: dict[str, Node] = {}
        self.missing: dict[str, str] = {}
        self.stats = {n.input[i]: role for n in m.graph.node if n.op_type == "BatchNormalization"
                      for i, role in ((3, "mean"), (4, "var")) if len(n.input) > i}

    def value(self, name: str) -> Node:
        """The node of ONNX value ``name``; a float initializer becomes a parameter placeholder."""
        if name in self.values:
            return self.values[name]
        if name in self.consts and self.consts[name].dtype.kind == "f":
            p = placeholder(name, self.consts[name].shape, self.consts[name].dtype)
            self._keep(p, self.stats.get(name, "param"))
            return self.values.setdefault(name, p)
        why = self.missing.get(name, "no node or initializer of the file produces it")
        raise GraphError(f"from_onnx: value {name!r} is not available: {why}")

    def _keep(self, p: Node, role: str) -> None:
        self.roles[p.name] = role
        if role in ("mean", "var"):
            self.buffers[p.name] = p
        else:
            self.params.append(p)

    def const(self, name: str, what: str) -> np.ndarray:
        if name not in self.consts:
            raise GraphError(f"from_onnx: {what} ({name!r}) must be a constant of the file")
        return self.consts[name]


def _name(node: Any) -> str:
    return node.name or node.output[0]


def _pads(a: dict, x: Node, kernel: tuple, strides: tuple, dil: tuple) -> list[int]:
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("NOTSET", ""):
        return list(a.get("pads", [0, 0, 0, 0]))
    if auto == "VALID":
        return [0, 0, 0, 0]
    before, after = [], []
    for size, k, s, d in zip(x.shape[2:], kernel, strides, dil):
        total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        before.append(big if auto == "SAME_LOWER" else small)
        after.append(small if auto == "SAME_LOWER" else big)
    return before + after


def _window(a: dict, x: Node, kernel: tuple) -> dict[str, Any]:
    strides = tuple(a.get("strides", (1, 1)))
    dil = tuple(a.get("dilations", (1, 1)))
    return {"strides": strides, "dilations": dil, "pads": _pads(a, x, kernel, strides, dil)}


def _conv(im: _Importer, node: Any, a: dict, name: str) -> Node:
    x, w = im.value(node.input[0]), im.value(node.input[1])
    b = im.value(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if len(x.shape) != 4:
        raise ShapeError(f"from_onnx: node {name!r}: memlab lowers 2-D convolutions only, "
                         f"got input {list(x.shape)}")
    return conv2d(x, w, b, group=a.get("group", 1), name=name, **_window(a, x, tuple(w.shape[2:])))


def _pool(kind: str) -> Callable[..., Node]:
    def lower(im: _Importer, node: Any, a: dict, name: str) -> Node:
        x = im.value(node.input[0])
        k = tuple(a["kernel_shape"])
        return pool2d(x, k, kind, ceil=bool(a.get("ceil_mode", 0)),
                      count_include_pad=bool(a.get("count_include_pad", 0)), name=name,
                      **_window(a, x, k))
    return lower


def _reshape(im: _Importer, node: Any, a: dict, name: str) -> Node:
    x = im.value(node.input[0])
    target = [int(v) for v in im.const(node.input[1], f"node {name!r}: Reshape's shape")]
    target = [x.shape[i] if v == 0 and not a.get("allowzero") else v for i, v in enumerate(target)]
    return RESHAPE(x, name=name, shape=tuple(target))


def _flatten(im: _Importer, node: Any, a: dict, name: str) -> Node:
    x = im.value(node.input[0])
    axis = a.get("axis", 1) % max(len(x.shape), 1)
    lead = int(np.prod(x.shape[:axis], dtype=np.int64))
    return RESHAPE(x, name=name, shape=(lead, int(np.prod(x.shape[axis:], dtype=np.int64))))


def _unsqueeze(im: _Importer, node: Any, a: dict, name: str) -> Node:
    x = im.value(node.input[0])
    axes = a.get("axes") if "axes" in a else im.const(node.input[1], f"node {name!r}: axes")
    shape = list(x.shape)
    rank = len(shape) + len(axes)
    for ax in sorted(int(v) % rank for v in axes):
        shape.insert(ax, 1)
    return RESHAPE(x, name=name, shape=tuple(shape))


def _squeeze(im: _Importer, node: Any, a: dict, name: str) -> Node:
    x = im.value(node.input[0])
    if "axes" in a or len(node.input) > 1:
        axes = a.get("axes") if "axes" in a else im.const(node.input[1], f"node {name!r}: axes")
        drop = {int(v) % len(x.shape) for v in axes}
    else:
        drop = {i for i, n in enumerate(x.shape) if n == 1}
    return RESHAPE(x, name=name, shape=tuple(n for i, n in enumerate(x.shape) if i not in drop))


def _batchnorm(im: _Importer, node: Any, a: dict, name: str) -> Node:
    if a.get("training_mode") or sum(1 for o in node.output if o) > 1:
        raise UnknownOpError(f"from_onnx: node {name!r}: BatchNormalization in training mode "
                             f"(running statistics as outputs) is not supported")
    ins = [im.value(n) for n in node.input]
    return batchnorm(*ins, eps=a.get("epsilon", 1e-5), name=name)


def _gemm(im: _Importer, node: Any, a: dict, name: str) -> Node:
    ins = [im.value(n) for n in node.input if n]
    return GEMM(*ins, name=name, alpha=float(a.get("alpha", 1.0)), beta=float(a.get("beta", 1.0)),
                trans_a=bool(a.get("transA", 0)), trans_b=bool(a.get("transB", 0)))


def _matmul(im: _Importer, node: Any, a: dict, name: str) -> Node:
    x, w = im.value(node.input[0]), im.value(node.input[1])
    return MATMUL(x, w, name=name, trans_a=False, trans_b=False)


def _softmax(im: _Importer, node: Any, a: dict, name: str) -> Node:
    x = im.value(node.input[0])
    coerce = im.opset < 13
    return SOFTMAX_AXIS(x, name=name, axis=int(a.get("axis", 1 if coerce else -1)), coerce=coerce)


def _dropout(im: _Importer, node: Any, a: dict, name: str) -> Node:
    x = im.value(node.input[0])
    ratio = float(a.get("ratio", 0.5))
    if len(node.input) > 1 and node.input[1]:
        ratio = float(im.const(node.input[1], f"node {name!r}: Dropout's ratio"))
    if ratio == 0:
        return COPY(x, name=name)
    out = dropout(x, ratio, key=len(im.nodes), name=name)   # its mask: node ``name + ".mask"``
    if len(node.output) > 1 and node.output[1]:
        im.values[node.output[1]] = out.inputs[1]      # ONNX's mask output is memlab's mask node
    return out


def _binary(fn: Callable[..., Node]) -> Callable[..., Node]:
    return lambda im, node, a, name: fn(im.value(node.input[0]), im.value(node.input[1]), name=name)


def _sum(im: _Importer, node: Any, a: dict, name: str) -> Node:
    ins = [im.value(n) for n in node.input]
    if len(ins) == 1:
        return COPY(ins[0], name=name)
    return add(*ins, name=name) if len(ins) == 2 else ADD_N(*ins, name=name)


def _transpose(im: _Importer, node: Any, a: dict, name: str) -> Node:
    x = im.value(node.input[0])
    perm = tuple(int(p) for p in a.get("perm", range(len(x.shape))[::-1]))
    return TRANSPOSE(x, name=name, axes=perm)


def _constant_of_shape(im: _Importer, node: Any, a: dict, name: str) -> Node:
    dims = im.const(node.input[0], f"node {name!r}: ConstantOfShape's shape")
    shape = tuple(int(n) for n in dims)
    value = a.get("value")
    dtype = np.float32 if value is None else __import__("onnx").numpy_helper.to_array(value).dtype
    p = placeholder(node.output[0], shape, dtype)
    im._keep(p, im.stats.get(node.output[0], "param"))
    return p


#: ONNX op type -> how memlab lowers it (``Constant`` is read at import: see :func:`from_onnx`).
LOWERINGS: dict[str, Callable[..., Node]] = {
    "Conv": _conv, "Gemm": _gemm, "MatMul": _matmul,
    "Relu": lambda im, node, a, name: relu(im.value(node.input[0]), name=name),
    "LRN": lambda im, node, a, name: lrn(im.value(node.input[0]), a["size"], a.get("alpha", 1e-4),
                                         a.get("beta", 0.75), a.get("bias", 1.0), name=name),
    "MaxPool": _pool("max"), "AveragePool": _pool("avg"),
    "GlobalAveragePool": lambda im, node, a, name: mean(im.value(node.input[0]), axis=(2, 3),
                                                        keepdims=True, name=name),
    "BatchNormalization": _batchnorm,
    "Concat": lambda im, node, a, name: concat(*(im.value(n) for n in node.input),
                                               axis=a["axis"], name=name),
    "Add": _binary(add), "Sub": _binary(sub), "Mul": _binary(mul), "Div": _binary(div),
    "Sum": _sum, "Dropout": _dropout, "Flatten": _flatten, "Reshape": _reshape,
    "Unsqueeze": _unsqueeze, "Squeeze": _squeeze, "Transpose": _transpose, "Softmax": _softmax,
    "Identity": lambda im, node, a, name: COPY(im.value(node.input[0]), name=name),
    "ConstantOfShape": _constant_of_shape,
}
SUPPORTED = sorted([*LOWERINGS, "Constant"])


def from_onnx(model: Any, batch: int | None = None, image: int | None = None,
              loss: bool = True) -> dict[str, Any]:
    """A memlab graph of an ONNX model: a path, an ``onnx.ModelProto`` or a name of
    :func:`onnx_zoo`. ``batch`` and ``image`` (height = width) replace the file's input sizes;
    ONNX shape inference then checks every value, and each memlab node's shape is compared with it.

    Returns a model dict like the zoo's (``training_outputs(m)`` gives the training step):
    ``data`` (the first input), ``inputs``, ``params`` (trainable weights, placeholders),
    ``buffers`` (batch-norm running statistics: counted in ``parameters``, not trained),
    ``parameters`` (total weight elements), ``output`` (the first graph output), ``nodes`` (ONNX
    node name -> memlab node), ``labels`` and ``loss`` (with ``loss=True``: the log-loss of a
    softmax output against integer labels, or softmax cross-entropy on any other output), ``ops``
    (ONNX op type -> count) and ``make_feed(seed)``, random inputs, labels and weights to run it.
    """
    onnx = _onnx()
    if batch is not None:
        batch = check_int(batch, "from_onnx: batch", low=1, error=ShapeError)
    if image is not None:
        image = check_int(image, "from_onnx: image", low=1, error=ShapeError)
    loss = check_bool(loss, "from_onnx: loss", GraphError)
    proto = load_onnx(model)
    check_inputs([i for i in proto.graph.input
                  if i.name not in {t.name for t in proto.graph.initializer}], image)
    m, shapes, _ = _prepare(proto, batch, image)
    im = _Importer(m, shapes)
    inits = set(im.consts)
    inputs = []
    for inp in m.graph.input:
        if inp.name not in inits:
            elem = onnx.helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type)
            x = placeholder(inp.name, shapes[inp.name], elem)
            im.values[inp.name] = x
            inputs.append(x)
    ops: dict[str, int] = {}
    for node in m.graph.node:
        name, a = _name(node), _attrs(node)
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
        if node.domain not in ("", "ai.onnx") or (node.op_type not in LOWERINGS
                                                  and node.op_type != "Constant"):
            raise UnknownOpError(f"from_onnx: node {name!r} has op type {node.op_type!r}"
                                 f"{' of domain ' + repr(node.domain) if node.domain else ''}, "
                                 f"which memlab does not lower; supported: {', '.join(SUPPORTED)}")
        if node.op_type == "Constant":
            im.consts[node.output[0]] = onnx.numpy_helper.to_array(a["value"])
            continue
        try:
            out = LOWERINGS[node.op_type](im, node, a, name)
        except ShapeError as e:
            if str(e).startswith("from_onnx"):
                raise
            small = too_small(m, image) if image is not None and node.op_type in WINDOW_OPS \
                else None
            if small:
                size = file_image(proto)
                raise ShapeError(f"from_onnx: {small}"
                                 + (f" (the file's input is {size})" if size else "")) from None
            raise ShapeError(f"from_onnx: node {name!r} ({node.op_type}) at batch {batch}, image "
                             f"{image}: {e}") from None
        want = shapes.get(node.output[0])
        if want is not None and tuple(out.shape) != want:
            raise ShapeError(f"from_onnx: node {name!r} ({node.op_type}): memlab infers "
                             f"{list(out.shape)}, ONNX shape inference {list(want)}")
        out.attrs["onnx_op"] = node.op_type
        im.values[node.output[0]] = out
        im.nodes[name] = out
        for extra in node.output[1:]:
            if extra and extra not in im.values:
                im.missing[extra] = f"it is output {extra!r} of {node.op_type} node {name!r}, " \
                                    f"which memlab does not model"
    outputs = [im.value(o.name) for o in m.graph.output]
    result: dict[str, Any] = {
        "name": m.graph.name, "data": inputs[0] if inputs else None, "inputs": inputs,
        "params": im.params, "buffers": list(im.buffers.values()), "output": outputs[0],
        "outputs": outputs, "nodes": im.nodes, "ops": ops, "roles": im.roles,
        "parameters": int(sum(p.size for p in [*im.params, *im.buffers.values()]))}
    if loss:
        out = outputs[0]
        labels = placeholder("labels", out.shape[:1], np.int32)
        flat = out if len(out.shape) == 2 else RESHAPE(out, name="loss/flatten",
                                                       shape=(out.shape[0], -1))
        probs = out.op is SOFTMAX_AXIS
        result["labels"] = labels
        result["loss"] = (LOG_LOSS(flat, labels, name="loss") if probs
                          else softmax_cross_entropy(flat, labels, name="loss"))
    result["make_feed"] = lambda seed=0: _feed(result, seed)
    return result


def _feed(m: dict[str, Any], seed: int) -> dict[Node, np.ndarray]:
    """Random inputs and weights (small, so activations stay finite), variances in [0.5, 1.5]
    and labels in range: a feed to run an imported network with ``Executor``."""
    rng = np.random.default_rng(seed)
    feed: dict[Node, np.ndarray] = {}
    for x in [*m["inputs"], *m["params"], *m["buffers"]]:
        fan_in = int(np.prod(x.shape[1:])) if len(x.shape) > 1 else 1
        v = rng.standard_normal(x.shape) / np.sqrt(max(fan_in, 1))
        if m["roles"].get(x.name) == "var":
            v = rng.uniform(0.5, 1.5, x.shape)
        feed[x] = v.astype(x.dtype)
    if "labels" in m:
        classes = int(np.prod(m["output"].shape[1:]))
        feed[m["labels"]] = rng.integers(0, classes, m["labels"].shape).astype(np.int32)
    return feed


def count_nodes(m: dict[str, Any]) -> int:
    """Nodes of the imported forward graph (placeholders included)."""
    return len(topo_order([m["loss"] if "loss" in m else m["output"]]))

"""Why an ONNX network does not import at the sizes asked, said in the user's terms.

ONNX's shape inference reports the first node it cannot type, then every node after it
("Input 0 expected to have type but instead is null"), with element types as enum numbers
("(7) vs (1)"). :func:`explain_failure` walks the network with the shapes ONNX could infer and
names what is wrong: a convolution or pooling window larger than the feature map it gets at that
image size, a fully connected layer whose input size the image fixes, or element types by name.
:func:`check_inputs` refuses, before inference, inputs memlab cannot import (integer elements, an
``image=`` for an input that has no height and width).
"""
from __future__ import annotations

import re
from typing import Any

from ..errors import ShapeError

#: ONNX ops with a sliding window over the image: (input, kernel) read from the node.
WINDOW_OPS = ("Conv", "MaxPool", "AveragePool")
FLOAT_TYPES = ("FLOAT", "DOUBLE")


def type_name(code: int) -> str:
    """An ONNX element type by its numpy name (``1`` -> ``"float32"``, ``7`` -> ``"int64"``)."""
    from onnx import TensorProto, helper
    try:
        return str(helper.tensor_dtype_to_np_dtype(code))
    except Exception:
        return TensorProto.DataType.Name(code).lower() if code in TensorProto.DataType.values() \
            else f"type {code}"


def check_inputs(inputs: list[Any], image: int | None) -> None:
    """Refuse inputs of integer (or other non-float) elements, and ``image`` when no input is
    ``(N, C, H, W)``: memlab's imported networks compute on floating-point images."""
    from onnx import TensorProto
    for inp in inputs:
        code = inp.type.tensor_type.elem_type
        if TensorProto.DataType.Name(code) not in FLOAT_TYPES:
            raise ShapeError(
                f"from_onnx: input {inp.name!r} holds {type_name(code)} elements; memlab imports "
                f"networks whose inputs are floating point (float32 or float64, e.g. an image's "
                f"pixels), so declare {inp.name!r} as float32 in the file")
    if image is not None:
        ranks = {inp.name: len(inp.type.tensor_type.shape.dim) for inp in inputs}
        if inputs and all(r != 4 for r in ranks.values()):
            shown = ", ".join(f"{n!r} is {r}-D" for n, r in ranks.items())
            raise ShapeError(
                f"from_onnx: image={image} sets the height and width of an (N, C, H, W) input, "
                f"but this network has none ({shown}); leave image out")


def file_image(proto: Any) -> str:
    """The file's own image size, as "224 x 224", or "" when the file does not fix one."""
    inits = {i.name for i in proto.graph.initializer}
    for inp in proto.graph.input:
        dims = inp.type.tensor_type.shape.dim
        if inp.name not in inits and len(dims) == 4 and all(d.HasField("dim_value")
                                                            for d in dims[2:]):
            return f"{dims[2].dim_value} x {dims[3].dim_value}"
    return ""


def _shapes(m: Any) -> dict[str, list[int]]:
    """Every value's inferred shape, non-positive sizes kept (ONNX's strict mode stops there)."""
    import onnx
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
    out: dict[str, list[int]] = {}
    for vi in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        t = vi.type.tensor_type
        if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            out[vi.name] = [d.dim_value for d in t.shape.dim]
    for init in inferred.graph.initializer:
        out[init.name] = list(init.dims)
    return out


def _window(node: Any, shapes: dict[str, list[int]]) -> tuple[list[int], list[int], list[int]]:
    """(kernel, dilations, pads) of a Conv or pooling node (the kernel from its weight if
    absent)."""
    from onnx import helper
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    kernel = list(a.get("kernel_shape") or shapes.get(node.input[1], [0, 0, 0, 0])[2:])
    dil = list(a.get("dilations") or [1] * len(kernel))
    auto = a.get("auto_pad", b"NOTSET")
    pads = list(a.get("pads") or [0] * 2 * len(kernel)) if auto in (b"NOTSET", "NOTSET", b"") \
        else [9999] * 2 * len(kernel)   # SAME padding always fits
    return kernel, dil, pads


def too_small(m: Any, image: int, shapes: dict[str, list[int]] | None = None) -> str | None:
    """The message for the first window (convolution or pooling) that does not fit the feature
    map it gets, or None when every window fits."""
    shapes = _shapes(m) if shapes is None else shapes
    for node in m.graph.node:
        if node.op_type not in WINDOW_OPS or node.input[0] not in shapes:
            continue
        x = shapes[node.input[0]]
        if len(x) != 4:
            continue
        kernel, dil, pads = _window(node, shapes)
        spans = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
        room = [x[2 + i] + pads[i] + pads[i + len(kernel)] for i in range(len(kernel))]
        if any(r < s for r, s in zip(room, spans)):
            name = node.name or node.output[0]
            what = "convolution" if node.op_type == "Conv" else "pooling"
            return (f"image={image} is too small for this network's {what}: node {name!r} "
                    f"({node.op_type}) gets a {x[2]} x {x[3]} feature map, smaller than its "
                    f"{' x '.join(map(str, spans))} window (padding "
                    f"{', '.join(map(str, pads))}); give a larger image=")
    return None


def explain_failure(m: Any, message: str, batch: int | None, image: int | None,
                    file_size: str) -> str:
    """The user-terms reason ONNX's shape inference failed with ``message`` on ``m``."""
    own = f" (the file's input is {file_size})" if file_size else ""
    if image is not None:
        reason = too_small(m, image)
        if reason:
            return f"from_onnx: {reason}{own}"
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    first = next((ln for ln in lines if "node name" in ln), lines[-1] if lines else message)
    found = re.search(r"\(op_type:(\w+), node name: ([^)]*)\): (.*)", first)
    if not found:
        return f"from_onnx: ONNX shape inference failed at batch {batch}, image {image}: {first}"
    op, name, why = found.groups()
    why = re.sub(r"^\[\w+\] ", "", why)
    why = re.sub(r"\((\d+)\) vs \((\d+)\)",
                 lambda g: f"{type_name(int(g[1]))} vs {type_name(int(g[2]))}", why)
    node = next((n for n in m.graph.node if (n.name or n.output[0]) == name), None)
    shapes = _shapes(m)
    ins = "" if node is None else "; its inputs: " + ", ".join(
        f"{i} {shapes[i]}" if i in shapes else f"{i} (unknown)" for i in node.input if i)
    hint = ""
    if op in ("Gemm", "MatMul") and image is not None and "mismatch" in why:
        hint = (f". At image {image} the features reaching this fully connected layer are not "
                f"the number its weight takes: the network fixes the image size{own}")
    elif image is not None:
        hint = f" (at image {image}{'; ' + own.strip(' ()') if own else ''})"
    return f"from_onnx: node {name!r} ({op}) cannot be typed: {why}{ins}{hint}"

"""Convolution workspaces as real libraries document them (slides p.35-36 (b), "runtime total").

A convolution may ask for scratch memory while it runs (:mod:`memlab.graph.workspace`). How much
depends on the algorithm, and no figure is invented here; two documented cases bound it:

* **cuDNN's implicit GEMM** (``CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM``): the cuDNN API reference
  says it computes the convolution as a matrix product *without forming* the matrix that holds
  the input, and needs no workspace: :data:`CUDNN_IMPLICIT_GEMM` is the empty table (0 bytes).
* **The explicit GEMM** (cuDNN's ``CUDNN_CONVOLUTION_FWD_ALGO_GEMM``, and MXNet's own convolution
  when cuDNN is off) forms that matrix: the input unfolded into columns ("im2col"),
  ``C·kh·kw`` rows by ``H'·W'`` columns per image. MXNet's ``Convolution`` documents a
  ``workspace`` argument, "maximum temporary workspace allowed for convolution (MB)", default
  1024, which "determines the effective batch size of the convolution kernel" and is enlarged so
  that one image always fits. :func:`mxnet_gemm` sizes each convolution's workspace that way:
  the columns of as many images as fit in the limit, at least one, never more than the batch.
  The backward ops unfold the same matrix (for the weight gradient) or fold into it (for the
  input gradient), so they get the same workspace. A 1x1 convolution with stride 1 and no
  padding needs no unfolding: its input already is the matrix.

The exact bytes a given cuDNN version picks are returned at run time by
``cudnnGetConvolutionForwardWorkspaceSize`` (and the backward versions); :func:`mxnet_gemm` is the
size of the matrix the documentation describes, in fp32, not a measurement.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..errors import GraphError, check_callable, check_int, check_list
from ..graph import Node, topo_order

GB = 1e9

#: cuDNN's implicit-GEMM algorithm: no workspace (an empty table for ``set_workspace``).
CUDNN_IMPLICIT_GEMM: dict[str, int] = {}
#: MXNet's documented default for ``Convolution(workspace=...)``, in MB (2**20 bytes).
MXNET_WORKSPACE_MB = 1024
#: the shape-only convolution ops and their gradient ops (``shape_only``, ``from_onnx``)
CONV_OPS = ("conv2d", "conv2d_grad", "conv2d_dx", "conv2d_dw")


def columns_per_image(node: Node) -> int:
    """Bytes of the unfolded input matrix (``C·kh·kw x H'·W'`` in the node's dtype) for one
    image of the convolution that ``node`` computes or differentiates; 0 for a 1x1 convolution
    that keeps the image size (no unfolding). ``node`` is a convolution (``conv2d``: inputs
    ``x, w``) or a gradient op of one: shape-only ``conv2d_grad`` (``grad, x, w``),
    ``conv2d_dx`` (``grad, w``, the input's shape) or ``conv2d_dw`` (``x, grad``)."""
    if not isinstance(node, Node):
        raise GraphError(f"columns_per_image: node must be a convolution Node ({', '.join(CONV_OPS)}), "
                         f"got {type(node).__name__}")
    name, ins = node.op.name, node.inputs
    try:
        if name == "conv2d":
            x, w, y = ins[0].shape, ins[1].shape, node.shape
        elif name == "conv2d_grad":
            y, x, w = ins[0].shape, ins[1].shape, ins[2].shape
        elif name == "conv2d_dx":
            y, w, x = ins[0].shape, ins[1].shape, node.shape
        elif name == "conv2d_dw":
            x, y, w = ins[0].shape, ins[1].shape, node.shape
        else:
            raise IndexError
        c, (kh, kw), (ho, wo) = x[1], w[2:4], y[2:4]
    except (IndexError, ValueError):
        raise GraphError(f"columns_per_image: {node.name!r} ({name}) is not one of the "
                         f"convolution ops {CONV_OPS} with 4-D input, weight and output") from None
    if kh == kw == 1 and (ho, wo) == tuple(x[2:4]):
        return 0
    return int(c * kh * kw * ho * wo * node.dtype.itemsize)


def mxnet_gemm(limit_mb: int = MXNET_WORKSPACE_MB) -> dict[str, Callable[[Node], int]]:
    """A :func:`~memlab.graph.set_workspace` table for MXNet's explicit-GEMM convolution: each
    convolution op holds the columns of ``min(batch, max(1, limit // columns_per_image))``
    images while it runs (module docstring)."""
    limit = check_int(limit_mb, "mxnet_gemm: limit_mb", low=1, error=GraphError) * 2 ** 20

    def size(node: Node) -> int:
        per = columns_per_image(node)
        if per == 0:
            return 0
        batch = node.inputs[0].shape[0]
        return min(batch, max(1, limit // per)) * per

    return {name: size for name in CONV_OPS}


def runtime_totals(rows: Sequence[Mapping[str, Any]], build: Callable[[int], Mapping[str, Any]],
                   workspace: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Slides p.35-36 (b), "runtime total memory", from panel (a)'s rows
    (:func:`~memlab.models.resnet_curve` / :func:`~memlab.models.lstm_curve`: feature maps and
    their gradients): each row gets, in GB, the ``weights`` and their ``gradients`` (held to the
    end of a step), the batch's ``inputs`` (data and labels), the ``workspace`` (the largest
    scratch one op of ``build(x)``'s forward graph asks for under the table ``workspace``; the
    backward convolutions unfold the same matrices, and one scratch buffer serves every op, as a
    framework's temporary space does) and ``"<line> total"`` for ``sharing`` and ``sublinear``:
    the feature maps plus all of these."""
    rows = check_list(rows, "runtime_totals: rows (of resnet_curve or lstm_curve)", GraphError)
    if any(not isinstance(r, Mapping) or "x" not in r for r in rows):
        raise GraphError("runtime_totals: rows must be the dicts resnet_curve or lstm_curve return")
    build = check_callable(build, "runtime_totals: build (size -> model)", GraphError)
    if workspace is not None and not isinstance(workspace, Mapping):
        raise GraphError(f"runtime_totals: workspace must map op names to bytes (or be None), "
                         f"got {type(workspace).__name__}")
    out = []
    for r in rows:
        model = build(r["x"])
        params = {id(p) for p in model["params"]}
        nodes = topo_order([model["loss"]])
        weights = sum(p.nbytes for p in model["params"])
        inputs = sum(n.nbytes for n in nodes if not n.op.computes and n.op.name == "placeholder"
                     and id(n) not in params)
        work = 0
        for n in nodes:
            size = (workspace or {}).get(n.op.name)
            if size is not None and n.op.computes:
                work = max(work, size(n) if callable(size) else int(size))
        row = dict(r, weights=weights / GB, gradients=weights / GB, inputs=inputs / GB,
                   workspace=work / GB)
        for line in ("sharing", "sublinear"):
            if line in r:
                row[f"{line} total"] = r[line] + (2 * weights + inputs + work) / GB
        out.append(row)
    return out

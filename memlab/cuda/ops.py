"""Which kernel computes which graph op: what the device executor calls for every node.

:func:`check_node` says before anything runs whether a node can run on the device (an op with a
kernel, float32 values) and raises a :class:`~memlab.errors.DeviceError` naming the node if not;
:func:`launch` runs the node's kernel from its inputs' device arrays into its output's.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import DeviceError, MemlabError, ShapeError
from ..graph import Node
from .elementwise import BINARY, MAXDIM, binary, fill, place, take, unary
from .nn import conv, conv_wgrad, flip, onehot, pool, softmax, softmax_xent
from .device import F32, check_shape
from .matmul import matmul
from .embedding import accumulate, gather, scatter_add
from .reduce import reduce_axes, sum_to


def _axes(node: Node) -> list[int]:
    nd = len(node.inputs[0].shape)
    axis = node.attrs["axis"]
    if axis is None:
        return list(range(nd))
    return [a % nd for a in ((axis,) if isinstance(axis, int) else axis)]


def _concat(node: Node, xs: Sequence[Any], out: Any) -> None:
    axis, start = int(node.attrs["axis"]) % len(node.shape), 0
    for x in xs:
        place(x, out, axis, start)
        start += int(x.shape[axis])


def _pad(node: Node, xs: Sequence[Any], out: Any) -> None:
    fill(out, 0.0)
    place(xs[0], out, node.attrs["axis"], node.attrs["before"])


def _embedding_grad(node: Node, xs: Sequence[Any], out: Any) -> None:
    fill(out, 0.0)
    scatter_add(xs[0], xs[1], out, f"node {node.name!r}")


Launcher = Callable[[Node, Sequence[Any], Any], None]
KERNELS: dict[str, Launcher] = {
    **{name: (lambda name: lambda n, xs, out: unary(name, xs[0], out))(name)
       for name in ("neg", "exp", "log", "sigmoid", "tanh", "relu")},
    **{name: (lambda name: lambda n, xs, out: binary(name, xs[0], xs[1], out))(name)
       for name in BINARY},
    "full": lambda n, xs, out: fill(out, n.attrs["value"]),
    "broadcast_to": lambda n, xs, out: unary("identity", xs[0], out),
    "reshape": lambda n, xs, out: unary("identity", xs[0].reshape(out.shape), out),
    "sum_to": lambda n, xs, out: sum_to(xs[0], out),
    "sum": lambda n, xs, out: reduce_axes(xs[0], out, _axes(n)),
    "mean": lambda n, xs, out: reduce_axes(xs[0], out, _axes(n), mean=True),
    "matmul": lambda n, xs, out: matmul(xs[0], xs[1], out, n.attrs["trans_a"], n.attrs["trans_b"]),
    "softmax": lambda n, xs, out: softmax(xs[0], out),
    "onehot": lambda n, xs, out: onehot(xs[0], out, f"node {n.name!r}"),
    "softmax_xent": lambda n, xs, out: softmax_xent(xs[0], xs[1], out, f"node {n.name!r}"),
    "pool": lambda n, xs, out: pool(xs[0], out, n.attrs["window"]),
    "conv": lambda n, xs, out: conv(xs[0], xs[1], out),
    "flip": lambda n, xs, out: flip(xs[0], out),
    "conv_wgrad": lambda n, xs, out: conv_wgrad(xs[0], xs[1], out),
    "concat": _concat,
    "slice": lambda n, xs, out: take(xs[0], out, n.attrs["axis"], n.attrs["start"]),
    "pad": _pad,
    "copy": lambda n, xs, out: unary("identity", xs[0], out),
    "embedding": lambda n, xs, out: gather(xs[0], xs[1], out, f"node {n.name!r}"),
    "embedding_grad": _embedding_grad,
    "accumulate": lambda n, xs, out: accumulate(n.attrs["part"].op.name, n.attrs["part"].attrs,
                                                xs, out),
}
#: inputs that may hold integers (labels) rather than float32: op name -> input positions
INTEGER_INPUTS = {"onehot": (0,), "softmax_xent": (1,), "embedding": (1,), "embedding_grad": (1,)}


def supported_ops() -> list[str]:
    """Names of the ops the device runs."""
    return sorted(KERNELS)


def check_node(node: Node) -> None:
    """Raise :class:`DeviceError` unless ``node`` can run on the device: an op with a kernel, a
    float32 output, float32 inputs (integer labels where the op takes labels), at most 4 axes."""
    name = node.op.name
    if name not in KERNELS:
        raise DeviceError(f"node {node.name!r}: op {name!r} has no CUDA kernel; the device "
                          f"runs {', '.join(supported_ops())}")
    if node.dtype != F32:
        raise DeviceError(f"node {node.name!r} ({name}) has dtype {node.dtype}; the CUDA "
                          f"kernels take float32 only")
    labels = INTEGER_INPUTS.get(name, ())
    if name == "accumulate":                 # the contribution's inputs follow the accumulator
        labels = tuple(i + 1 for i in INTEGER_INPUTS.get(node.attrs["part"].op.name, ()))
    for i, x in enumerate(node.inputs):
        ok = x.dtype.kind in "iu" if i in labels else x.dtype == F32 or _weak(x)
        if not ok:
            raise DeviceError(f"node {node.name!r} ({name}): input {x.name!r} has dtype "
                              f"{x.dtype}; the CUDA kernels take float32 only")
        if len(x.shape) > MAXDIM:
            raise ShapeError(f"node {node.name!r}: input {x.name!r} has {len(x.shape)} axes; "
                             f"the CUDA kernels take at most {MAXDIM}")


def _weak(x: Node) -> bool:
    """A 0-d float constant (``1.0 - y``): loaded as float32."""
    return x.op.name == "constant" and x.shape == () and x.dtype.kind == "f"


def device_value(node: Node, array: np.ndarray) -> np.ndarray:
    """A fed or constant value as the device takes it: 0-d float constants become float32."""
    return np.asarray(array, F32) if _weak(node) else np.asarray(array)


def launch(node: Node, inputs: Sequence[Any], out: Any) -> None:
    """Run ``node``'s kernel on its inputs' device arrays into ``out`` (checked first)."""
    check_node(node)
    check_shape(f"node {node.name!r}'s output", out, node.shape)
    try:
        KERNELS[node.op.name](node, inputs, out)
    except MemlabError:
        raise
    except Exception as e:  # a launch failure: say which node
        raise DeviceError(f"node {node.name!r} ({node.op.name}) failed on the device: "
                          f"{type(e).__name__}: {e}") from e

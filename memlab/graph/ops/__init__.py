"""Ops of the computational graph, each with compute, shape inference,
in-place permission and a gradient that builds new nodes (CSE599G1 a1)."""
from ..node import Node
from .base import Op, full, ones_like, PLACEHOLDER, CONSTANT
from .elementwise import (add, sub, mul, div, copy, neg, exp, log, sigmoid, tanh, relu, relu_grad,
                          broadcast_to, sum_to)
from .tensor import matmul, sum, mean, reshape, concat, slice_axis, pad_axis
from .nn import softmax, onehot, softmax_cross_entropy, pool, conv, flip, conv_wgrad
from .embedding import embedding, embedding_grad
from .accumulate import accumulate
from .layers import layernorm, gelu, dropout
from .attention import bmatmul, transpose, causal_mask
from .flash import tiled_attention
from .image import conv2d, pool2d
from .normalization import lrn, batchnorm

__all__ = ["Op", "full", "ones_like", "PLACEHOLDER", "CONSTANT",
           "add", "sub", "mul", "div", "copy", "neg", "exp", "log", "sigmoid", "tanh", "relu", "relu_grad",
           "broadcast_to", "sum_to", "matmul", "sum", "mean", "reshape", "concat", "slice_axis",
           "pad_axis", "softmax", "onehot", "softmax_cross_entropy", "pool", "conv", "flip",
           "conv_wgrad", "embedding", "embedding_grad", "accumulate",
           "layernorm", "gelu", "dropout", "bmatmul", "transpose", "causal_mask",
           "tiled_attention", "conv2d", "pool2d", "lrn", "batchnorm"]


def _bind_operators() -> None:
    """Give :class:`~memlab.graph.node.Node` its Python operators (``a * b + 3`` builds nodes, p.10).

    Bound here, where the ops are defined, so that ``node.py`` imports no op module.
    """
    Node.__add__ = lambda a, b: add(a, b)
    Node.__radd__ = lambda a, b: add(b, a)
    Node.__sub__ = lambda a, b: sub(a, b)
    Node.__rsub__ = lambda a, b: sub(b, a)
    Node.__mul__ = lambda a, b: mul(a, b)
    Node.__rmul__ = lambda a, b: mul(b, a)
    Node.__truediv__ = lambda a, b: div(a, b)
    Node.__rtruediv__ = lambda a, b: div(b, a)
    Node.__neg__ = lambda a: neg(a)
    Node.__matmul__ = lambda a, b: matmul(a, b)


_bind_operators()

"""Ops of the computational graph, each with compute, shape inference,
in-place permission and a gradient that builds new nodes (CSE599G1 a1)."""
from .base import Op, full, ones_like, PLACEHOLDER, CONSTANT
from .elementwise import (add, sub, mul, div, neg, exp, log, sigmoid, tanh, relu, relu_grad,
                          broadcast_to, sum_to)
from .tensor import matmul, sum, mean, reshape, concat, slice_axis, pad_axis
from .nn import softmax, onehot, softmax_cross_entropy, pool, conv, flip, conv_wgrad

__all__ = ["Op", "full", "ones_like", "PLACEHOLDER", "CONSTANT",
           "add", "sub", "mul", "div", "neg", "exp", "log", "sigmoid", "tanh", "relu", "relu_grad",
           "broadcast_to", "sum_to", "matmul", "sum", "mean", "reshape", "concat", "slice_axis",
           "pad_axis", "softmax", "onehot", "softmax_cross_entropy", "pool", "conv", "flip",
           "conv_wgrad"]

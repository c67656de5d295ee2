"""What each op's backward reads, memlab against PyTorch (lesson 15, "One memory model").

PyTorch documents every derivative in ``tools/autograd/derivatives.yaml``: the formula names the
tensors its backward reads, ``self`` (the input), ``other`` (a second input), ``result`` (the
output) or a saved mask, and autograd saves exactly those. :data:`PYTORCH` copies the formula of
each op below; :func:`agreement` reads memlab's choice off the gradient graph each op builds
(:func:`~memlab.graph.saved_for_backward`), so the two columns come from different places.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..graph import (Node, add, div, dropout, exp, gelu, log, matmul, mul, placeholder, relu,
                     saved_for_backward, sigmoid, softmax, tanh)

#: op -> (what PyTorch saves, the derivatives.yaml formula that says so)
PYTORCH: dict[str, tuple[str, str]] = {
    "relu": ("output", "threshold_backward(grad, result, 0)"),
    "sigmoid": ("output", "sigmoid_backward(grad, result)"),
    "tanh": ("output", "tanh_backward(grad, result)"),
    "exp": ("output", "grad * result"),
    "softmax": ("output", "_softmax_backward_data(grad, result, dim, self.scalar_type())"),
    "log": ("input", "grad.div(self.conj())"),
    "gelu": ("input", "gelu_backward(grad, self, approximate)"),
    "matmul": ("inputs", "mm: grad.mm(mat2.t()), self.t().mm(grad)"),
    "mul": ("inputs", "grad * other, grad * self"),
    "div": ("inputs", "grad / other, -grad * self / (other * other)"),
    "dropout": ("mask", "native_dropout_backward(grad, result1, scale)"),
    "add": ("nothing", "grad, grad (alpha aside)"),
}


def _x(name: str = "x", shape: tuple[int, ...] = (4, 6)) -> Node:
    return placeholder(name, shape, np.float64)


#: one small memlab node per op of :data:`PYTORCH`
BUILD: dict[str, Callable[[], Node]] = {
    "relu": lambda: relu(_x()), "sigmoid": lambda: sigmoid(_x()),
    "tanh": lambda: tanh(_x()), "exp": lambda: exp(_x()),
    "softmax": lambda: softmax(_x()), "log": lambda: log(_x()),
    "gelu": lambda: gelu(_x()), "matmul": lambda: matmul(_x(), _x("w", (6, 3))),
    "mul": lambda: mul(_x(), _x("b")), "div": lambda: div(_x(), _x("b")),
    "dropout": lambda: dropout(_x(), 0.5), "add": lambda: add(_x(), _x("b")),
}


def saved_kind(node: Node) -> str:
    """What ``node``'s backward reads, in :data:`PYTORCH`'s words: ``"output"``, ``"input"``
    (its one float input), ``"inputs"`` (several), ``"mask"`` (a non-float input only),
    ``"output and input"`` or ``"nothing"``."""
    saved = saved_for_backward(node)
    ins = [x for x in saved if x is not node]
    floats = [x for x in ins if x.dtype.kind == "f"]
    if node in saved:
        return "output and input" if floats else "output"
    if floats:
        return "inputs" if len(floats) > 1 else "input"
    return "mask" if ins else "nothing"


def agreement() -> list[tuple[str, str, str, str]]:
    """``(op, memlab saves, PyTorch saves, PyTorch's formula)`` for every op of :data:`PYTORCH`."""
    return [(op, saved_kind(BUILD[op]()), kind, formula) for op, (kind, formula) in PYTORCH.items()]

"""The op graph: nodes, ops and automatic differentiation (CSE599G1 lecture 7, p.5-13, p.26-27).

A :class:`Node` is a value computed by an :class:`Op` from input nodes (:mod:`.node`); the
executor and the planners walk the graph in topological order (:mod:`.traverse`, p.12); every op
has a numpy compute, shape inference, an in-place permission and a gradient that returns new nodes
(:mod:`.ops`, CSE599G1 assignment 1); :func:`gradients` differentiates by extending the graph
(:mod:`.autodiff`, p.6, p.26-27). This layer imports only :mod:`memlab.errors`.
"""
from .node import Node, Op, placeholder, constant, as_node, PLACEHOLDER, CONSTANT, DEFAULT_DTYPE
from .traverse import as_list, topo_order, last_readers, priority_order, consumers, check_order
from .scope import Scope, scope
from .ops import *  # noqa: F401,F403  (add, mul, exp, matmul, pool, ...)
from .ops import __all__ as _ops_all
from .autodiff import (adjoint_for, adjoint_of, gradient_origin, gradients, note_rebuilt,
                       rebuilt_from, saved_for_backward)
from .workspace import set_workspace, workspace_of

__all__ = ["Node", "Op", "placeholder", "constant", "as_node", "PLACEHOLDER", "CONSTANT",
           "DEFAULT_DTYPE", "as_list", "topo_order", "last_readers", "priority_order", "Scope", "scope", "consumers", "check_order", "gradients",
           "adjoint_of", "adjoint_for", "gradient_origin", "rebuilt_from", "note_rebuilt", "saved_for_backward",
           "set_workspace", "workspace_of",
           *[n for n in _ops_all if n not in ("Op", "PLACEHOLDER", "CONSTANT")]]

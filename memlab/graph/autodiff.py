"""Reverse-mode automatic differentiation by extending the graph.

``gradients(y, xs)`` walks the graph backwards and asks each op for the
gradient of its inputs *as new nodes* (CSE599G1 lecture 7, p.6; assignment 1).
The result is one bigger graph holding the forward and the backward pass, so
the same executor runs it, a memory planner sees all of it (p.26-27), and
gradients of gradients are just gradients of a graph.
"""
from __future__ import annotations

from itertools import compress, repeat
from operator import is_not
from typing import Sequence
from weakref import WeakKeyDictionary, ref

from ..errors import GraphError, ShapeError
from .node import Node
from .scope import backward_of
from .traverse import as_list, topo_order
from .ops import accumulate, add, full, ones_like


# node -> a weak reference to its adjoint, weak both ways: an adjoint usually reads its node, so a
# strong value would keep every graph that was ever differentiated alive for good
_ADJOINT: "WeakKeyDictionary[Node, ref[Node]]" = WeakKeyDictionary()
_GONE = type(None)      #: called in place of a dead or missing reference: gives None


def adjoint_of(node: Node) -> Node | None:
    """The node holding the gradient of ``node`` made by the last :func:`gradients` that reached it
    (the summed adjoint; None if none, or if nothing holds that gradient any more)."""
    return _ADJOINT.get(node, _GONE)()


# an adjoint -> the nodes it holds the gradient of: a graph's own record, which a later gradients()
# of the same forward graph does not overwrite (weak key; the nodes never read their adjoint)
_ADJOINT_FOR: "WeakKeyDictionary[Node, list[Node]]" = WeakKeyDictionary()


def adjoint_for(node: Node) -> list[Node]:
    """The nodes whose summed gradient ``node`` is, made by :func:`gradients` (several when an op
    hands one gradient to several inputs, as ``add`` does; empty for any other node). Checkpointing
    and the autograd order read it on the graph at hand (p.32)."""
    return list(_ADJOINT_FOR.get(node, ()))


def adjoints_for(nodes: Sequence[Node]) -> dict[int, list[Node]]:
    """:func:`adjoint_for` of every node, in one pass (an order search asks it of every node), as
    ``{position in nodes: the nodes it is the gradient of}`` for the adjoints among ``nodes``. The
    mapping's own dict of weak references is read directly, a quarter of the time of one
    ``WeakKeyDictionary.get`` per node."""
    found = list(map(_ADJOINT_FOR.data.get, map(ref, nodes)))
    return {i: found[i] for i in compress(range(len(found)), map(is_not, repeat(None), found))}


_ORIGIN: "WeakKeyDictionary[Node, Node]" = WeakKeyDictionary()


def gradient_origin(node: Node) -> Node | None:
    """The forward node whose gradient :func:`gradients` built ``node`` for: the node whose
    ``op.gradient`` made it, or whose gradient contributions it sums (None for a node that
    :func:`gradients` did not make). Lesson 01 maps the backward nodes onto the slide's names."""
    return _ORIGIN.get(node)


def _record_origin(made: Sequence[Node | None], origin: Node, old: set[Node]) -> None:
    """Mark the nodes reachable from ``made`` that are new (neither in ``old`` nor marked yet) as
    built for ``origin``; the walk stops at old nodes, so it costs only the new ones."""
    stack = [n for n in made if n is not None]
    while stack:
        n = stack.pop()
        if n in old or n in _ORIGIN:
            continue
        _ORIGIN[n] = origin
        stack.extend(n.inputs)


_REBUILT_FROM: "WeakKeyDictionary[Node, Node]" = WeakKeyDictionary()


def rebuilt_from(node: Node) -> Node:
    """The node of the original graph that ``node`` is a rebuilt copy of (itself if none).

    A graph rewrite that gives a backward op new inputs (checkpointing's
    :func:`~memlab.checkpoint.recompute_graph`, p.32) makes a new node for it; this keeps the link,
    so :func:`adjoint_of` and an autograd engine's creation order still apply to it."""
    return _REBUILT_FROM.get(node, node)


def rebuilt_from_each(nodes: Sequence[Node]) -> Sequence[Node]:
    """:func:`rebuilt_from` of every node, in one pass: ``nodes`` itself when no node of the
    process is a rebuilt copy."""
    if not _REBUILT_FROM:
        return nodes
    get = _REBUILT_FROM.data.get
    return [get(r, n) for r, n in zip(map(ref, nodes), nodes)]


def note_rebuilt(new: Node, old: Node) -> None:
    """Record that ``new`` rebuilds ``old`` (with other inputs) for :func:`rebuilt_from`."""
    _REBUILT_FROM[new] = rebuilt_from(old)


def gradients(y: Node, xs: Node | Sequence[Node], grad_y: Node | None = None, *,
              addto: bool | str = False) -> list[Node]:
    """Nodes computing d(sum of y * grad_y)/dx for each x in ``xs``.

    ``grad_y`` defaults to ones shaped like ``y`` (the usual seed for a scalar
    loss). An ``x`` that ``y`` does not depend on gets a zeros node. By default each gradient
    contribution is a node and their sum is a chain of ``add`` nodes. With ``addto=True``, the
    contributions to a leaf's gradient (a parameter used many times, like the weights of every
    timestep) are added into one accumulator by fused nodes (:func:`~memlab.graph.accumulate`);
    with ``addto="all"``, those of every value with several readers too (an LSTM's ``h`` and
    ``c``), as MXNet's backward pass does with ``kAddTo`` (lecture 7, p.36).
    """
    if addto not in (False, True, "all"):
        raise GraphError(f"gradients: addto must be False, True or 'all', got {addto!r}")
    if not isinstance(y, Node):
        raise GraphError(f"gradients: y is {type(y).__name__}, not a Node")
    if isinstance(xs, (list, tuple)):
        for i, x in enumerate(xs):
            if not isinstance(x, Node):
                raise GraphError(f"gradients: xs[{i}] is {type(x).__name__} {x!r:.40}, not a Node: "
                                 f"xs lists the nodes (placeholders, weights) to differentiate "
                                 f"with respect to")
    elif not isinstance(xs, Node):
        raise GraphError(f"gradients: xs must be a Node or a list of Nodes (the values to "
                         f"differentiate with respect to), got {type(xs).__name__} {xs!r:.40}")
    xs = as_list(xs)
    if grad_y is None:
        grad_y = ones_like(y, name=f"d{y.name}")
    elif not isinstance(grad_y, Node) or grad_y.shape != y.shape:
        raise ShapeError(f"gradients: grad_y must be a Node shaped like {y.name}{list(y.shape)}")
    contributions: dict[Node, list[Node]] = {y: [grad_y]}
    grad: dict[Node, Node] = {}
    order = topo_order([y])
    old = set(order)                            # the forward graph: never a gradient node
    for node in reversed(order):
        parts = contributions.pop(node, None)
        if not parts:
            continue
        with backward_of(node.scope):           # gradient nodes know module and timestep
            g = _accumulate(parts, addto == "all" or (addto is True and node.is_leaf))
            _record_origin([g], node, old)
            grad[node] = g
            _ADJOINT[node] = ref(g)
            targets = _ADJOINT_FOR.setdefault(g, [])
            if node not in targets:
                targets.append(node)
            if node.is_leaf:
                continue
            try:
                input_grads = node.op.gradient(node, g)
            except NotImplementedError:
                raise GraphError(f"node {node.name!r}: op {node.op.name!r} has no gradient"
                                 ) from None
            _record_origin(input_grads, node, old)
        if len(input_grads) != len(node.inputs):
            raise GraphError(f"op {node.op.name!r} returned {len(input_grads)} gradients "
                             f"for {len(node.inputs)} inputs of node {node.name!r}")
        for x, gx in zip(node.inputs, input_grads):
            if gx is None:
                continue
            if gx.shape != x.shape:
                raise ShapeError(f"gradient of node {node.name!r} for input {x.name!r} has shape "
                                 f"{list(gx.shape)}, expected {list(x.shape)}")
            contributions.setdefault(x, []).append(gx)
    return [grad.get(x) or full(x.shape, 0.0, x.dtype, name=f"zero_d{x.name}") for x in xs]


def _accumulate(parts: list[Node], fused: bool) -> Node:
    """The sum of a value's gradient contributions, added one at a time in the order they came
    (each added into the accumulator by its own op when ``fused``)."""
    g = parts[0]
    for p in parts[1:]:
        g = accumulate(g, p) if fused else add(g, p)
    return g


def saved_for_backward(node: Node) -> list[Node]:
    """The forward values ``node``'s gradient reads besides the incoming gradient: what an autograd
    engine must save for it (PyTorch's ``saved_tensors``), read off the gradient graph the op
    builds. ``node`` itself when the gradient reads the output (relu, sigmoid, tanh, exp, softmax),
    some of its inputs otherwise (matmul, mul, log, gelu; dropout's mask), none for add or sum.
    Given values (placeholders, constants) are included: they are what the op reads, though a
    planner does not count them."""
    if not isinstance(node, Node) or node.is_leaf:
        raise GraphError(f"saved_for_backward: node must be a computed Node, got {node!r:.60}")
    g = full(node.shape, 1.0, node.dtype, name=f"d{node.name}")
    grads = node.op.gradient(node, g)
    fresh = g.id                      # every node the gradient built comes after g
    saved: dict[Node, None] = {}
    stack = [x for x in grads if x is not None]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if n.id in seen:
            continue
        seen.add(n.id)
        if n.id < fresh:
            if n is node or n in node.inputs:
                saved[n] = None
            continue
        stack.extend(n.inputs)
    order = [node, *node.inputs]
    return sorted(saved, key=lambda n: next(i for i, m in enumerate(order) if m is n))

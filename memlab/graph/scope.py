"""Scopes: which module and which timestep each node of the graph belongs to.

A sequence-to-sequence model is several networks (encoder, bridge, decoder, generator), and the
recurrent ones are *replicated* once per timestep (OpenNMT, "Further Memory Optimization",
"Memory Usage"). Building nodes inside ``with scope("decoder", t):`` records on each node a
:class:`Scope`: the module, the timestep and the node's **role**, its position among the nodes
that replica created, so that the same node of two replicas has the same role (what horizontal
sharing pairs up). :func:`~memlab.graph.autodiff.gradients` builds each node's gradient nodes in
the backward scope of that node, so backward values know their module and timestep too.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from ..errors import GraphError


@dataclass(frozen=True)
class Scope:
    """Where a node belongs: ``module``, ``step`` (None outside a recurrence), ``role`` (the
    same for the same node in every replica) and ``backward`` (made by ``gradients``)."""

    module: str
    step: int | None
    role: tuple
    backward: bool = False

    @property
    def replica(self) -> tuple[str, int | None]:
        """The replica: one module at one timestep (vertical sharing stays inside one)."""
        return self.module, self.step


@dataclass
class _Frame:
    module: str
    step: int | None
    prefix: tuple
    backward: bool
    count: int = 0


_STACK: list[_Frame] = []


@contextmanager
def scope(module: str, step: int | None = None) -> Iterator[None]:
    """Nodes built inside belong to ``module`` at timestep ``step`` (forward pass)."""
    if not isinstance(module, str) or not module:
        raise GraphError(f"scope: module must be a non-empty string, got {module!r}")
    if step is not None and (not isinstance(step, int) or step < 0):
        raise GraphError(f"scope {module!r}: step must be None or an int >= 0, got {step!r}")
    _STACK.append(_Frame(module, step, (), False))
    try:
        yield
    finally:
        _STACK.pop()


@contextmanager
def backward_of(scope_: Scope | None) -> Iterator[None]:
    """Nodes built inside are the gradient of a node of ``scope_`` (no-op when it is None).

    Their roles extend the forward node's role, so replicas' backward nodes pair up as well.
    """
    if scope_ is None:
        yield
        return
    _STACK.append(_Frame(scope_.module, scope_.step, scope_.role, True))
    try:
        yield
    finally:
        _STACK.pop()


def current_scope() -> Scope | None:
    """The scope of the node being built now (and advance the role counter), or None."""
    if not _STACK:
        return None
    f = _STACK[-1]
    f.count += 1
    return Scope(f.module, f.step, f.prefix + (f.count,), f.backward)

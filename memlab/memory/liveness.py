"""Liveness: how long each value of the op graph must be kept (CSE599G1 lecture 7, p.17-22).

Written once, used by every planner and runner: the bytes of each computed value, its
**reference count** (how many distinct consumers have yet to run, p.22's initial state) and its
**lifetime** (from the step that computes it to the step of its last consumer; graph outputs live
to the end). An op's **workspace** (:mod:`memlab.graph.workspace`: scratch such as cuDNN's) is
alive during its own step only. An op may write its output over an input it is allowed to overwrite when it is that
input's last consumer (**in-place**, p.19-20); chains of such pairs can share one block.
The independent verifier :mod:`memlab.memory.checkplan` deliberately does not use this module.
"""
from __future__ import annotations

from functools import cached_property
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import PlanError
from ..graph import Node, as_list, last_readers, workspace_of


class Liveness:
    """What every planner starts from (:func:`prepare`): the graph's ``outputs``, a valid execution
    ``order`` and ``last``, the **last reader** of each value (:func:`~memlab.graph.last_readers`):
    the op at whose step the value's reference count (p.22) reaches 0, the value itself when
    nothing reads it, and None for a graph output, which is kept to the end. ``sizes``, the
    bytes of every computed value in order, and ``refcounts`` are worked out when first asked.
    Plans keep the liveness they were made from (``plan.liveness``; :func:`liveness_of`).
    """

    def __init__(self, outputs: list[Node], order: list[Node], last: dict[Node, Node | None]):
        self.outputs, self.order, self.last = outputs, order, last

    @cached_property
    def sizes(self) -> dict[Node, int]:
        """Bytes of every computed value, in order; :class:`PlanError` for a size of 0 or less."""
        sizes = {n: n.nbytes for n in self.order if n.op.computes}
        if sizes and min(sizes.values()) <= 0:
            check_size(next(n for n, b in sizes.items() if b <= 0))
        return sizes

    @cached_property
    def refcounts(self) -> dict[Node, int]:
        """Reference counts before the first step (:func:`reference_counts`, p.22), worked out
        when first asked and shared by the plan (``initial_refcount``) and its runner."""
        return reference_counts(self.order)

    @cached_property
    def workspaces(self) -> dict[Node, int]:
        """Bytes of workspace of every op that has one (:meth:`memlab.graph.Op.workspace`), in
        order: alive during that op's step only."""
        return {n: w for n in self.order if n.op.computes and (w := workspace_of(n)) > 0}

    def lifetimes(self) -> dict[Node, tuple[int, int]]:
        """``(first, last)`` step of each computed value (see :func:`lifetimes`)."""
        step = {n: i for i, n in enumerate(self.order)}
        end, last = len(self.order), self.last
        return {n: (step[n], end if last[n] is None else step[last[n]]) for n in self.sizes}

    def live_bytes(self, inplace: bool = False) -> np.ndarray:
        """Bytes alive at each step ``0 .. len(order)`` (the last entry: the outputs kept to the
        end), workspaces included at their op's step; its maximum is the order's **peak memory**
        (seed 002, "Sequential problem"). ``inplace``: an input that dies at a step and that the
        op may overwrite (:func:`inplace_partner`) is counted once with the op's output (p.20)."""
        life = self.lifetimes()
        sizes = self.sizes
        curve = live_curve([a for a, _ in life.values()], [b for _, b in life.values()],
                           list(sizes.values()), len(self.order) + 1)
        if self.workspaces:
            step = {n: i for i, n in enumerate(self.order)}
            for n, w in self.workspaces.items():
                curve[step[n]] += w
        if inplace:
            sizes, last = self.sizes, self.last
            for i, n in enumerate(self.order):
                if n in sizes:
                    x = inplace_partner(n, last)
                    if x is not None:
                        curve[i] -= sizes[x]
        return curve

    def peak(self, inplace: bool = False) -> int:
        """The most bytes alive at any step of the order (in-place sharing counted when asked:
        :meth:`live_bytes`)."""
        return int(self.live_bytes(inplace).max(initial=0))


def live_curve(first: Sequence[int] | np.ndarray, last: Sequence[int] | np.ndarray,
               size: Sequence[int] | np.ndarray, steps: int) -> np.ndarray:
    """Bytes alive at each of ``steps`` steps when value ``k`` of ``size[k]`` bytes is alive from step
    ``first[k]`` to step ``last[k]`` included: the one sweep behind every peak of live bytes."""
    first, last, size = (np.asarray(v, np.int64) for v in (first, last, size))
    delta = np.zeros(steps + 1, np.int64)
    np.add.at(delta, first, size)
    np.add.at(delta, last + 1, -size)
    return np.cumsum(delta[:steps])


def check_size(node: Node) -> int:
    """``node.nbytes``, or a :class:`PlanError` naming the node when it is 0 or less."""
    if node.nbytes <= 0:
        raise PlanError(f"node {node.name!r} has size {node.nbytes} bytes (shape "
                        f"{list(node.shape)}); a planned value needs a positive size")
    return node.nbytes


def prepare(outputs: Node | Iterable[Node], order: Sequence[Node] | None,
            trusted: bool = False) -> Liveness:
    """The graph's outputs, a validated execution order and each value's last reader (one walk of
    the graph when no order is given: the depth-first order). Planners start from
    :func:`~memlab.memory.order.plan_liveness`, which picks the memory-aware order by default.

    Raises :class:`~memlab.errors.CycleError` or :class:`PlanError` naming the node when the
    graph has a cycle or the order is not topological; ``trusted``: an order the library has
    just built, not checked again.
    """
    outs = as_list(outputs)
    order, last = last_readers(outs, order, trusted)
    for o in outs:
        last[o] = None
    return Liveness(outs, order, last)


def reference_counts(order: Sequence[Node]) -> dict[Node, int]:
    """Reference counts before the first step: distinct consumers of every value (p.22)."""
    ref: dict[Node, int] = {}
    get = ref.get
    for n in order:
        inputs = n.inputs
        for x in (inputs if len(inputs) < 2 else dict.fromkeys(inputs)):  # x * x: one read
            ref[x] = get(x, 0) + 1
    return ref


def lifetimes(order: Sequence[Node], outputs: Iterable[Node]) -> dict[Node, tuple[int, int]]:
    """``(first, last)`` step of each computed value in ``order``: from the step that computes it to
    the step of its last consumer (graph outputs: to ``len(order)``, the end)."""
    return prepare(outputs, order).lifetimes()


def inplace_partner(node: Node, last: Mapping[Node, Node | None],
                    accept: Callable[[Node, Node], bool] | None = None) -> Node | None:
    """The input ``node`` may write its output over (p.19-20), or None: the first, in the positions
    ``node.op.inplace(node)`` allows, that is a computed value of ``node``'s size whose last reader
    (``last``, :class:`Liveness`) is ``node``; so never a graph output (kept to the end) nor a value
    read again later. ``accept(node, x)`` may refuse a candidate ``x`` (colours, p.24).

    The one in-place rule of every planner, of the lower bound and of :func:`inplace_clusters`.
    The op is asked only when some input dies here with the right size (the common case of a
    big graph is that none does, and this is on every planner's path).
    """
    inputs, nbytes = node.inputs, node.nbytes
    for x in inputs:
        if last[x] is node and x.nbytes == nbytes:
            break
    else:
        return None
    for i in node.op.inplace(node):
        y = inputs[i]
        if last[y] is node and y.nbytes == nbytes and y.op.computes and (accept is None or accept(node, y)):
            return y
    return None


def inplace_candidates(node: Node) -> list[Node]:
    """The computed inputs ``node`` may write its output over if it is their last reader: in the
    positions ``node.op.inplace(node)`` allows, of ``node``'s bytes (each once). The rule of
    :func:`inplace_partner`, before knowing which inputs die at ``node``."""
    found: dict[Node, None] = {}
    for i in node.op.inplace(node):
        x = node.inputs[i]
        if x.op.computes and x.nbytes == node.nbytes:
            found.setdefault(x, None)
    return list(found)


def inplace_clusters(liveness: Liveness, inplace: bool = True) -> list[list[Node]]:
    """Computed values grouped into in-place chains (p.19): each chain can live in one block."""
    cluster_of: dict[Node, int] = {}
    clusters: list[list[Node]] = []
    last = liveness.last
    for n in liveness.sizes:
        x = inplace_partner(n, last) if inplace else None
        if x is not None and clusters[cluster_of[x]][-1] is x:
            cluster_of[n] = cluster_of[x]
            clusters[cluster_of[x]].append(n)
        else:
            cluster_of[n] = len(clusters)
            clusters.append([n])
    return clusters


def kept_liveness(plan: Any) -> Liveness | None:
    """The :class:`Liveness` a planner kept in ``plan`` (``plan.liveness``), or None for a plan
    without one or whose outputs or order were replaced since."""
    live = getattr(plan, "liveness", None)
    if live is not None and live.order is plan.order and live.outputs is plan.outputs:
        return live
    return None


def liveness_of(plan: Any) -> Liveness:
    """The liveness of ``plan``: the one its planner kept (:func:`kept_liveness`), else
    :func:`prepare`'s for its outputs and order."""
    return kept_liveness(plan) or prepare(plan.outputs, plan.order)

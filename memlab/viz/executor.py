"""Executors step by step (CSE599G1 lecture 7, p.12-16): the frames of lessons 01-02's steppers.

An executor runs first; the frames are then read from its own trace (``ex.stats.trace`` for the
naive executor, ``ex.runner.pool.events`` for the pool), so the stepper only displays. Every
node is labelled with its value, from :func:`node_values`.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..errors import MemlabError
from ..execute import Executor
from ..graph import Node, topo_order
from .graphs import draw_graph
from .plans import draw_pool, pool_blocks
from .stepper import Frame
from .trees import side_by_side


def node_values(outputs: Node | list[Node], feed: Mapping[Any, Any]) -> dict[Node, np.ndarray]:
    """Every node's value given ``feed`` (one naive run of the whole topological order)."""
    order = topo_order(outputs)
    return dict(zip(order, Executor(order, order=order).run(feed)))


def _text(value: Any) -> str:
    """A value as a short label: the number for a scalar, the shape otherwise."""
    arr = np.asarray(value)
    return f"{arr.item():.6g}" if arr.size == 1 else f"{arr.dtype}{list(arr.shape)}"


def _given(ex: Executor, values: Mapping[Node, Any], what: str) -> tuple[list[Node], str]:
    """The executor's inputs and the caption words "a = 4 and b = 8"; checks the run happened."""
    if not ex.stats.trace:
        raise MemlabError(f"the {what} has no trace yet: call ex.run(feed) before drawing its frames")
    missing = [n.name for n in ex.order if n not in values]
    if missing:
        raise MemlabError(f"values has no value for node(s) {missing}: pass "
                          "node_values(outputs, feed) for the executor's graph")
    inputs = [n for n in ex.order if n.is_leaf and n.op.name == "placeholder"]
    words = [f"{n.name} = {_text(values[n])}" for n in inputs]
    return inputs, " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def naive_frames(ex: Executor, values: Mapping[Node, Any]) -> list[Frame]:
    """Frames of a naive executor's run as the slides draw it (p.11-12): first **allocate**
    temporary memory for every intermediate value (one fresh array, one colour each), then
    **traverse** the graph in topological order, each op filling its own array. ``ex`` has run;
    its trace gives the order and the bytes; ``values`` labels nodes. (memlab's executor obtains
    each array just before its op runs; the bytes, and the picture at the end, are the same.)"""
    inputs, given = _given(ex, values, "executor")
    outs = ex.outputs
    trace = ex.stats.trace
    tags = {step.node: i for i, step in enumerate(trace)}
    total = sum(step.allocated for step in trace)
    frames = [Frame(draw_graph(outs, values={n: _text(values[n]) for n in inputs}),
                    f"Allocate nothing yet: the inputs {given} are given"),
              Frame(draw_graph(outs, storage=tags, values={n: _text(values[n]) for n in inputs}),
                    f"allocate: a fresh array for every one of the {len(trace)} intermediate "
                    f"values, {total} bytes of temporary memory, before any op runs")]
    done: list[Node] = []
    for step in trace:
        done.append(step.node)
        shown = {n: _text(values[n]) for n in [*inputs, *done]}
        picture = draw_graph(outs, storage=tags, highlight=[step.node], values=shown)
        frames.append(Frame(picture, f"traverse, step {step.index + 1}: run {step.node.name} "
                                     f"into its array #{tags[step.node]} ({step.allocated} bytes); "
                                     f"temporary memory stays {total} bytes"))
    return frames


def pool_frames(ex: Executor, values: Mapping[Node, Any], width: int = 300) -> list[Frame]:
    """Frames of a pool executor's run (p.14-16), one per pool event: the graph coloured by the
    block each value holds, beside the pool (filled blocks in use, dashed ones cached)."""
    pool = getattr(ex.runner, "pool", None)
    if pool is None:
        raise MemlabError("pool_frames needs an executor made with memory='pool'")
    inputs, given = _given(ex, values, "pool executor")
    outs = ex.outputs
    by_name = {n.name: n for n in ex.order}
    frames = [Frame(side_by_side(draw_graph(outs, values={n: _text(values[n]) for n in inputs}),
                                 draw_pool([], width=width)),
                    f"start: the inputs {given} are given, the pool is empty")]
    holder: dict[Node, int] = {}                  # node -> block id, while the node holds a block
    for k, ev in enumerate(pool.events):
        node = by_name[ev.owner]
        if ev.kind == "alloc":
            holder[node] = ev.block
            how = "recycles cached" if ev.from_pool else "needs a new"
            cap = (f"event {k + 1}: {node.name} asks for {ev.requested} bytes, the pool {how} "
                   f"block #{ev.block} ({ev.size} bytes); it computes {_text(values[node])}")
        else:
            holder.pop(node, None)
            cap = (f"event {k + 1}: {node.name}'s last consumer has run: block #{ev.block} goes "
                   f"back to the pool (cached, not released)")
        shown = {n: _text(values[n]) for n in [*inputs, *holder]}
        graph = draw_graph(outs, storage=dict(holder), highlight=[node], values=shown)
        frames.append(Frame(side_by_side(graph, draw_pool(pool_blocks(pool.events, k + 1),
                                                          width=width)), cap))
    return frames

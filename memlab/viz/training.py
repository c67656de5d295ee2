"""Slide p.28's picture of a training plan: forward and backward as two mirrored columns.

The forward pass runs down the left column; each layer's backward op sits on the same row in
the right column, so the gradient flows up beside the layer it differentiates (CSE599G1
lecture 7, p.28, "a possible allocation plan"). Boxes are filled by storage; the callouts name
the plan's two patterns, "inplace operation" and "memory sharing", and point at the ops that
used them. Everything here reads a finished plan; nothing decides anything.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import graphviz

from ..graph import Node, adjoint_for, as_list, topo_order
from .graphs import digraph, node_text
from .palette import LEAF, NEUTRAL, color


def plan_patterns(plan: Any) -> tuple[list[Node], list[Node]]:
    """The ops of a tag plan that ran in place, and those that reused a tag another value had
    released (normal sharing): read off ``storage`` and ``inplace_pairs``, no trace needed."""
    inplace = [n for _, n in plan.inplace_pairs]
    seen: set[int] = set()
    shared = []
    for n in plan.order:
        if n not in plan.storage:
            continue
        t = plan.storage[n]
        if t in seen and n not in inplace:
            shared.append(n)
        seen.add(t)
    return inplace, shared


def mirror_rows(forward: Iterable[Node], backward: Iterable[Node]) -> dict[Node, Node]:
    """For each backward op, the forward node on whose row it is drawn: the node whose gradient
    (:func:`~memlab.graph.adjoint_for`) it reads first, i.e. the layer it differentiates (the
    last of the layers that gradient is shared by)."""
    forward = list(forward)
    position = {n: i for i, n in enumerate(forward)}
    rows = {}
    for b in backward:
        layers = [position[n] for n in adjoint_for(b.inputs[0]) if n in position] if b.inputs else ()
        if layers:
            rows[b] = forward[max(layers)]
    return rows


def draw_mirrored_plan(plan: Any, forward: Node | Iterable[Node],
                       labels: Mapping[Node, str] | None = None, callouts: bool = True,
                       colored: bool = True, title: str | None = None,
                       size: str | None = None) -> graphviz.Digraph:
    """p.28's figure: forward column left (top to bottom), backward column right, each backward
    op level with its layer; filled by ``plan.storage`` when ``colored`` (else grey, as in the
    slide's "gradient calculation graph"), with the in-place and sharing callouts."""
    labels = labels or {}
    order = topo_order(as_list(plan.outputs))
    fwd = set(topo_order(as_list(forward)))
    shown = [n for n in order if not (n.is_leaf and n.op.name == "constant")]
    bwd = [n for n in shown if n not in fwd]
    row = mirror_rows([n for n in shown if n in fwd], bwd)
    leaves_read_by_backward_only = {x for b in bwd for x in b.inputs
                                    if x.is_leaf and all(c not in fwd for c in _readers(x, shown))}
    g = digraph("TB", title, size, graph={"nodesep": "0.5", "ranksep": "0.3", "newrank": "true"},
                node={"shape": "box", "margin": "0.08,0.04"})
    weights = {x for n in shown for x in n.inputs if x.is_leaf and x.name.startswith("W")}
    for n in shown:
        if n in weights:
            continue
        sid = plan.storage.get(n) if colored else None
        fill = color(sid) if sid is not None else (LEAF if n.is_leaf else NEUTRAL)
        text = labels.get(n, node_text(n)) + (f"\n#{sid}" if sid is not None else "")
        g.node(str(n.id), text, fillcolor=fill, group="bwd" if n in bwd else "fwd")
    for b, f in row.items():                      # mirrored rows
        with g.subgraph() as s:
            s.attr(rank="same")
            s.node(str(f.id))
            s.node(str(b.id))
    for x in leaves_read_by_backward_only:         # the label sits at the bottom, beside the loss
        loss = next((n for n in shown if n in fwd and x in n.inputs), None)
        if loss is not None:
            with g.subgraph() as s:
                s.attr(rank="same")
                s.node(str(loss.id))
                s.node(str(x.id))
    for n in shown:
        for x in dict.fromkeys(n.inputs):
            if x in weights or x not in set(shown):
                continue
            if n in fwd or x in fwd:
                g.edge(str(x.id), str(n.id), constraint="true" if (n in fwd) == (x in fwd)
                       else "false")
            else:
                g.edge(str(n.id), str(x.id), dir="back")   # gradients flow upward
    if callouts and colored:
        inplace, shared = plan_patterns(plan)
        _callout(g, "inplace", "inplace\noperation", inplace)
        _callout(g, "sharing", "memory\nsharing", shared)
    return g


def _readers(x: Node, nodes: Iterable[Node]) -> list[Node]:
    return [n for n in nodes if x in n.inputs]


def _callout(g: graphviz.Digraph, key: str, text: str, targets: list[Node]) -> None:
    """A plaintext note with dashed arrows to ``targets`` (the slide's callouts)."""
    if not targets:
        return
    g.node(f"note_{key}", text, shape="plaintext", style="", fontsize="11")
    for n in targets:
        g.edge(f"note_{key}", str(n.id), style="dashed", color="#555555", constraint="false")


def slide_labels(nodes: Iterable[Node]) -> dict[Node, str]:
    """p.28's box names: ``<op>-forward`` for forward ops, ``<op>-backward`` for their gradient
    ops (``fullc_grad`` -> ``fullc-backward``); leaves keep their names."""
    out = {}
    for n in nodes:
        if not n.is_leaf:
            op = n.op.name
            out[n] = op[:-5] + "-backward" if op.endswith("_grad") else (
                op if op == "log-loss" else op + "-forward")
    return out


def curve_table(rows: list[dict[str, Any]], xname: str) -> str:
    """p.35-36 curves as text: GB per strategy and the ratios to no optimisation, ours and the
    slide's where the slide gives a point."""
    lines = [f"{xname:>6s} {'nodes':>6s} {'none GB':>8s} {'in-place':>8s} {'sharing':>8s}"
             f"   in-place/none  sharing/none"]
    for r in rows:
        line = (f"{r['x']:6d} {r['nodes']:6d} {r['none']:8.1f} {r['inplace']:8.1f} "
                f"{r['sharing']:8.1f}   {r['inplace'] / r['none']:13.2f} "
                f"{r['sharing'] / r['none']:13.2f}")
        if "slide" in r:
            s = r["slide"]
            line += (f"   slide: {s['none']:g} / {s['inplace']:g} / {s['sharing']:g} GB, ratios "
                     f"{s['inplace'] / s['none']:.2f} {s['sharing'] / s['none']:.2f}")
        lines.append(line)
    growth = rows[-1]["none"] / rows[0]["none"]
    lines.append(f"{rows[-1]['x']} vs {rows[0]['x']} {xname}: memory x{growth:.1f} "
                 f"(linear: x{rows[-1]['x'] / rows[0]['x']:.1f})")
    return "\n".join(lines)


#: Why our p.35-36 numbers differ from the slide's, per quantity (lesson 05's gap table).
GAP_REASONS = {
    "ResNet none GB": "panel (a) counts feature maps and their gradients only, on both sides, "
                      "so no workspace is in it (that is panel (b)'s, below). The slide's MXNet "
                      "ResNet keeps values our graph does not, which the slide does not itemise; "
                      "a gap in the constant, not in the growth",
    "ResNet in-place / none": "same mechanism (in-place elementwise ops, add-to gradient sums); "
                              "the ratio depends less on which values each op keeps",
    "ResNet sharing / none": "as above",
    "LSTM none GB": "the slide does not give its LSTM's configuration; ours is Chen et al. "
                    "2016's LSTM experiment (4 layers x 1024, batch 64), counted value by value, "
                    "not a size chosen to match: the count under this table shows the slide's "
                    "bar holds about five times as many values per step",
    "LSTM in-place / none": "our backward has one node per input gradient, each writing its own "
                            "buffer; MXNet's backward ops have several outputs and may overwrite "
                            "their incoming gradient. Our cell also runs one fc per gate and input "
                            "(8 per step) where MXNet's example runs two 4H fcs and a slice",
    "LSTM sharing / none": "as above: more, smaller values alive at once in our backward pass",
}


def gap_rows(resnet_rows: list[dict[str, Any]], lstm_rows: list[dict[str, Any]]
             ) -> list[tuple[str, float, float, str]]:
    """(quantity, ours, slide, reason) at the slide's largest point of each curve we computed."""
    out = []
    for name, rows in (("ResNet", resnet_rows), ("LSTM", lstm_rows)):
        with_slide = [r for r in rows if "slide" in r]
        if not with_slide:
            continue
        r = with_slide[-1]
        s = r["slide"]
        at = f" ({r['x']})"
        out.append((f"{name} none GB{at}", r["none"], s["none"], GAP_REASONS[f"{name} none GB"]))
        for k, label in (("inplace", "in-place / none"), ("sharing", "sharing / none")):
            out.append((f"{name} {label}{at}", r[k] / r["none"], s[k] / s["none"],
                        GAP_REASONS[f"{name} {label}"]))
    return out


def gap_table(rows: list[tuple[str, float, float, str]]) -> str:
    """The gap rows as a markdown table."""
    lines = ["| quantity | ours | slide | why they differ |", "| --- | --- | --- | --- |"]
    lines += [f"| {q} | {o:.2f} | {s:.2f} | {why} |" for q, o, s, why in rows]
    return "\n".join(lines)

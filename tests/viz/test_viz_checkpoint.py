"""The GoogleNet picture of lesson 07: one box per computed node, no weights."""
from __future__ import annotations

import re

import memlab as ml
from memlab.viz import checkpoint as vc


def test_network_graph_draws_the_computed_nodes_and_their_edges():
    loss = ml.models.googlenet(batch=1)["loss"]
    layers = [n for n in ml.topo_order(loss) if not n.is_leaf]
    edges = sum(not x.is_leaf for n in layers for x in n.inputs)
    src = vc.network_graph(loss).source
    boxes = re.findall(r'^\s*(\d+) \[label=(\w+)', src, re.M)
    assert sorted(int(i) for i, _ in boxes) == sorted(n.id for n in layers)
    assert sum(lab == "concat" for _, lab in boxes) == 9          # nine inception modules
    assert src.count("->") == edges
    cat = [k for k, n in enumerate(layers) if n.op.name == "concat"]
    zoom = vc.network_graph(loss, span=(cat[0], cat[1] + 1)).source
    assert len(re.findall(r'^\s*\d+ \[label=', zoom, re.M)) == cat[1] + 1 - cat[0]


def test_chain_graph_builds_the_task_graph_in_the_slides_three_frames():
    """Frame 1: x_0..x_l and F_i; frame 2: y_i and B_i with their chain; frame 3: x_i -> B_i."""
    l = 5
    edges = [set(re.findall(r'(\w+) -> (\w+)', vc.chain_graph(l, k).source)) for k in (1, 2, 3)]
    assert edges[0] == {(f"x{i}", f"F{i}") for i in range(l)} | {
        (f"F{i}", f"x{i + 1}") for i in range(l)}
    assert edges[1] - edges[0] == {(f"B{i}", f"y{i}") for i in range(l + 1)} | {
        (f"y{i + 1}", f"B{i}") for i in range(l)}
    assert edges[2] - edges[1] == {(f"x{i}", f"B{i}") for i in range(l + 1)}
    frames = vc.chain_graph_frames(l)
    # the stepper's caption says "frame k of 3": the frame's own caption names the phase only
    assert [f.caption.split(":")[0] for f in frames] == [
        "the forward phase", "the backward phase", "the edges x_i -> B_i"]
    assert len({f.html() for f in frames}) == 3

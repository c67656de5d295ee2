"""The GoogleNet picture of lesson 07 (issue 20): one box per computed node, no weights."""
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

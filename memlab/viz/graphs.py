"""Graphviz drawings of computational graphs, coloured by storage.

Forward flows top to bottom (lecture 7, p.10); nodes of the same colour share
one piece of memory (p.11 "same color represent same piece of memory").
"""
from __future__ import annotations

from typing import Iterable, Mapping

import graphviz

from ..graph import Node, as_list, rebuilt_from, topo_order
from ..graph import CONSTANT, PLACEHOLDER
from .palette import LEAF, color


def node_text(n: Node) -> str:
    """A node's label: its name; for an automatic name, its op; else ``name = op``. A node a
    rewrite rebuilt (:func:`~memlab.graph.rebuilt_from`), or a recomputed copy (its name primed,
    its original in ``attrs["of"]``), counts as automatically named when its original was."""
    if n.is_leaf or n.name == n.op.name:
        return n.name
    base = n.name.rstrip("'")
    origin = n.attrs.get("of")
    origin = origin if isinstance(origin, Node) else rebuilt_from(n)
    if base == f"{origin.op.name}_{origin.id}":  # an automatic name: the op says it all
        return origin.op.name + n.name[len(base):]
    return f"{n.name} = {n.op.name}"


def digraph(rankdir: str = "TB", title: str | None = None, size: str | None = None,
            graph: dict | None = None, node: dict | None = None, edge: dict | None = None,
            title_size: str = "13") -> graphviz.Digraph:
    """An empty Graphviz graph in the lessons' house style (overrides merged in)."""
    g = graphviz.Digraph(
        graph_attr={"rankdir": rankdir, "bgcolor": "transparent", "fontname": "Helvetica", "nodesep": "0.25",
                    "ranksep": "0.3", **({"size": size} if size else {}), **(graph or {})},
        node_attr={"fontname": "Helvetica", "fontsize": "11", "style": "filled", "height": "0.3",
                   "margin": "0.06,0.03", **(node or {})},
        edge_attr={"arrowsize": "0.6", "fontname": "Helvetica", "fontsize": "9", **(edge or {})})
    if title:
        g.attr(label=title, labelloc="t", fontsize=title_size)
    return g


def _label(n: Node, show_shapes: bool, value: str | None) -> str:
    text = node_text(n)
    if show_shapes and n.shape:
        text += "\n" + "×".join(map(str, n.shape))
    if value is not None:
        text += f"\n= {value}"
    return text


def draw_graph(outputs: Node | Iterable[Node], storage: Mapping[Node, int] | None = None,
               highlight: Iterable[Node] = (), done: Iterable[Node] = (),
               values: Mapping[Node, str] | None = None, show_shapes: bool = False,
               rankdir: str = "TB", title: str | None = None, size: str | None = None,
               marked: Iterable[Node] = ()) -> graphviz.Digraph:
    """A Graphviz picture of the graph behind ``outputs``.

    ``storage`` maps nodes to storage ids (drawn as fill colours and a
    ``#id`` tag); ``highlight`` gets a thick border (the node running now);
    ``done`` nodes have solid edges to them, others dashed (p.22's "operation
    completed" / "not completed"); ``values`` adds a value under a node;
    ``marked`` nodes (the backward pass, say) get a double border, a cue that
    is not a colour, since a colour always means a storage.
    """
    outs = as_list(outputs)
    order = topo_order(outs)
    hi, dn, mk = set(highlight), set(done), set(marked)
    storage = storage or {}
    values = values or {}
    g = digraph(rankdir, title, size)
    for n in order:
        leaf = n.is_leaf
        sid = storage.get(n)
        fill = color(sid) if sid is not None else (LEAF if leaf else "#ffffff")
        label = _label(n, show_shapes, values.get(n))
        if sid is not None:
            label += f"\n#{sid}"
        g.node(str(n.id), label, shape="ellipse" if leaf else "box", fillcolor=fill,
               penwidth="3" if n in hi else "1", color="#c0392b" if n in hi else "#333333",
               peripheries="2" if n in mk else "1")
        for x in n.inputs:
            style = "solid" if (not dn or n in dn) else "dashed"
            g.edge(str(x.id), str(n.id), style=style)
    return g

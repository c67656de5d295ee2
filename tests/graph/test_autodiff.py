"""gradient_origin: which forward node each node made by gradients() serves."""
import memlab as ml


def test_gradient_origin_names_the_forward_node_each_backward_node_serves():
    """Every node gradients() adds has an origin in the forward graph; forward nodes have none; a
    value read twice gets its two contributions summed by a node of its own."""
    x, w = ml.placeholder("x", (4, 3)), ml.placeholder("w", (3, 2))
    h = ml.matmul(x, w, name="mm")
    y = ml.sum(ml.exp(h, name="e") * h, name="s")         # h is read twice
    (gw,) = ml.gradients(y, [w])
    fwd = set(ml.topo_order(y))
    back = [n for n in ml.topo_order(gw) if n not in fwd]
    assert all(ml.graph.gradient_origin(n) in fwd for n in back)
    assert all(ml.graph.gradient_origin(n) is None for n in fwd)
    by_origin = {}
    for n in back:
        by_origin.setdefault(ml.graph.gradient_origin(n).name, []).append(n.op.name)
    assert "matmul" in by_origin["mm"]                      # dW = x^T dH: the matmult-transpose
    assert "add" in by_origin["mm"]                         # h's two contributions, summed
    assert gw.op.name == "matmul" and ml.graph.gradient_origin(gw).name == "mm"


def test_a_differentiated_graph_is_freed_when_dropped():
    """gradients() remembers each node's adjoint without keeping either alive: once the caller
    drops the graph, its nodes are gone (an adjoint reads its node, so a strong link would keep
    every graph ever differentiated)."""
    import gc
    import weakref

    x, w = ml.placeholder("x", (4, 3)), ml.placeholder("w", (3, 2))
    h = ml.sigmoid(ml.matmul(x, w))
    (gw,) = ml.gradients(ml.sum(h), [w])
    assert ml.graph.adjoint_of(h) is not None          # alive while the gradient graph is
    refs = [weakref.ref(n) for n in ml.topo_order(gw)]
    del x, w, h, gw
    gc.collect()
    assert [r for r in refs if r() is not None] == []


def test_an_adjoint_nobody_holds_is_forgotten():
    x = ml.placeholder("x", (3,))
    y = ml.exp(x)
    ml.gradients(ml.sum(y), [x])                       # the gradients are dropped at once
    import gc
    gc.collect()
    assert ml.graph.adjoint_of(y) is None

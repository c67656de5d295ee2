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

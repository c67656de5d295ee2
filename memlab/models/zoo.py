"""The model zoo: graphs that run with numpy (CSE599G1 lecture 7, p.22-23, p.28).

The slide p.22 and p.23 examples, MLPs of any depth with their gradient graphs (p.28) ; big image networks and
unrolled LSTMs are shape-only (:mod:`memlab.models.shape_only`). The slides' comparisons built
from these models are in :mod:`memlab.models.studies`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import GraphError, check_choice, check_int
from ..graph import (Node, concat, conv, gradients, matmul, mul, placeholder, pool, relu, sigmoid,
                     softmax_cross_entropy, topo_order)

def slide22() -> dict[str, Any]:
    """The graph of p.22: B = sigmoid(A), C = sigmoid(B), F = pool(B), E = pool(C), G = E * F.

    Returns the nodes by name and the slide's execution order B, C, F, E, G.
    """
    a = placeholder("A", (8, 16))
    b = sigmoid(a, name="B")
    c = sigmoid(b, name="C")
    f = pool(b, name="F")
    e = pool(c, name="E")
    g = mul(e, f, name="G")
    return {"A": a, "B": b, "C": c, "E": e, "F": f, "G": g, "order": [a, b, c, f, e, g]}


def slide23() -> dict[str, Any]:
    """The two-branch graph of p.23-25: A[2..4] = conv/pool/conv of A[1], A[5..7] = pool/conv/pool, A[8] = concat."""
    a = {1: placeholder("A[1]", (8, 16))}
    a[2] = conv(a[1], name="A[2]")
    a[3] = pool(a[2], name="A[3]")
    a[4] = conv(a[3], name="A[4]")
    a[5] = pool(a[1], name="A[5]")
    a[6] = conv(a[5], name="A[6]")
    a[7] = pool(a[6], name="A[7]")
    a[8] = concat(a[4], a[7], axis=-1, name="A[8]")
    return {f"A[{i}]": n for i, n in a.items()}


def slide24() -> dict[str, Any]:
    """A graph for p.24's colouring, rebuilt from the slide: ten ops, each with reward 1; the
    longest path holds seven of them (the first colour) and, once their rewards are reset to 0,
    the other three make the next path. The slide draws the rewards, not the ops: here a chain
    n1..n7 (conv and pool in turn, ``n7`` a concat) and a branch n8..n10 from n1 into n7."""
    x = placeholder("x", (8, 16))
    n = {1: conv(x, name="n1")}
    for i in range(2, 7):
        n[i] = (pool if i % 2 == 0 else conv)(n[i - 1], name=f"n{i}")
    n[8] = pool(n[1], name="n8")
    n[9] = conv(n[8], name="n9")
    n[10] = pool(n[9], name="n10")
    n[7] = concat(n[6], n[10], axis=-1, name="n7")
    return {"x": x, **{f"n{i}": n[i] for i in sorted(n)}}


def mlp(depth: int = 2, batch: int = 64, n_in: int = 784, hidden: int = 256, n_out: int = 10,
        act: str = "sigmoid") -> dict[str, Any]:
    """An MLP of ``depth`` fully connected layers and its gradient graph (p.28 for depth 2).

    fc -> act -> ... -> fc -> softmax cross-entropy; ``act`` is "sigmoid" or
    "relu". Returns ``x``, ``labels``, ``params``, ``loss``, ``grads`` and
    ``outputs`` (loss and gradients: the training graph) plus a ``feed``
    maker ``make_feed(seed)``.
    """
    acts = {"sigmoid": sigmoid, "relu": relu}
    f = acts[check_choice(act, "mlp: act", acts, GraphError)]
    for what, n in (("depth", depth), ("batch", batch), ("n_in", n_in), ("hidden", hidden),
                    ("n_out", n_out)):
        check_int(n, f"mlp: {what}", 1, GraphError)
    x = placeholder("input", (batch, n_in))
    labels = placeholder("label", (batch,), np.int32)
    widths = [n_in] + [hidden] * (depth - 1) + [n_out]
    params, h = [], x
    for i in range(depth):
        w = placeholder(f"W{i + 1}", (widths[i], widths[i + 1]))
        params.append(w)
        h = matmul(h, w, name=f"fullc{i + 1}")
        if i < depth - 1:
            h = f(h, name=f"{act}{i + 1}")
    loss = softmax_cross_entropy(h, labels, name="loss")
    grads = gradients(loss, params)

    def make_feed(seed: int = 0) -> dict[Node, np.ndarray]:
        rng = np.random.default_rng(seed)
        feed = {x: rng.standard_normal(x.shape).astype(np.float32),
                labels: rng.integers(0, n_out, batch).astype(np.int32)}
        for w in params:
            feed[w] = (rng.standard_normal(w.shape) / np.sqrt(w.shape[0])).astype(np.float32)
        return feed

    return {"x": x, "labels": labels, "params": params, "loss": loss, "grads": grads,
            "outputs": [loss, *grads], "make_feed": make_feed}


def mlp2(**kw: Any) -> dict[str, Any]:
    """The two-layer MLP of p.28: fc1, sigmoid, fc2, softmax cross-entropy, with gradients."""
    return mlp(depth=2, **kw)


def training_outputs(model: dict[str, Any], wrt: str = "params",
                     addto: bool | str = False) -> list[Node]:
    """Loss plus gradients: w.r.t. the weights (``"params"``) or the data only (``"data"``).

    Gradients w.r.t. the data give the whole backward pass over feature maps
    without weight gradients: what p.35-36 measure. ``addto="all"``: every value's gradient
    contributions are added in place into one buffer, as in MXNet (see :func:`gradients`).
    """
    wrt = check_choice(wrt, "training_outputs: wrt", ("params", "data"), GraphError)
    xs = model["params"] if wrt == "params" else [model["data"]]
    return [model["loss"], *gradients(model["loss"], xs, addto=addto)]


def conv_resnet(blocks: int = 8, batch: int = 16, length: int = 256, kernel: int = 5,
                classes: int = 10) -> dict[str, Any]:
    """A small residual 1-D CNN that runs with numpy: per block ``h = h + relu(conv(h, w))``, then
    average pooling, a linear layer and softmax cross-entropy (lesson 06's overhead, p.37)."""
    x = placeholder("input", (batch, length))
    labels = placeholder("label", (batch,), np.int32)
    params, h = [], x
    for b in range(blocks):
        w = placeholder(f"k{b + 1}", (kernel,))
        params.append(w)
        h = h + relu(conv(h, w, name=f"conv{b + 1}"), name=f"relu{b + 1}")
    w_out = placeholder("W_out", (length, classes))
    params.append(w_out)
    loss = softmax_cross_entropy(matmul(pool(h), w_out, name="fc"), labels, name="loss")

    def make_feed(seed: int = 0) -> dict[Node, np.ndarray]:
        rng = np.random.default_rng(seed)
        feed = {x: rng.standard_normal(x.shape).astype(np.float32),
                labels: rng.integers(0, classes, batch).astype(np.int32),
                w_out: (rng.standard_normal(w_out.shape) / np.sqrt(length)).astype(np.float32)}
        for w in params[:-1]:
            feed[w] = (rng.standard_normal(w.shape) / kernel).astype(np.float32)
        return feed

    return {"x": x, "labels": labels, "params": params, "loss": loss, "make_feed": make_feed}

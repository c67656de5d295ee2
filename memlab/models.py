"""The model zoo and the lecture's memory comparisons (p.22-23, p.28-29, p.35-36).

Small graphs run with numpy: the slide p.22 and p.23 examples and MLPs of
any depth with their gradient graphs (p.28). Big graphs are shape-only
(:mod:`memlab.models_cnn`): AlexNet-, VGG-, GoogLeNet-like networks, ResNets
and unrolled LSTMs, planned but never run. The functions at the end return
the slides' comparisons as data (no drawing here):

* :func:`slide29_table`: naive / in-place / co-share / both, forward and
  training, with the values read off the slide (:data:`SLIDE29`).
* :func:`resnet_curve`, :func:`lstm_curve`: feature-map memory against depth
  and unrolled steps for no optimisation, in-place, and sharing (in-place +
  co-share), next to the slide's values (:data:`SLIDE35`, :data:`SLIDE36`).

Differences from the slides, and why. The slides measure MXNet's operators
(one fused backward op per layer, cuDNN workspaces, per-op temporary
space, weights and their gradients counted in p.29); we count only the
values of our graph, weights excluded. Batch sizes are chosen so that the
"no optimisation" values land near the slides' (p.29: batch 64 as in the
MXNet paper; p.35: batch 32 at 224x224; p.36: one layer, hidden 1024,
batch 1024). All curves are straight lines in depth or steps, as on the slides;
the ratios between strategies are what to compare. ResNet: ours 0.57
(in-place / none) and 0.28 (sharing / none) against the slide's 0.59 and
0.30-0.34. LSTM: ours 0.43 and 0.15 against 0.21 and 0.08: MXNet's LSTM
backward writes gradient sums in place into one buffer ("add to") and
fuses each gate's backward, while our backward has one node per gradient
contribution plus the sums ``ml.gradients`` builds, so in-place and
sharing have more values to keep apart. p.29: our VGG and AlexNet naive
values are about twice the slide's (we count every relu and dropout output
and every gradient separately); the order naive > in-place > co-share >
both, and the forward-only collapse under co-share, are the same.
Weight gradients are left out of the p.35-36 curves (``wrt="data"``): the
slides plot feature maps only.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import models_cnn
from .autodiff import gradients
from .graph import Node, placeholder, topo_order
from .models_cnn import ShapeOnly, shape_op, alexnet, vgg, googlenet, resnet  # noqa: F401
from .ops import concat, conv, matmul, mul, pool, relu, sigmoid, softmax_cross_entropy
from .planner import plan_memory

GB = 1e9

#: Slide p.29, read off the bars (GB): forward-only and training, per strategy.
SLIDE29 = {"forward": {"alexnet": (0.35, 0.2, 0.15, 0.12), "googlenet": (2.2, 1.4, 0.5, 0.5),
                       "vgg": (3.9, 2.15, 1.6, 1.0)},
           "training": {"alexnet": (0.75, 0.6, 0.5, 0.42), "googlenet": (5.3, 4.3, 2.5, 2.4),
                        "vgg": (7.9, 6.1, 5.45, 4.7)}}
#: Slide p.35 (ResNet, GB, read off the log plot): layers -> (none, in-place, sharing).
SLIDE35 = {100: (16.0, 9.5, 5.5), 1000: (150.0, 85.0, 45.0)}
#: Slide p.36 (LSTM, GB, read off the log plot): steps -> (none, in-place, sharing).
SLIDE36 = {40: (10.0, 2.2, 0.85), 1600: (300.0, 64.0, 24.0)}
STRATEGIES = {"naive": (False, False), "inplace": (True, False), "co-share": (False, True),
              "both": (True, True)}


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


def mlp(depth: int = 2, batch: int = 64, n_in: int = 784, hidden: int = 256, n_out: int = 10,
        act: str = "sigmoid") -> dict[str, Any]:
    """An MLP of ``depth`` fully connected layers and its gradient graph (p.28 for depth 2).

    fc -> act -> ... -> fc -> softmax cross-entropy; ``act`` is "sigmoid" or
    "relu". Returns ``x``, ``labels``, ``params``, ``loss``, ``grads`` and
    ``outputs`` (loss and gradients: the training graph) plus a ``feed``
    maker ``make_feed(seed)``.
    """
    f = {"sigmoid": sigmoid, "relu": relu}[act]
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


def lstm(steps: int = 40, batch: int = 1024, hidden: int = 1024, layers: int = 1) -> dict[str, Any]:
    """A shape-only LSTM unrolled ``steps`` times, ``layers`` deep, loss on the last step.

    Per step and layer, as in MXNet's LSTM example: per gate ``fc(x) + fc(h)``,
    sigmoid / tanh gates, ``c = f*c + i*g`` and ``h = o * tanh(c)``.
    """
    sig = shape_op("sigmoid", inplace=True, saves="output", grad_inplace=True)
    tnh = shape_op("tanh", inplace=True, saves="output", grad_inplace=True)
    emul = shape_op("mul", saves="inputs", grad_inplace=True)
    eadd = shape_op("add", inplace=True, saves="none", grad_inplace=True)
    shp = (batch, hidden)
    h0 = [placeholder(f"h0_{l}", shp) for l in range(layers)]
    c0 = [placeholder(f"c0_{l}", shp) for l in range(layers)]
    h, c = list(h0), list(c0)
    for t in range(steps):
        x = placeholder(f"x{t}", shp)
        for l in range(layers):
            pre = [eadd(models_cnn.fc(x, hidden), models_cnn.fc(h[l], hidden), shape=shp) for _ in range(4)]
            i, f, o = (sig(p, shape=shp) for p in pre[:3])
            g = tnh(pre[3], shape=shp)
            c[l] = eadd(emul(f, c[l], shape=shp), emul(i, g, shape=shp), shape=shp)
            h[l] = emul(o, tnh(c[l], shape=shp), shape=shp)
            x = h[l]
    loss = models_cnn.softmax_loss(models_cnn.fc(x, 10))
    return {"data": h0[0], "loss": loss, "params": h0 + c0}


def training_outputs(model: dict[str, Any], wrt: str = "params") -> list[Node]:
    """Loss plus gradients: w.r.t. the weights (``"params"``) or the data only (``"data"``).

    Gradients w.r.t. the data give the whole backward pass over feature maps
    without weight gradients: what p.35-36 measure.
    """
    xs = model["params"] if wrt == "params" else [model["data"]]
    return [model["loss"], *gradients(model["loss"], xs)]


def compare_strategies(outputs: Sequence[Node]) -> dict[str, int]:
    """Total planned bytes for naive / in-place / co-share / both (p.29's four bars)."""
    return {name: plan_memory(outputs, inplace=ip, share=sh, trace=False).total_bytes
            for name, (ip, sh) in STRATEGIES.items()}


def slide29_table(batch: int = 64) -> list[dict[str, Any]]:
    """Slide p.29 as rows: model, mode (forward / training), our GB per strategy, the slide's GB."""
    rows = []
    for name, build in (("alexnet", alexnet), ("googlenet", googlenet), ("vgg", vgg)):
        m = build(batch)
        for mode, outs in (("forward", [m["loss"]]), ("training", training_outputs(m))):
            ours = {k: v / GB for k, v in compare_strategies(outs).items()}
            rows.append({"model": name, "mode": mode, **ours,
                         "slide": dict(zip(STRATEGIES, SLIDE29[mode][name]))})
    return rows


def _curve(build: Callable[[int], dict[str, Any]], xs: Sequence[int], slide: dict) -> list[dict[str, Any]]:
    rows = []
    for x in xs:
        outs = training_outputs(build(x), wrt="data")
        r = {"x": x, "nodes": len(topo_order(outs))}
        for name, ip, sh in (("none", False, False), ("inplace", True, False), ("sharing", True, True)):
            r[name] = plan_memory(outs, inplace=ip, share=sh, trace=False).total_bytes / GB
        if x in slide:
            r["slide"] = dict(zip(("none", "inplace", "sharing"), slide[x]))
        rows.append(r)
    return rows


def resnet_curve(layers: Sequence[int] = (100, 200, 400, 700, 1000), batch: int = 32) -> list[dict[str, Any]]:
    """Slide p.35 (a) as data: ResNet feature-map GB against depth for none / in-place / sharing."""
    return _curve(lambda d: resnet(d, batch), layers, SLIDE35)


def lstm_curve(steps: Sequence[int] = (40, 100, 200, 400, 800, 1600), batch: int = 1024,
               hidden: int = 1024, layers: int = 1) -> list[dict[str, Any]]:
    """Slide p.36 (a) as data: LSTM feature-map GB against unrolled steps for none / in-place / sharing."""
    return _curve(lambda s: lstm(s, batch, hidden, layers), steps, SLIDE36)

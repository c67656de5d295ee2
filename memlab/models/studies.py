"""The lecture's memory comparisons as data (CSE599G1 lecture 7, p.29, p.35-36); no drawing here.

Built on the model zoo (:mod:`.zoo`, :mod:`.shape_only`: shape-only AlexNet-, VGG-, GoogLeNet-like
networks, ResNets and unrolled LSTMs, planned but never run):

* :func:`slide29_table`: naive / in-place / co-share / both, forward and
  training, with the values read off the slide (:data:`SLIDE29`).
* :func:`slide29_onnx_table`: the same on the real AlexNet, GoogLeNet and VGG-19 imported from
  the ONNX files the ``onnx`` package ships (lesson 16).
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

import time
from typing import Any, Callable, Mapping, Sequence

from ..checkpoint import drop_cheap as drop_cheap_ops, every_k, forward_nodes_of as forward_nodes, \
    memonger, recompute_graph, recomputed_nodes, recursive_checkpoints, sqrt_checkpoints
from ..errors import PlanError, check_choice, check_int, check_list
from ..execute import Executor
from ..graph import PLACEHOLDER, Node, set_workspace, topo_order, workspace_of
from ..memory import memory_order, plan_memory, plan_offsets, resolve_order
from .encoder_decoder import seq2seq
from .shape_only import alexnet, googlenet, lstm, resnet, vgg
from .zoo import conv_resnet, mlp, training_outputs

GB = 1e9

#: Slide p.29, read off the bars (GB): forward-only and training, per strategy.
SLIDE29 = {"forward": {"alexnet": (0.35, 0.2, 0.15, 0.12), "googlenet": (2.2, 1.4, 0.5, 0.5),
                       "vgg": (3.9, 2.15, 1.6, 1.0)},
           "training": {"alexnet": (0.75, 0.6, 0.5, 0.42), "googlenet": (5.3, 4.3, 2.5, 2.4),
                        "vgg": (7.9, 6.1, 5.45, 4.7)}}
#: Slide p.35 (ResNet, GB, read off the log plot): layers -> (none, in-place, sharing).
SLIDE35 = {100: (16.0, 9.5, 5.5), 1000: (150.0, 85.0, 45.0)}
#: Slide p.35 (a)'s fifth line, "drop bn, relu" (GB, read off the log plot): layers -> GB.
SLIDE35_DROP = {100: 4.5, 1000: 34.0}
#: Slide p.36 (LSTM, GB, read off the log plot): steps -> (none, in-place, sharing).
SLIDE36 = {40: (10.0, 2.2, 0.85), 1600: (300.0, 64.0, 24.0)}
#: Slides p.35-36 (b), runtime total memory (GB, read off the log plots): layers or steps ->
#: (sharing, sublinear); sharing stops where it no longer fits the 12 GB GPU.
SLIDE35_TOTAL = {100: (6.0, 2.0), 200: (11.0, 2.6), 400: (None, 3.6), 1000: (None, 6.8)}
SLIDE36_TOTAL = {40: (1.4, 0.78), 100: (2.1, 0.9), 200: (3.4, 1.15), 400: (6.2, 1.4),
                 800: (12.0, 1.95), 1600: (None, 3.0)}
#: Slide p.37, time per batch (seconds, read off the log plots): layers or steps ->
#: (sharing, sublinear), ResNet then LSTM.
SLIDE37 = {"resnet": {100: (0.85, 1.2), 200: (1.6, 2.1), 1000: (None, 10.0)},
           "lstm": {40: (0.37, 0.5), 100: (0.73, 0.95), 400: (2.9, 4.0), 800: (5.6, 8.0)}}
STRATEGIES = {"naive": (False, False), "inplace": (True, False), "co-share": (False, True),
              "both": (True, True)}


def compare_strategies(outputs: Sequence[Node], order: Sequence[Node] | str | None = None
                       ) -> dict[str, int]:
    """Total planned bytes for naive / in-place / co-share / both (p.29's four bars), in ``order``
    (default: the memory-aware order, :func:`~memlab.memory.memory_order`; ``"dfs"``: depth-first)."""
    order = resolve_order(outputs, order)
    return {name: plan_memory(outputs, inplace=ip, share=sh, trace=False, order=order).total_bytes
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


#: The networks of p.29 among the ONNX model zoo's (:func:`~memlab.models.onnx_zoo`): BVLC
#: AlexNet, GoogLeNet (Inception v1) and VGG-19, under the slide's names.
SLIDE29_ONNX = {"alexnet": "bvlc_alexnet", "googlenet": "inception_v1", "vgg": "vgg19"}


def slide29_onnx_table(batch: int = 64, order: Sequence[Node] | str | None = None
                       ) -> list[dict[str, Any]]:
    """Slide p.29 on the real networks, imported from the ONNX files the ``onnx`` package ships
    (:data:`SLIDE29_ONNX`): rows as :func:`slide29_table`'s (model, mode, GB per strategy, the
    slide's GB), plus the ``network`` imported, its ``parameters`` and ``weights GB`` (the
    weights themselves, which p.29 counts and the planned bytes leave out)."""
    from .onnx_import import from_onnx
    rows = []
    for name, network in SLIDE29_ONNX.items():
        m = from_onnx(network, batch=batch)
        for mode, outs in (("forward", [m["loss"]]), ("training", training_outputs(m))):
            ours = {k: v / GB for k, v in compare_strategies(outs, order).items()}
            rows.append({"model": name, "network": network, "mode": mode, **ours,
                         "slide": dict(zip(STRATEGIES, SLIDE29[mode][name])),
                         "parameters": m["parameters"], "weights GB": 4 * m["parameters"] / GB})
    return rows


#: Slide p.35-36's sublinear line, read off the plots (GB), and Chen et al. 2016's ResNet figures.
SUBLINEAR = {"resnet": {100: 1.6, 1000: 4.0}, "lstm": {40: 0.28, 1600: 2.6}}
#: Chen et al. 2016's LSTM experiment (behind p.36): four layers of 1024 hidden units, batch 64.
CHEN_LSTM = {"layers": 4, "hidden": 1024, "batch": 64}
CHEN_RESNET_1000 = {"baseline GB": 48.0, "sublinear GB": 7.0, "extra time": 0.30}


def _curve(build: Callable[[int], dict[str, Any]], xs: Sequence[int], slide: dict,
           sublinear: str | None = None, addto: bool | str = False, wrt: str = "data",
           workspace: Mapping[str, Any] | None = None, drop_cheap: bool = False
           ) -> list[dict[str, Any]]:
    rows = []
    for x in xs:
        model = build(x)
        outs = training_outputs(model, wrt=wrt, addto=addto)
        if workspace is not None:
            set_workspace(outs, workspace)
        r: dict[str, Any] = {"x": x, "nodes": len(topo_order(outs))}
        # a full step holds its weight gradients to the end: not feature maps (p.35 (a))
        held = sum(o.nbytes for o in outs[1:]) if wrt == "params" else 0
        for name, ip, sh in (("none", False, False), ("inplace", True, False), ("sharing", True, True)):
            r[name] = (plan_memory(outs, inplace=ip, share=sh, trace=False).total_bytes - held) / GB
        if sublinear:  # checkpoints, then the same planner with in-place and sharing
            keep = memonger(outs) if sublinear == "memonger" else sqrt_checkpoints(outs)
            rewritten = recompute_graph(outs, keep)
            r["sublinear"] = (plan_memory(rewritten, trace=False).total_bytes - held) / GB
        if drop_cheap:  # p.35 (a)'s "drop bn, relu": sharing, cheap outputs recomputed
            rewritten = recompute_graph(outs, drop_cheap_ops(outs))
            r["drop cheap"] = (plan_memory(rewritten, trace=False).total_bytes - held) / GB
        if wrt == "params":  # p.35-36 (b): the runtime total, as the slides separate it
            r.update(runtime_memory(model, held, outs))
            for name in ("sharing", "sublinear"):
                if name in r:
                    r[f"{name} total"] = r[name] + r["weights"] + r["gradients"] + r["inputs"]
        if x in slide:
            r["slide"] = dict(zip(("none", "inplace", "sharing"), slide[x]))
        rows.append(r)
    return rows


def runtime_memory(model: dict[str, Any], gradient_bytes: int,
                   outputs: Sequence[Node] | None = None) -> dict[str, float]:
    """What a training step holds besides its feature maps (slides p.35-36 (b), "runtime total
    memory"), in GB: the ``weights`` (parameters), their ``gradients`` (``gradient_bytes``), the
    ``inputs`` of the batch (data and labels) and the ``workspace``: the largest scratch one op of
    ``outputs`` holds while it runs (:func:`~memlab.graph.set_workspace`; 0 unless a table was
    set: memlab's numpy ops need none, cuDNN's convolutions may). The planners count workspaces in
    their bytes already; this column says how much of them it is."""
    params = {id(p) for p in model["params"]}
    inputs = [n for n in topo_order([model["loss"]]) if n.op is PLACEHOLDER and id(n) not in params]
    work = max((workspace_of(n) for n in topo_order(outputs)), default=0) if outputs else 0
    return {"weights": sum(p.nbytes for p in model["params"]) / GB,
            "gradients": gradient_bytes / GB,
            "inputs": sum(n.nbytes for n in inputs) / GB, "workspace": work / GB}


def resnet_curve(layers: Sequence[int] = (100, 200, 400, 700, 1000), batch: int = 32,
                 sublinear: str | None = None, addto: bool | str = False, wrt: str = "data",
                 workspace: Mapping[str, Any] | None = None, drop_cheap: bool = False
                 ) -> list[dict[str, Any]]:
    """Slide p.35 (a) as data: ResNet feature-map GB against depth for none / in-place / sharing
    (with ``drop_cheap=True``, ``"drop cheap"``: sharing with the batch-norm and ReLU outputs
    recomputed, :func:`~memlab.checkpoint.graph_strategies.drop_cheap`, p.35's "drop bn, relu"; with
    ``sublinear="memonger"`` or ``"sqrt"``, checkpointing on top of sharing: p.35's
    "sublinear plan"). ``addto="all"``: MXNet's in-place gradient sums (:func:`gradients`).
    ``wrt="params"``: full training steps; the columns are then feature maps (the weight gradients,
    held to the end, left out), and :func:`runtime_memory`'s columns and ``"sharing total"`` /
    ``"sublinear total"`` give panel (b), the runtime total. ``workspace``: a table of op names to
    workspace bytes (:func:`~memlab.graph.set_workspace`; e.g. ``{"conv2d": ...}``), counted by
    the planners during each op's step; default none."""
    return _curve(lambda d: resnet(d, batch), layers, SLIDE35, sublinear, addto, wrt, workspace,
                  drop_cheap)


def lstm_curve(steps: Sequence[int] = (40, 100, 200, 400, 800, 1600), batch: int = 1024,
               hidden: int = 1024, layers: int = 1, sublinear: str | None = None,
               addto: bool | str = False, wrt: str = "data",
               workspace: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Slide p.36 (a) as data: LSTM feature-map GB against unrolled steps for none / in-place /
    sharing (and, with ``sublinear="memonger"`` or ``"sqrt"``, checkpointing on top).
    :data:`CHEN_LSTM` is the configuration of Chen et al. 2016 (the paper behind p.36);
    ``addto="all"``: MXNet's in-place gradient sums (:func:`gradients`); ``wrt="params"``: full
    training steps; ``workspace`` as in :func:`resnet_curve` (e.g. ``{"fc": ...}``)."""
    return _curve(lambda s: lstm(s, batch, hidden, layers), steps, SLIDE36, sublinear, addto, wrt,
                  workspace)


def overhead(outputs: Sequence[Node], feed: dict, keep: set[Node], repeat: int = 3) -> dict[str, float]:
    """Slide p.37's execution overhead of recomputation on a graph that runs, both over the whole
    store-all step: ``counted extra``, the recomputed copies over the ops of the step (forward
    and backward: what time would show if every op cost the same) and ``measured extra``, the
    arena executor's time over store all's (the median of ``repeat`` runs each); with the
    planned bytes before and after, and ``forward extra``, the copies over the forward ops
    (p.33's "one additional forward pass" is 1)."""
    rewritten = recompute_graph(outputs, keep)
    return _overhead(list(outputs), rewritten, plan_offsets(outputs), plan_offsets(rewritten),
                     feed, repeat)


def _overhead(outputs: list[Node], rewritten: list[Node], base_plan: Any, new_plan: Any,
              feed: dict, repeat: int) -> dict[str, float]:
    """:func:`overhead`'s row, from the rewritten graph and both offset plans."""
    step_ops = sum(1 for n in topo_order(outputs) if n.op.computes)
    row: dict[str, float] = {"forward ops": len(forward_nodes(outputs)), "step ops": step_ops,
                             "recomputed": len(recomputed_nodes(rewritten))}
    for name, outs, plan in (("baseline", outputs, base_plan), ("sublinear", rewritten, new_plan)):
        ex = Executor(outs, plan=plan)
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            ex.run(feed)
            times.append(time.perf_counter() - t)
        row[f"{name} MB"] = plan.total_bytes / 1e6
        row[f"{name} ms"] = sorted(times)[len(times) // 2] * 1e3
    row["forward extra"] = row["recomputed"] / row["forward ops"]
    row["counted extra"] = row["recomputed"] / row["step ops"]
    row["measured extra"] = row["sublinear ms"] / row["baseline ms"] - 1
    return row


def every_k_curve(outputs: Sequence[Node], ks: Sequence[int]) -> list[dict[str, Any]]:
    """Slide p.33's trade-off measured: for each segment length ``K``, checkpoint every ``K``-th
    forward value and plan; ``feature maps`` (:func:`feature_map_bytes`) and ``recomputed`` ops,
    with ``n`` the forward ops (store all is ``K = 1``)."""
    from ..checkpoint.rewrite import training_outputs as _step
    outputs = _step(outputs, "every_k_curve")
    ks = check_list(ks, "every_k_curve: ks (segment lengths)", PlanError, nonempty=True)
    n = len(forward_nodes(outputs))
    rows = []
    for k in ks:
        k = check_int(k, "every_k_curve: ks (segment lengths)", low=1, error=PlanError)
        new = recompute_graph(outputs, every_k(outputs, k)) if k > 1 else list(outputs)
        rows.append({"K": k, "n": n, "feature maps": feature_map_bytes(new),
                     "recomputed": len(recomputed_nodes(new)) if k > 1 else 0})
    return rows


def runnable_step(kind: str, size: int, seed: int = 0) -> tuple[list[Node], dict]:
    """A full training step that runs with numpy, for p.37's overhead: ``"resnet"``: the 1-D
    ResNet of ``size`` blocks (:func:`~memlab.models.conv_resnet`); ``"lstm"``: an LSTM
    encoder-decoder unrolled ``size`` steps each way (:func:`~memlab.models.seq2seq`, hidden 32,
    batch 16). Returns (loss and every parameter gradient, a seeded feed)."""
    kind = check_choice(kind, "runnable_step: kind", ("resnet", "lstm"), PlanError)
    size = check_int(size, "runnable_step: size", low=1, error=PlanError)
    if kind == "resnet":
        m = conv_resnet(blocks=size)
        return training_outputs(m), m["make_feed"](seed)
    s2s = seq2seq(size, size, hidden=32, batch=16)
    return [s2s.loss, *s2s.grads()], s2s.feed(seed)


def overhead_curve(kind: str, sizes: Sequence[int], strategy: str = "sqrt(N)", repeat: int = 3
                   ) -> list[dict[str, Any]]:
    """Slide p.37 on graphs that run: for each size of :func:`runnable_step`, :func:`overhead` of
    the :data:`CHECKPOINTS` ``strategy`` (memory before and after, counted and measured extra
    work), with ``"x"`` the size."""
    check_choice(strategy, "overhead_curve: strategy", CHECKPOINTS, PlanError)
    rows = []
    for size in sizes:
        outs, feed = runnable_step(kind, size)
        rows.append({"x": size, **overhead(outs, feed, CHECKPOINTS[strategy](outs), repeat)})
    return rows


#: The strategies of :func:`checkpoint_table` (p.31-34): training outputs -> kept set(s).
CHECKPOINTS: dict[str, Callable[[list[Node]], Any]] = {
    "sqrt(N)": sqrt_checkpoints, "memonger": memonger, "recursive": recursive_checkpoints,
    "every 4": lambda outs: every_k(outs, 4)}
#: Chen et al. 2016 and the slides, beside :func:`checkpoint_table`: ResNet-1000 48 GB -> 7 GB
#: (0.15x), p.33's "one additional forward pass (25% overhead)", Chen et al.'s 30% extra time.
CHEN_FIGURES = {"resnet-1000 ratio": 7.0 / 48.0, "p.33 overhead": 0.25, "chen extra time": 0.30}


def training_steps(size: str = "small") -> dict[str, tuple[list[Node], dict | None]]:
    """Full training steps (loss and every parameter gradient) for :func:`checkpoint_table`:
    name -> (outputs, feed, or None for a shape-only graph). ``"full"``: the 36-layer MLP of issue
    23, ResNet-1000 in Chen et al.'s configuration (batch 32, 224x224 images) and LSTM-400 (p.36's
    configuration); ``"small"``: the same families at test sizes."""
    full = check_choice(size, "training_steps: size", ("small", "full"), PlanError) == "full"
    m = mlp(depth=36, batch=256, n_in=16, hidden=16, n_out=4)
    cr = conv_resnet(blocks=32) if full else conv_resnet(blocks=8, batch=4, length=32)
    s2s = seq2seq(8, 8) if full else seq2seq(4, 4, hidden=8, batch=4)
    steps = {"MLP-36": (m["outputs"], m["make_feed"](0)),
             f"1-D ResNet-{len(cr['params']) - 1}": (training_outputs(cr), cr["make_feed"](0)),
             f"seq2seq {s2s.src_len}+{s2s.tgt_len}": ([s2s.loss, *s2s.grads()], s2s.feed(0))}
    net = resnet(1000, 32) if full else resnet(50, 32, image=64)
    rnn = lstm(400) if full else lstm(40, 8, 16)
    steps[f"ResNet-{1000 if full else 50}"] = (training_outputs(net), None)
    steps[f"LSTM-{400 if full else 40}"] = (training_outputs(rnn), None)
    return steps


def feature_map_bytes(outputs: Sequence[Node]) -> int:
    """Arena bytes of the offset planner less the gradients the step returns (held to its end):
    what checkpointing acts on (Chen et al.'s feature maps; p.35 (a) without weights' gradients)."""
    return _feature_maps(outputs, plan_offsets(outputs).total_bytes)


def _feature_maps(outputs: Sequence[Node], arena: int) -> int:
    """:func:`feature_map_bytes` from the arena bytes of the offset plan."""
    return arena - sum(o.nbytes for o in list(outputs)[1:])


def checkpoint_table(steps: dict[str, tuple[list[Node], dict | None]] | None = None,
                     strategies: Sequence[str] = tuple(CHECKPOINTS), repeat: int = 3
                     ) -> list[dict[str, Any]]:
    """Strategy x model on full training steps (p.31-37; Chen et al. 2016), each against store all
    under the same memory-aware order: ``bytes`` (arena) and ``feature maps``
    (:func:`feature_map_bytes`) as fractions of store all, ``counted`` overhead (recomputed copies
    / forward ops) and, for graphs with a feed, ``measured`` overhead (arena executor time, best of
    ``repeat``). ``steps``: :func:`training_steps` (small) by default."""
    for name in strategies:
        check_choice(name, "checkpoint_table: strategies (names)", CHECKPOINTS, PlanError)
    rows = []
    for model, (outs, feed) in (training_steps() if steps is None else steps).items():
        base_plan = plan_offsets(outs)            # each graph planned once, as overhead() plans it
        base = base_plan.total_bytes
        base_fm = _feature_maps(outs, base)
        for name in strategies:
            keep = CHECKPOINTS[name](outs)
            new = recompute_graph(outs, keep)
            new_plan = plan_offsets(new)
            r: dict[str, Any] = {"model": model, "strategy": name,
                                 "bytes": new_plan.total_bytes / base,
                                 "feature maps": _feature_maps(new, new_plan.total_bytes) / base_fm,
                                 "counted": len(recomputed_nodes(new)) / len(forward_nodes(outs)),
                                 "measured": None}
            if feed is not None:
                r["measured"] = _overhead(list(outs), new, base_plan, new_plan, feed,
                                          repeat)["measured extra"]
            rows.append(r)
    return rows


def layer_sizes(model: dict[str, Any]) -> tuple[list[int], list[float]]:
    """Per-layer parameter counts and activation bytes per sample of a zoo model built with batch 1
    (a layer: an op that reads a weight of ``model["params"]``; its activations: the forward values
    computed since the last one, in the forward pass's memory-aware order,
    :func:`~memlab.memory.memory_order`). The labels are not a weight: the loss is no layer."""
    params, acts, _ = _layers(model)
    return params, acts


def layer_inputs(model: dict[str, Any]) -> list[int]:
    """Bytes per sample of each layer's input (the layers of :func:`layer_sizes`): the data for
    the first, the previous layer's output after it. A pipeline stage that re-materialises keeps
    exactly this for each micro-batch (:func:`~memlab.checkpoint.parallel.from_sizes`)."""
    return _layers(model)[2]


def _layers(model: dict[str, Any]) -> tuple[list[int], list[float], list[int]]:
    if not isinstance(model, dict) or "loss" not in model or "params" not in model or not (
            "data" in model or "x" in model):
        raise PlanError(f"layer sizes: model must be a zoo model (a dict with 'loss', 'params' and "
                        f"'data'), e.g. models.vgg(batch=1), got {type(model).__name__}")
    data = model["data"] if "data" in model else model["x"]
    weights_of = {id(p) for p in model["params"]}
    params, acts, inputs, pending, last = [], [], [], 0.0, data
    for n in memory_order(model["loss"]):
        if not n.op.computes:
            continue
        pending += n.nbytes
        weights = [x for x in n.inputs if id(x) in weights_of]
        if weights:
            params.append(sum(w.size for w in weights))
            acts.append(pending)
            inputs.append(last.nbytes // data.shape[0])
            pending, last = 0.0, n
    if acts:
        acts[-1] += pending
    return params, acts, inputs

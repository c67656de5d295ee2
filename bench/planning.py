"""Benchmark of memlab's memory planners (lecture 7, p.17-22, p.29).

Prints three tables:

1. planner time (tag planner without step trace in the depth-first order, ``order="dfs"``; the
   same in the default memory-aware order, which costs a few more walks of the graph; the same
   with ``trace=True``; the offset planner) for random and model graphs of about 1e3, 1e4 and
   1e5 nodes, next to a plain topological sort of the same graph with ``graphlib``
   (``bench/orders.py`` times ``memory_order`` itself);
2. for each model: naive / tags / offsets / lower-bound bytes;
3. arena executor vs naive executor time on a deep MLP training step.

Run: ``.venv/bin/python bench/planning.py`` (under about three minutes);
``bench/planning.py speed`` prints table 1 only.
"""
from __future__ import annotations

import gc
import random
import sys
import time
from graphlib import TopologicalSorter

from _progress import row, sweep

import memlab as ml
from memlab.models import lstm, mlp, resnet, training_outputs
from memlab.models import alexnet, googlenet, vgg
from memlab.memory.offsets import live_bytes_lower_bound, plan_offsets, plan_tags_by_size
from memlab.memory.planner import plan_memory

sys.setrecursionlimit(10000)


def best_of(fn, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls, in seconds (garbage collection paused while timing,
    so a collection of the previous graph does not land in one side of a comparison)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        finally:
            gc.enable()
    return min(times)


def random_graph(n: int, seed: int = 0) -> list[ml.Node]:
    """About ``n`` nodes of elementwise / pool ops, each reading one or two recent values."""
    rng = random.Random(seed)
    nodes = [ml.placeholder(f"x{i}", (64, 64)) for i in range(4)]
    consumed = set()
    while len(nodes) < n:
        window = nodes[-50:]
        a = rng.choice(window)
        r = rng.random()
        if r < 0.35:
            new = ml.add(a, rng.choice(window)) if rng.random() < 0.5 else ml.mul(a, rng.choice(window))
        elif r < 0.85:
            new = ml.sigmoid(a) if rng.random() < 0.5 else ml.tanh(a)
        else:
            new = ml.pool(a)
        consumed.update(new.inputs)
        nodes.append(new)
    return [x for x in nodes if x.op.computes and x not in consumed]


def model_graphs() -> list[tuple[str, list[ml.Node]]]:
    """(name, training outputs) of MLP and LSTM training graphs of about 1e3, 1e4, 1e5 nodes."""
    out = []
    for depth in (60, 600, 6000):
        out.append((f"mlp-{depth} train", mlp(depth=depth, batch=32, n_in=64, hidden=64)["outputs"]))
    for steps in (16, 160, 1600):
        out.append((f"lstm-{steps} train", training_outputs(lstm(steps, 64, 64), wrt="data")))
    return out


def table_speed() -> None:
    row("\n1. Planner time vs a graphlib topological sort of the same graph (best of 5 or 7)")
    row(f"{'graph':<20}{'nodes':>8}{'sort ms':>10}{'tags ms':>10}{'ratio':>7}{'default':>9}{'ratio':>7}"
        f"{'traced ms':>11}{'ratio':>7}{'offsets ms':>12}{'ratio':>7}")
    graphs = [(f"random-{n}", random_graph(n)) for n in (1000, 10000, 100000)] + model_graphs()
    for name, outs in sweep(graphs, "planner speed"):
        order = ml.topo_order(outs)
        deps = {n: n.inputs for n in order}
        reps = 7 if len(order) < 20000 else 5      # best of several: this is a shared machine
        t_sort = best_of(lambda: list(TopologicalSorter(deps).static_order()), reps)
        t_tags = best_of(lambda: plan_memory(outs, order="dfs"), reps)   # no trace, depth-first
        t_default = best_of(lambda: plan_memory(outs), 3)                # the memory-aware order
        # the trace copies every pending count per step (quadratic): timed up to 5000 nodes
        t_traced = best_of(lambda: plan_memory(outs, trace=True), 1) if len(order) <= 5000 else None
        t_off = best_of(lambda: plan_offsets(outs), 1)  # greedy up to 20k blocks, then the scan
        off = f"{t_off * 1e3:12.1f}{t_off / t_sort:7.2f}"
        traced = f"{t_traced * 1e3:11.1f}{t_traced / t_sort:7.2f}" if t_traced else f"{'-':>11}{'-':>7}"
        row(f"{name:<20}{len(order):>8}{t_sort * 1e3:10.1f}{t_tags * 1e3:10.1f}{t_tags / t_sort:7.2f}"
            f"{t_default * 1e3:9.1f}{t_default / t_sort:7.2f}{traced}{off}")


def table_memory() -> None:
    row("\n2. Planned bytes per model (MB); plans relative to the live-bytes bound")
    row("   tags: the lecture's online tag planner (p.22); by size: tags chosen biggest first with every")
    row("   lifetime known (plan_tags_by_size); offsets: greedy-by-size offsets in one arena")
    row(f"{'model':<24}{'nodes':>7}{'naive':>10}{'tags':>10}{'by size':>10}{'offsets':>10}{'bound':>10}"
        f"{'tags/b':>8}{'size/b':>8}{'offs/b':>8}")
    models = [("mlp2 (p.28) train", mlp(2)["outputs"]),
              ("mlp-50 train", mlp(50, batch=64, n_in=256, hidden=256)["outputs"]),
              ("alexnet b64 forward", [alexnet(64)["loss"]]),
              ("alexnet b64 train", training_outputs(alexnet(64))),
              ("vgg16 b64 train", training_outputs(vgg(64))),
              ("googlenet b64 train", training_outputs(googlenet(64))),
              ("resnet-152 b32 train", training_outputs(resnet(152, 32))),
              ("lstm-40 train", training_outputs(lstm(40), wrt="data"))]
    ratios: list[tuple[float, float, float]] = []
    for name, outs in sweep(models, "models"):
        naive = plan_memory(outs, inplace=False, share=False, trace=False).total_bytes
        tags = plan_memory(outs, trace=False)
        by_size = plan_tags_by_size(outs)
        offs = plan_offsets(outs)
        bound = live_bytes_lower_bound(tags)
        ratios.append((tags.total_bytes / bound, by_size.total_bytes / bound, offs.total_bytes / bound))
        mb = 1e6
        row(f"{name:<24}{len(tags.order):>7}{naive / mb:10.1f}{tags.total_bytes / mb:10.1f}"
            f"{by_size.total_bytes / mb:10.1f}{offs.total_bytes / mb:10.1f}{bound / mb:10.1f}"
            + "".join(f"{r:8.3f}" for r in ratios[-1]))
    means = [sum(col) / len(col) for col in zip(*ratios)]
    row(f"{'mean':<24}{'':>57}" + "".join(f"{m:8.3f}" for m in means))


def table_executor() -> None:
    row("\n3. One training step of a deep MLP: arena executor vs naive executor (best of 5)")
    m = mlp(depth=40, batch=128, n_in=256, hidden=256)
    feed = m["make_feed"](0)
    outs = m["outputs"]
    naive = ml.Executor(outs)
    arena_t = ml.Executor(outs, plan=plan_memory(outs))
    arena_o = ml.Executor(outs, plan=plan_offsets(outs))
    pooled = ml.Executor(outs, memory="pool")
    row(f"{'executor':<22}{'ms':>8}{'memory MB':>11}")
    executors = (("naive", naive), ("arena (tags)", arena_t), ("arena (offsets)", arena_o),
                 ("pool", pooled))
    for name, ex in sweep(executors, "executors"):
        ex.run(feed)
        t = best_of(lambda: ex.run(feed), 5)
        row(f"{name:<22}{t * 1e3:8.2f}{ex.stats.peak_bytes / 1e6:11.2f}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    table_speed()
    if sys.argv[1:] != ["speed"]:
        table_memory()
        table_executor()
    row(f"\ntotal {time.perf_counter() - t0:.0f} s")

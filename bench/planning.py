"""Benchmark of memlab's memory planners (lecture 7, p.17-22, p.29).

Prints these tables:

1. on training graphs of about 1e3 to 1e6 nodes (MLP, ResNet, GPT blocks stacked), the time of a
   plain topological sort of the graph with :mod:`graphlib`, of the default order search
   (``memory_order``), of the tag planner in its default order (``plan_memory``) and of the
   offset planner (``plan_offsets``), each as a ratio to the sort measured in the same run
   (CPU time, interleaved, best of several), then the growth exponent of each: the slope of log
   time against log nodes (1 is linear);
1b. where the time of the default planners goes, part by part, on graphs of about 1e4 nodes;
2. for each model: naive / tags / offsets / lower-bound bytes;
3. arena executor vs naive executor time on a deep MLP training step.

Run: ``.venv/bin/python bench/planning.py`` (every table, 1e6 nodes for the MLP only: a few
minutes); ``bench/planning.py speed`` tables 1 and 1b; ``speed all`` 1e6 nodes for every family;
``speed quick`` up to 1e5 nodes; ``parts`` table 1b only.
"""
from __future__ import annotations

import gc
import os
import sys
import time
from graphlib import TopologicalSorter

from _progress import row, sweep

import memlab as ml
import numpy as np

from memlab.models import lstm, mlp, resnet, training_outputs
from memlab.models.gpt import transformer
from memlab.models import alexnet, googlenet, vgg
from memlab.memory.offsets import live_bytes_lower_bound, plan_offsets, plan_tags_by_size
from memlab.memory.planner import plan_memory

sys.setrecursionlimit(10000)


def best_of(fn, repeat: int = 3, clock=time.perf_counter) -> float:
    """Best time of ``repeat`` calls on ``clock``, in seconds (garbage collection paused while
    timing, so a collection of the previous graph does not land in one side of a comparison)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t = clock()
            fn()
            times.append(clock() - t)
        finally:
            gc.enable()
    return min(times)


def training_graph(family: str, nodes: int) -> list[ml.Node]:
    """The training outputs of a ``family`` graph of about ``nodes`` nodes."""
    if family == "mlp":
        return mlp(depth=max(1, nodes // 9), batch=32, n_in=64, hidden=64)["outputs"]
    if family == "resnet":
        return training_outputs(resnet(max(20, int(nodes / 10.7)), 1, 32))
    return transformer(layers=max(1, nodes // 87), seq=8, hidden=16, heads=2, batch=1,
                       vocab=32).training_outputs()


def interleaved(fns: dict[str, object], repeat: int) -> dict[str, float]:
    """Best CPU time of each function (``time.process_time``: all of it single-threaded Python)
    over ``repeat`` rounds that run them in turn, so neither the other processes of a shared
    machine (time spent waiting for a core is not counted) nor a slow moment (it falls on
    every function of a round) tilts one side of a ratio."""
    best = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            best[k] = min(best[k], best_of(fn, 1, time.process_time))
    return best


def table_speed(sizes: tuple[int, ...] = (10**3, 10**4, 10**5), big: tuple[str, ...] = ("mlp",)
                ) -> None:
    row("\n1. Order search and planners vs a graphlib topological sort of the same training graph")
    row("   (CPU ms; ratios to the sort in the same run; interleaved, best of 15 at 1e3, 5 at 1e4,")
    row(f"   3 at 1e5, 1 at 1e6; load average {os.getloadavg()[0]:.1f} at the start)")
    row(f"{'graph':<10}{'nodes':>9}{'sort':>10}{'order':>10}{'ratio':>7}{'plan_memory':>12}"
        f"{'ratio':>7}{'plan_offsets':>13}{'ratio':>7}")
    fits: dict[str, list[tuple[int, dict[str, float]]]] = {}
    cases = [(f, n) for f in ("mlp", "resnet", "gpt") for n in sizes]
    cases += [(f, 10**6) for f in big]
    for family, size in sweep(cases, "planner speed"):
        outs = training_graph(family, size)
        order = ml.topo_order(outs)
        deps = {n: n.inputs for n in order}
        reps = (15 if len(order) < 5_000 else 5 if len(order) < 50_000 else 3 if len(order) < 500_000
                else 1)
        t = interleaved({"sort": lambda: list(TopologicalSorter(deps).static_order()),
                         "order": lambda: ml.memory_order(outs),
                         "plan": lambda: plan_memory(outs),
                         "offsets": lambda: plan_offsets(outs)}, reps)
        fits.setdefault(family, []).append((len(order), t))
        s = t["sort"]
        row(f"{family:<10}{len(order):>9}{s * 1e3:10.1f}{t['order'] * 1e3:10.1f}"
            f"{t['order'] / s:7.2f}{t['plan'] * 1e3:12.1f}{t['plan'] / s:7.2f}"
            f"{t['offsets'] * 1e3:13.1f}{t['offsets'] / s:7.2f}")
        del outs, order, deps
        gc.collect()
    row("\n   growth exponent (slope of log time against log nodes, per family)")
    row(f"{'graph':<10}{'sort':>10}{'order':>10}{'plan_memory':>12}{'plan_offsets':>13}")
    for family, points in fits.items():
        if len(points) < 2:
            continue
        x = np.log([n for n, _ in points])
        slope = {k: np.polyfit(x, np.log([t[k] for _, t in points]), 1)[0]
                 for k in ("sort", "order", "plan", "offsets")}
        row(f"{family:<10}{slope['sort']:10.2f}{slope['order']:10.2f}{slope['plan']:12.2f}"
            f"{slope['offsets']:13.2f}")


def table_parts(nodes: int = 10**4) -> None:
    """Where the default planners' time goes, each part timed alone on the same graph, as sorts."""
    from memlab.memory import order as mo
    from memlab.memory.liveness import IndexedGraph, Liveness
    from memlab.memory.offsets import _blocks, _greedy_by_size
    from memlab.memory.order import plan_liveness
    row(f"\n1b. The parts of the default planners on training graphs of about {nodes:,} nodes, in sorts")
    row("   (each part alone, CPU time, interleaved, best of 7; the planning pass is plan_memory less")
    row("   memory_order; greedy by size is plan_offsets' placement of its blocks)")
    parts = ("indexed graph", "reverse dfs", "autograd", "greedy", "4 peaks", "memory_order",
             "planning pass", "plan_memory", "blocks", "greedy by size", "plan_offsets")
    row(f"{'graph':<8}" + "".join(f"{p:>15}" for p in parts))
    for family in ("mlp", "resnet", "gpt"):
        outs = training_graph(family, nodes)
        deps = {n: n.inputs for n in ml.topo_order(outs)}
        g = IndexedGraph(outs)
        orders = [list(range(len(g))), mo._postorder(g, g.outs[::-1]), mo._autograd(g), mo._greedy(g)]
        live = plan_liveness(outs)
        first, last, size, _, _ = _blocks(live, True, 64)
        t = interleaved({"sort": lambda: list(TopologicalSorter(deps).static_order()),
                         "indexed graph": lambda: IndexedGraph(outs),
                         "reverse dfs": lambda: mo._postorder(g, g.outs[::-1]),
                         "autograd": lambda: mo._autograd(g),
                         "greedy": lambda: mo._greedy(g),
                         "4 peaks": lambda: [g.peak(o) for o in orders],
                         "memory_order": lambda: ml.memory_order(outs),
                         "plan_memory": lambda: plan_memory(outs),
                         "blocks": lambda: _blocks(Liveness(g, orders[0]), True, 64),
                         "greedy by size": lambda: _greedy_by_size(first, last, size),
                         "plan_offsets": lambda: plan_offsets(outs)}, 7)
        t["planning pass"] = t["plan_memory"] - t["memory_order"]
        row(f"{family:<8}" + "".join(f"{t[p] / t['sort']:15.2f}" for p in parts))


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
    args = sys.argv[1:]
    if "parts" not in args:
        table_speed(big=() if "quick" in args else ("mlp", "resnet", "gpt") if "all" in args
                    else ("mlp",))
    table_parts()
    if "speed" not in args and "parts" not in args:
        table_memory()
        table_executor()
    row(f"\ntotal {time.perf_counter() - t0:.0f} s")

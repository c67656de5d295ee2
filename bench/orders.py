"""Benchmark of the memory-aware execution order (the scheduling slides, part 1).

Prints four tables:

1. the peak of live bytes of each method of ``memory_order`` over the exact minimum
   (``method="exact"``), on random op graphs of 8-14 ops and on small training graphs;
2. the peak of each method against depth-first on the zoo's training steps, with the offset
   planner's arena under depth-first and under the default order;
3. the issue's example: a 36-layer MLP training step, store all against sqrt(N) checkpointing;
4. the time of ``memory_order`` (default method) and of ``plan_memory`` (default order and
   ``order="dfs"``) against a graphlib topological sort, from 1e3 to 1e5 nodes.

Aims: the default within 5% of the exact minimum on the small graphs (mean); never above
depth-first; at most 3x a graphlib sort at 1e5 nodes. Run: ``python bench/orders.py`` (a few
minutes).
"""
from __future__ import annotations

import random
import sys
import time
from graphlib import TopologicalSorter
from pathlib import Path

import memlab as ml
from memlab import checkpoint as ck
from memlab.memory.order import memory_order, order_peak
from memlab.models import (alexnet, conv_resnet, googlenet, lstm, mlp, mlp2, resnet, training_outputs,
                           vgg)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _progress import row, sweep  # noqa: E402
from planning import best_of, model_graphs, random_graph  # noqa: E402

METHODS = ("best", "greedy", "autograd", "reverse_dfs", "dfs")


def say(line: str = "") -> None:
    row(line)


def small_random(ops: int, seed: int) -> list[ml.Node]:
    """A random op graph of ``ops`` ops on (8, w) values of varied widths: matmuls that change the
    width, elementwise ops, sums of two values of the same width; outputs: the unread values."""
    rng = random.Random(seed)
    values = [ml.placeholder(f"x{i}", (8, rng.choice((4, 8, 16, 32)))) for i in range(2)]
    for k in range(ops):
        a = rng.choice(values)
        same = [v for v in values if v.shape == a.shape and v is not a]
        r = rng.random()
        if r < 0.3 and same:
            new = ml.add(a, rng.choice(same))
        elif r < 0.65:
            w = ml.placeholder(f"w{k}", (a.shape[1], rng.choice((4, 8, 16, 32))))
            new = ml.matmul(a, w)
        else:
            new = ml.tanh(a) if rng.random() < 0.5 else ml.sigmoid(a)
        values.append(new)
    read = {x for v in values for x in v.inputs}
    return [v for v in values if v.op.computes and v not in read]


def small_training() -> list[tuple[str, list[ml.Node]]]:
    """Training steps small enough for the exact search."""
    out = [("mlp2 (p.28)", mlp2()["outputs"])]
    for depth in (2, 3, 4):
        out.append((f"mlp-{depth} sigmoid", mlp(depth, batch=256, n_in=16, hidden=16, n_out=4)["outputs"]))
        out.append((f"mlp-{depth} relu", mlp(depth, batch=64, n_in=32, hidden=32, n_out=4,
                                             act="relu")["outputs"]))
    for blocks in (1, 2):
        out.append((f"conv-resnet-{blocks}", training_outputs(conv_resnet(blocks, batch=4, length=16))))
    return out


def table_exact() -> None:
    say("\n1. Peak of live bytes over the exact minimum (method='exact')")
    say(f"{'graphs':<24}{'n':>4}" + "".join(f"{m:>12}" for m in METHODS) + f"{'exact s':>9}")
    groups: list[tuple[str, list[list[ml.Node]]]] = []
    for lo, hi in ((8, 10), (11, 12), (13, 14)):
        graphs = [small_random(lo + s % (hi - lo + 1), s) for s in range(30)]
        groups.append((f"random {lo}-{hi} ops", graphs))
    allr: dict[str, list[float]] = {m: [] for m in METHODS}
    for name, graphs in sweep(groups, "random graphs"):
        ratios: dict[str, list[float]] = {m: [] for m in METHODS}
        t = 0.0
        for outs in graphs:
            t0 = time.perf_counter()
            least = order_peak(outs, memory_order(outs, "exact", max_ops=40))
            t += time.perf_counter() - t0
            for m in METHODS:
                ratios[m].append(order_peak(outs, m) / least)
                allr[m].append(ratios[m][-1])
        say(f"{name:<24}{len(graphs):>4}" + "".join(f"{sum(r) / len(r):12.3f}" for r in ratios.values())
            + f"{t:9.2f}")
    for name, outs in sweep(small_training(), "training graphs"):
        t0 = time.perf_counter()
        least = order_peak(outs, memory_order(outs, "exact", max_ops=60))
        t = time.perf_counter() - t0
        row = {m: order_peak(outs, m) / least for m in METHODS}
        for m in METHODS:
            allr[m].append(row[m])
        say(f"{name:<24}{1:>4}" + "".join(f"{row[m]:12.3f}" for m in METHODS) + f"{t:9.2f}")
    n = len(allr["best"])
    say(f"{'mean (all)':<24}{n:>4}" + "".join(f"{sum(r) / n:12.3f}" for r in allr.values()))
    say(f"{'worst (all)':<24}{n:>4}" + "".join(f"{max(r):12.3f}" for r in allr.values()))


def zoo() -> list[tuple[str, list[ml.Node]]]:
    return [("mlp-36", training_outputs(mlp(36, batch=256, n_in=16, hidden=16, n_out=4))),
            ("mlp-128", training_outputs(mlp(128, batch=256, n_in=16, hidden=16, n_out=4))),
            ("mlp-50 b64 h256", training_outputs(mlp(50, batch=64, n_in=256, hidden=256))),
            ("conv-resnet-8", training_outputs(conv_resnet(8))),
            ("alexnet b64", training_outputs(alexnet(64))),
            ("vgg16 b64", training_outputs(vgg(64))),
            ("googlenet b64", training_outputs(googlenet(64))),
            ("resnet-152 b32", training_outputs(resnet(152, 32))),
            ("lstm-40 b64 h256", training_outputs(lstm(40, 64, 256))),
            ("resnet-152 (data) b32", training_outputs(resnet(152, 32), wrt="data"))]


def table_zoo() -> None:
    say("\n2. Training steps: peak of live bytes of each method / depth-first; offset-planner arena (MB)")
    say(f"{'graph':<22}{'nodes':>7}{'dfs MB':>9}" + "".join(f"{m:>12}" for m in METHODS[:-1])
        + f"{'arena dfs':>11}{'arena best':>11}{'ratio':>7}")
    for name, outs in sweep(zoo(), "zoo"):
        dfs = order_peak(outs, "dfs")
        row = [order_peak(outs, m) / dfs for m in METHODS[:-1]]
        a_dfs = ml.plan_offsets(outs, order="dfs").total_bytes
        a_best = ml.plan_offsets(outs).total_bytes
        say(f"{name:<22}{len(ml.topo_order(outs)):>7}{dfs / 1e6:9.2f}" + "".join(f"{r:12.3f}" for r in row)
            + f"{a_dfs / 1e6:11.2f}{a_best / 1e6:11.2f}{a_best / a_dfs:7.3f}")


def table_issue() -> None:
    say("\n3. Issue 23's example: 36-layer MLP training step, plan_offsets total bytes (MB)")
    outs = training_outputs(mlp(36, batch=256, n_in=16, hidden=16, n_out=4))
    say(f"{'order':<10}{'store all':>11}{'sqrt(N)':>10}{'ratio':>8}{'memonger':>10}{'ratio':>8}")
    for order in ("dfs", None):
        # the kept sets as the library picks them, planned in the order named
        keep_sqrt, keep_mem = ck.sqrt_checkpoints(outs), ck.memonger(outs)
        full = ml.plan_offsets(outs, order=order).total_bytes
        sq = ml.plan_offsets(ck.recompute_graph(outs, keep_sqrt), order=order).total_bytes
        mem = ml.plan_offsets(ck.recompute_graph(outs, keep_mem), order=order).total_bytes
        say(f"{order or 'default':<10}{full / 1e6:11.3f}{sq / 1e6:10.3f}{sq / full:8.3f}"
            f"{mem / 1e6:10.3f}{mem / full:8.3f}")


def table_speed() -> None:
    say("\n4. memory_order (default) and plan_memory against a graphlib sort (ms, best of 3)")
    say(f"{'graph':<20}{'nodes':>8}{'sort':>9}{'order':>9}{'ratio':>7}{'plan':>9}{'ratio':>7}"
        f"{'plan dfs':>10}{'ratio':>7}")
    graphs = [(f"random-{n}", random_graph(n)) for n in (1000, 10000, 100000)] + model_graphs()
    for name, outs in sweep(graphs, "speed"):
        order = ml.topo_order(outs)
        deps = {n: n.inputs for n in order}
        t_sort = best_of(lambda: list(TopologicalSorter(deps).static_order()), 3)
        t_order = best_of(lambda: memory_order(outs), 3)
        t_plan = best_of(lambda: ml.plan_memory(outs), 3)
        t_dfs = best_of(lambda: ml.plan_memory(outs, order="dfs"), 3)
        say(f"{name:<20}{len(order):>8}{t_sort * 1e3:9.1f}{t_order * 1e3:9.1f}{t_order / t_sort:7.2f}"
            f"{t_plan * 1e3:9.1f}{t_plan / t_sort:7.2f}{t_dfs * 1e3:10.1f}{t_dfs / t_sort:7.2f}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    sys.setrecursionlimit(10000)
    table_exact()
    table_zoo()
    table_issue()
    table_speed()
    say(f"\ntotal {time.perf_counter() - t0:.0f} s")

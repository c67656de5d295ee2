"""Checkpointing on op graphs: bytes and time of every strategy on ResNet and LSTM graphs
against the un-checkpointed plan, plan_offsets against a graphlib sort from 1e3 to 1e5 nodes, and
recompute_graph before and after its near-linear cycle check, and every strategy
on full training steps beside Chen et al.'s figures (`python checkpoint_graphs.py
training` prints that table alone).
Prints tables; run with `make bench`."""
from __future__ import annotations

import sys
import time
from graphlib import TopologicalSorter
from pathlib import Path

from _progress import row, sweep

import memlab as ml
from memlab import checkpoint as ck
from memlab.models import conv_resnet, lstm, mlp, overhead, resnet, training_outputs
from memlab.models.studies import CHECKPOINTS, CHEN_FIGURES, checkpoint_table, training_steps


def best_of(f, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def strategies(outs):
    yield "keep all", set(ck.forward_nodes_of(outs))
    yield "every 4", ck.every_k(outs, 4)
    yield "sqrt(N)", ck.sqrt_checkpoints(outs)
    yield "memonger", ck.memonger(outs)


def main() -> None:
    row("1. Planned bytes (tags, in-place + sharing) of each strategy; seconds to choose + rewrite")
    row(f"{'graph':<16}{'nodes':>7} {'strategy':<10}{'GB':>8}{'vs all':>8}{'recomp':>8}{'s':>7}")
    models = (("resnet-200", lambda: resnet(200, 32)), ("resnet-1000", lambda: resnet(1000, 32)),
              ("lstm-100", lambda: lstm(100)), ("lstm-400", lambda: lstm(400)))
    for name, build in sweep(models, "models"):
        outs = training_outputs(build(), wrt="data")
        n = len(ml.topo_order(outs))
        base = None
        for label, keep in sweep(strategies(outs), name):
            t = time.perf_counter()
            new = ck.recompute_graph(outs, keep)
            gb = ml.plan_memory(new, trace=False).total_bytes / 1e9
            secs = time.perf_counter() - t
            base = base or gb
            row(f"{name:<16}{n:>7} {label:<10}{gb:8.2f}{gb / base:8.2f}"
                f"{len(ck.recomputed_nodes(new)):>8}{secs:7.2f}")

    row("\n2. Time on graphs that run (arena executor, median of 3), sqrt(N) checkpoints; counted:"
        " recomputed ops over the step's ops, the measured time's denominator")
    row(f"{'graph':<24}{'MB':>7}{'-> MB':>7}{'ms':>8}{'-> ms':>8}{'counted':>9}{'measured':>9}")
    for name, m in sweep((("MLP 64 x 128", mlp(depth=64, batch=64, n_in=128, hidden=128, n_out=10)),
                          ("1-D ResNet 32 blocks", conv_resnet(blocks=32))), "graphs that run"):
        outs = [m["loss"], *ml.gradients(m["loss"], [m["x"]])]
        r = overhead(outs, m["make_feed"](0), ck.sqrt_checkpoints(outs))
        row(f"{name:<24}{r['baseline MB']:7.2f}{r['sublinear MB']:7.2f}{r['baseline ms']:8.1f}"
            f"{r['sublinear ms']:8.1f}{r['counted extra']:9.0%}{r['measured extra']:9.0%}")

    row("\n3. plan_offsets against a graphlib topological sort (best of 3)")
    row(f"{'graph':<22}{'nodes':>8}{'sort ms':>9}{'offsets ms':>11}{'ratio':>7}{'vs bound':>9}")
    graphs = [(f"mlp-{d} train", mlp(depth=d, batch=8, n_in=8, hidden=8, n_out=4)["outputs"])
              for d in (100, 1000, 10_000)]
    graphs += [("lstm-1600 train", training_outputs(lstm(1600), "data"))]
    m = lstm(1600)
    outs = training_outputs(m, "data")
    graphs += [("lstm-1600 sqrt(N)", ck.recompute_graph(outs, ck.sqrt_checkpoints(outs)))]
    for name, outs in sweep(graphs, "offsets"):
        order = ml.topo_order(outs)
        deps = {n: n.inputs for n in order}
        t_sort = best_of(lambda: list(TopologicalSorter(deps).static_order()))
        t_off = best_of(lambda: ml.plan_offsets(outs), 1)
        plan = ml.plan_offsets(outs)
        bound = ml.live_bytes_lower_bound(plan)
        row(f"{name:<22}{len(order):>8}{t_sort * 1e3:9.1f}{t_off * 1e3:11.1f}"
            f"{t_off / t_sort:7.2f}{plan.total_bytes / bound:9.4f}")


def milp_times() -> None:
    row("\n4. Checkmate's MILP: solve time against graph size (MLP training graphs, budget halfway")
    row("   between the minimum and keeping everything)")
    row(f"{'graph':<12}{'nodes':>6}{'variables':>10}{'budget':>8}{'recomp':>8}{'s':>8}")
    from memlab.checkpoint.remat_milp import build_problem, minimum_budget, optimal_rematerialization
    for depth in sweep((1, 2, 3, 4, 5, 6), "MILP"):
        m = mlp(depth=depth, batch=2, n_in=3, hidden=3, n_out=2)
        outs = [m["loss"], *ml.gradients(m["loss"], [m["x"]])]
        computed = [n for n in ml.topo_order(outs) if n.op.computes]
        low, high = minimum_budget(outs), sum(n.nbytes for n in computed)
        budget = (low + high) // 2
        nvars = len(build_problem(outs, budget, lambda v: 1.0, None).c)
        r = optimal_rematerialization(outs, budget)
        row(f"{'mlp-' + str(depth):<12}{len(computed):>6}{nvars:>10}{budget:>8}"
            f"{r.recomputations:>8}{r.seconds:8.2f}")


def rewrite_times() -> None:
    row("\n5. recompute_graph, seconds (training steps, gradients of every weight): before = the")
    row("   quadratic cycle check, kept in tests/checkpoint/_reference_rewrite.py; after = today's")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "checkpoint"))
    from _reference_rewrite import recompute_graph as before
    row(f"{'graph':<14}{'nodes':>7} {'strategy':<10}{'copies':>8}{'before s':>10}{'after s':>9}{'x':>7}")
    for name, model in sweep((("lstm-400", lstm(400)), ("resnet-200", resnet(200, 32))), "rewrites"):
        outs = training_outputs(model)
        n = len(ml.topo_order(outs))
        for label, keep in (("every 4", ck.every_k(outs, 4)), ("every 16", ck.every_k(outs, 16)),
                            ("3 levels", ck.recursive_checkpoints(outs, 3))):
            t_before = best_of(lambda: before(outs, keep), 1)
            t_after = best_of(lambda: ck.recompute_graph(outs, keep))
            copies = len(ck.recomputed_nodes(ck.recompute_graph(outs, keep)))
            row(f"{name:<14}{n:>7} {label:<10}{copies:>8}{t_before:10.2f}{t_after:9.2f}"
                f"{t_before / t_after:7.0f}")


def training_step_table() -> None:
    row("\n6. Checkpointing on full training steps (loss + every parameter gradient), each")
    row("   against store all under the same memory-aware order: arena bytes, feature maps (arena less")
    row("   the returned gradients), counted overhead (recomputed / forward ops), measured overhead")
    row("   (arena executor, best of 3; graphs that run). Chen et al. 2016: ResNet-1000 48 GB -> 7 GB "
        f"({CHEN_FIGURES['resnet-1000 ratio']:.2f}x),")
    row(f"   {CHEN_FIGURES['chen extra time']:.0%} extra time; p.33: one additional forward pass "
        f"({CHEN_FIGURES['p.33 overhead']:.0%} overhead).")
    row(f"{'model':<18}{'strategy':<11}{'bytes':>7}{'fmaps':>7}{'counted':>9}{'measured':>9}{'s':>7}")
    for model, step in sweep(training_steps("full").items(), "models"):
        for name in CHECKPOINTS:
            t = time.perf_counter()
            r = checkpoint_table({model: step}, (name,))[0]
            measured = "-" if r["measured"] is None else f"{r['measured']:.0%}"
            row(f"{model:<18}{name:<11}{r['bytes']:7.3f}{r['feature maps']:7.3f}{r['counted']:9.0%}"
                f"{measured:>9}{time.perf_counter() - t:7.1f}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    if sys.argv[1:] == ["rewrite"]:
        rewrite_times()
        sys.exit()
    if sys.argv[1:] == ["training"]:
        training_step_table()
        sys.exit()
    main()
    milp_times()
    rewrite_times()
    training_step_table()
    row(f"\ntotal {time.perf_counter() - t0:.0f} s")

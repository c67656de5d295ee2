"""Checkmate at scale: the exact integer program against its relaxation with
two-phase rounding, and memonger's rewrite, at memonger's own peak (the budget where memonger's plan
fits) and at a tighter budget, in the order memonger's graph first computes each node. The rounding
starts from memonger's schedule too (``incumbent``); "no start" is the rounding without it.
Prints one row per (graph, budget) as it goes; run with `python bench/checkmate.py`."""
from __future__ import annotations

import time

from _progress import row, sweep

import memlab as ml
from memlab import checkpoint as ck
from memlab.checkpoint.remat_lp import rounded_rematerialization
from memlab.checkpoint.remat_milp import MAX_NODES, minimum_budget, optimal_rematerialization
from memlab.errors import BudgetError, PlanError
from memlab.models import mlp


def first_order(outs, plan):
    """The original nodes in the order a plan of the rewritten graph first computes them (a
    recomputed copy may run before its original in the memory-aware order)."""
    by_name = {n.name: n for n in ml.topo_order(outs)}
    seen, order = set(), []
    for n in plan.order:
        if not n.op.computes:
            continue
        original = n.attrs["of"] if n.op is ck.rewrite.RECOMPUTE else n
        if original not in seen:
            seen.add(original)
            order.append(by_name[original.name])
    return order


def graphs():
    for depth, wrt in ((2, "params"), (4, "x"), (6, "params"), (10, "x"), (16, "x"), (167, "x")):
        m = mlp(depth=depth, batch=2, n_in=3, hidden=3, n_out=2)
        outs = m["outputs"] if wrt == "params" else [m["loss"], *ml.gradients(m["loss"], [m["x"]])]
        yield f"mlp-{depth} d{wrt}", outs


def main() -> None:
    row(f"{'graph':<16}{'nodes':>6}{'budget':>8} {'MILP':>6}{'s':>7} {'opt':<4}"
        f"{'rounded':>8}{'s':>7}{'LP bound':>9} {'memonger':>9} {'no start':>9}")
    for name, outs in sweep(list(graphs()), "graphs"):
        new = ck.recompute_graph(outs, ck.memonger(outs))
        plan = ml.plan_offsets(new, inplace=False)
        peak = ml.live_bytes_lower_bound(plan)
        order = first_order(outs, plan)
        n = len(order)
        memonger = len([v for v in ml.topo_order(new) if v.op.computes])
        low = minimum_budget(outs, order)
        for budget, mem in ((peak, memonger), ((low + peak) // 2, None)):
            milp = "-", "", ""
            if n <= 100:
                try:
                    r = optimal_rematerialization(outs, budget, order=order, time_limit=60)
                    milp = f"{r.cost:.0f}", f"{r.seconds:.1f}", "yes" if r.optimal else "no"
                except BudgetError:
                    milp = "none", "", ""
                except PlanError:  # no schedule found in time
                    milp = "?", ">60", "no"
            try:
                t = time.perf_counter()
                r = rounded_rematerialization(outs, budget, order=order, incumbent=new)
                lp = f"{r.cost:.0f}", f"{time.perf_counter() - t:.1f}", f"{r.bound:.1f}"
            except BudgetError:
                lp = "none", "", ""
            try:
                cold = f"{rounded_rematerialization(outs, budget, order=order).cost:.0f}"
            except BudgetError:
                cold = "none"
            row(f"{name:<16}{n:>6}{budget:>8} {milp[0]:>6}{milp[1]:>7} {milp[2]:<4}"
                f"{lp[0]:>8}{lp[1]:>7}{lp[2]:>9} {mem if mem else '(over)':>9} {cold:>9}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    row(f"\ntotal {time.perf_counter() - t0:.0f} s (MILP limit 60 s; MAX_NODES = {MAX_NODES})")

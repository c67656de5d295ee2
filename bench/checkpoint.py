"""Checkpointing on chains: schedule-building time, recomputations against the optimum,
and the heterogeneous dynamic program's time. Prints tables; run with `make bench`."""
from __future__ import annotations

import math
import time

import numpy as np
from _progress import row, sweep

from memlab import checkpoint as ck
from memlab.checkpoint.hetero import HeteroPlanner, hetero_chain


def best_of(f, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    row("1. Time to build a schedule (best of 3; includes replaying it with simulate)")
    row(f"{'l':>8} {'c/M':>5} {'revolve s':>10} {'advances':>10} {'optimal s':>10} {'forwards':>10}")
    for l, c in sweep([(l, c) for l in (100, 1000, 10_000, 100_000) for c in (10, 50)], "revolve"):
        tr, r = best_of(lambda: ck.revolve(l, c))
        if l <= 10_000:
            to, o = best_of(lambda: ck.optimal(l, c))
            opt = f"{to:10.3f} {o.forwards:>10}"
        else:
            opt = f"{'(skipped)':>10} {'':>10}"
        row(f"{l:>8} {c:>5} {tr:10.3f} {r.advances:>10} {opt}")

    row("\n2. Recomputations of each strategy relative to the optimum at the same peak")
    row(f"{'l':>6} {'strategy':<22} {'peak':>5} {'recomp':>8} {'optimum':>8} {'ratio':>7}")
    for l in sweep((10, 100, 1000), "strategies"):
        strategies = [ck.recompute_all(l), ck.sqrt_schedule(l), ck.recursive(l, 2),
                      ck.recursive(l, 4), ck.revolve(l, max(1, int(math.log2(l)))),
                      ck.periodic(l, max(1, l // 4))]
        for s in strategies:
            best = ck.optimal(l, s.peak).recomputations
            ratio = s.recomputations / best if best else float("nan") if s.recomputations == 0 \
                else float("inf")
            row(f"{l:>6} {s.name[:22]:<22} {s.peak:>5} {s.recomputations:>8} {best:>8} {ratio:>7.2f}")

    row("\n3. Optimal recomputations against the budget (l = 1000)")
    row(" ".join(f"M={m}:{ck.optimal(1000, m).recomputations}" for m in (3, 4, 6, 10, 20, 45)))

    row("\n4. Heterogeneous dynamic program: time against l (all budgets at once)")
    row(f"{'l':>5} {'budgets':>8} {'seconds':>8}")
    rng = np.random.default_rng(0)
    for l in sweep((10, 20, 40, 60), "hetero"):
        sizes = [int(s) for s in rng.integers(1, 5, l + 1)]
        chain = hetero_chain(sizes, [float(c) for c in rng.integers(1, 4, l)])
        M = sum(sizes) + max(sizes)
        t, _ = best_of(lambda: HeteroPlanner(chain, M), repeat=1)
        row(f"{l:>5} {M + 1:>8} {t:8.3f}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    row(f"\ntotal {time.perf_counter() - t0:.0f} s")

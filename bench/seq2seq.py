"""Benchmark of OpenNMT's sharing techniques on memlab's sequence-to-sequence model (OpenNMT's notes).

Prints three tables for one training step (10-word source, LSTMs of 64 units, batch 32, a 1000-word
vocabulary):

1. memory (MB, parameters included) against target length, technique by technique, with the
   lecture's general planners and the live-bytes lower bound;
2. the longest target that fits 32 MB and 128 MB under each technique;
3. the time to build the step's graph and to plan it with each rule, at target 200.

Run: ``.venv/bin/python bench/seq2seq.py`` (two to three minutes: table 2 builds long steps).
"""
from __future__ import annotations

import time

from _progress import row, sweep

import memlab as ml
from memlab.memory.sharing import plan_sharing
from memlab.models import opennmt

SIZES = dict(hidden=64, batch=32, vocab=1000)
LENGTHS = [10, 25, 50, 100, 200]
MB = 2 ** 20


def memory_table() -> None:
    names = [*opennmt.TECHNIQUES, opennmt.LUA_V07[0]]
    row("| technique | " + " | ".join(f"T={n}" for n in LENGTHS) + " |")
    row("| --- |" + " ---: |" * len(LENGTHS))
    bound = None
    for name in sweep(names, "techniques"):
        rows = [opennmt.step_bytes(n, name, **SIZES) for n in LENGTHS]
        row(f"| {name} | " + " | ".join(f"{r['total'] / MB:.2f}" for r in rows) + " |")
        if name == "+ horizontal sharing":
            bound = rows
    row("| lower bound (live bytes) | "
        + " | ".join(f"{r['lower_bound'] / MB:.2f}" for r in bound) + " |")


def budget_table() -> None:
    row("\n| technique | 32 MB | 128 MB |")
    row("| --- | ---: | ---: |")
    for name in sweep([*opennmt.TECHNIQUES, opennmt.LUA_V07[0]], "budgets"):
        fits = [opennmt.longest_fitting(b * MB, name, limit=1000, **SIZES) for b in (32, 128)]
        row(f"| {name} | {fits[0]} | {fits[1]} |")


def timing_table() -> None:
    t = time.perf_counter()
    m = ml.models.seq2seq(10, 200, **SIZES)
    outs = [m.loss, *m.grads()]
    order = m.order(outs)
    build = time.perf_counter() - t
    row(f"\ntarget 200: {len(order)} nodes; graph, gradients and order built in "
        f"{build * 1e3:.0f} ms")
    row("| planner | ms |")
    row("| --- | ---: |")
    for label, fn in sweep([
            ("no sharing", lambda: plan_sharing(outs, order)),
            ("vertical", lambda: plan_sharing(outs, order, vertical=True)),
            ("horizontal", lambda: plan_sharing(outs, order, horizontal=True)),
            ("vertical + horizontal", lambda: plan_sharing(outs, order, local=True,
                                                           vertical=True, horizontal=True)),
            ("general, tags", lambda: ml.plan_memory(outs, order=order, trace=False)),
            ("general, offsets", lambda: ml.plan_offsets(outs, order=order))], "planners"):
        best = min(_time(fn) for _ in range(3))
        row(f"| {label} | {best * 1e3:.0f} |")


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    memory_table()
    budget_table()
    timing_table()

"""Benchmark of dynamic allocators on real training steps (beyond lecture 7's p.14-16).

Prints four tables:

1. the allocation trace of one training step (the executor's rule, default memory-aware order)
   of lesson 05's MLP, one GPT-2-small layer, ONNX ResNet-50 at batch 32 and Inception v1 at batch
   64, replayed through every allocator: the live-bytes bound and the static offset plan (both
   without in-place), lecture 7's simple pool, TensorFlow's BFC, PyTorch's caching allocator
   without and with expandable segments: peak reserved, peak allocated, peak inactive split, MiB;
2. the order effect: the same step in the memory-aware and the depth-first order;
3. two steps of different batch sizes one after the other on one allocator, large batch first
   against small batch first (the "capture the largest batch first" advice of CUDA-graph serving);
4. the speed of a replay of 10^6 events, in events per second, as a ratio to lecture 7's simple
   pool replaying the same events in the same run (the target: at least 200,000 events/s), best
   of :data:`ROUNDS` rounds that each run every allocator in turn, with the load average.

Run: ``.venv/bin/python bench/allocators.py`` (about two minutes); ``bench/allocators.py speed``
prints table 4 only.
"""
from __future__ import annotations

import gc
import os
import sys
import time

import numpy as np
from _progress import row, sweep

import memlab as ml
from memlab.memory import BFCAllocator, CachingAllocator, MemoryPool
from memlab.memory.replay import allocation_trace, allocators, peaks, replay, replay_table

MiB = 1 << 20
ROUNDS = 3     #: rounds of table 4, each replaying the events through every allocator


def gpt_layer(batch: int = 4):
    m = ml.models.transformer(layers=1, seq=1024, hidden=768, heads=12, batch=batch,
                              vocab=50257, dropout=0.1, dtype=np.float16)
    return m.training_outputs()


def onnx(name: str, batch: int):
    return ml.models.training_outputs(ml.models.from_onnx(name, batch=batch))


STEPS = {
    "MLP (lesson 05)": lambda b=64: ml.models.mlp2(batch=b)["outputs"],
    "GPT-2 layer": lambda b=4: gpt_layer(b),
    "ResNet-50 b32": lambda b=32: onnx("resnet50", b),
    "Inception v1 b64": lambda b=64: onnx("inception_v1", b),
}
BATCHES = {"MLP (lesson 05)": (64, 48), "GPT-2 layer": (4, 3), "ResNet-50 b32": (32, 24),
           "Inception v1 b64": (64, 48)}


def mib(x: int | None) -> str:
    return "-" if x is None else f"{x / MiB:,.1f}"


def table_1(graphs: dict) -> None:
    print("1. one training step replayed (MiB): reserved / allocated / inactive-split peaks")
    names = ["simple pool", "BFC", "caching", "caching, expandable"]
    row(f"{'step':18s} {'bound':>9s} {'offsets':>9s}"
        + "".join(f" {n:>26s}" for n in names))
    for label in sweep(graphs, "replay"):
        tab = replay_table(graphs[label])
        cells = "".join(
            f" {mib(tab[n]['reserved']):>8s}/{mib(tab[n]['allocated']):>8s}/"
            f"{mib(tab[n]['inactive_split']):>8s}" for n in names)
        row(f"{label:18s} {mib(tab['live-bytes bound']['total']):>9s} "
            f"{mib(tab['offset plan']['total']):>9s}{cells}")


def table_2(graphs: dict) -> None:
    print("\n2. the order effect: reserved peak (MiB) of the same step in two orders")
    row(f"{'step':18s} {'order':12s} {'bound':>9s} {'BFC':>9s} {'caching':>9s} {'expandable':>10s}")
    for label in sweep(graphs, "orders"):
        for order in (None, "dfs"):
            tab = replay_table(graphs[label], order)
            row(f"{label:18s} {order or 'memory-aware':12s} "
                f"{mib(tab['live-bytes bound']['total']):>9s} {mib(tab['BFC']['reserved']):>9s} "
                f"{mib(tab['caching']['reserved']):>9s} "
                f"{mib(tab['caching, expandable']['reserved']):>10s}")


def table_3() -> None:
    print("\n3. two batch sizes one after the other on one allocator: reserved peak (MiB)")
    row(f"{'step':18s} {'batches':>9s} {'first':>7s} {'BFC':>9s} {'caching':>9s} "
        f"{'expandable':>10s} {'large alone':>12s}")
    for label in sweep(STEPS, "batches"):
        big, small = BATCHES[label]
        traces = {b: allocation_trace(STEPS[label](b), release_outputs=True) for b in (big, small)}
        alone = peaks(replay(traces[big], CachingAllocator(trace=False)))["reserved"]
        for first, second in ((big, small), (small, big)):
            joined = traces[first] + [(a, k + 10**7, n, o) for a, k, n, o in traces[second]]
            got = {name: peaks(replay(joined, alloc))["reserved"]
                   for name, alloc in allocators().items()}
            row(f"{label:18s} {big:>4d},{small:<4d} {first:>7d} {mib(got['BFC']):>9s} "
                f"{mib(got['caching']):>9s} {mib(got['caching, expandable']):>10s} "
                f"{mib(alone):>12s}")


def table_4(graphs: dict) -> None:
    print("\n4. replay speed: 10^6 events (GPT-2 layer steps, outputs freed after each)")
    one = allocation_trace(graphs["GPT-2 layer"], release_outputs=True)
    events, k = [], 0
    while len(events) < 10**6:
        events += [(a, key + k, n, o) for a, key, n, o in one]
        k += len(one)
    events = events[:10**6]
    live = {}
    for a, key, _, _ in events:           # drop the frees of blocks cut off at the end
        live[key] = a
    events = [e for e in events if e[0] or e[1] in live]
    kinds = {"simple pool": lambda: MemoryPool(trace=False),
             "BFC": lambda: BFCAllocator(),
             "caching": lambda: CachingAllocator(),
             "caching, expandable": lambda: CachingAllocator(expandable_segments=True),
             "caching, no trace": lambda: CachingAllocator(trace=False)}
    best = {name: float("inf") for name in kinds}
    load = os.getloadavg()[0]
    for _ in sweep(range(ROUNDS), "speed rounds"):  # interleaved: a slow moment of this shared
        for name, make in kinds.items():          # machine falls on every allocator, not on one
            alloc = make()
            gc.collect()
            gc.disable()        # paused while timing, as in bench/planning.py: a collection of
            try:                # the million tuples of the trace would land on one side
                t = time.perf_counter()
                replay(events, alloc)
                best[name] = min(best[name], time.perf_counter() - t)
            finally:
                gc.enable()
    rates = {name: len(events) / t for name, t in best.items()}
    print(f"   (best of {ROUNDS} interleaved rounds; load average {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end)")
    row(f"{'allocator':22s} {'events/s':>12s} {'/ simple pool':>14s}")
    for name, r in rates.items():
        row(f"{name:22s} {r:12,.0f} {r / rates['simple pool']:14.2f}")
    print(f"({len(events):,} events; target: at least 200,000 events/s)")


def main() -> None:
    if sys.argv[1:] == ["speed"]:
        table_4({"GPT-2 layer": STEPS["GPT-2 layer"]()})
        return
    graphs = {label: make() for label, make in STEPS.items()}
    table_1(graphs)
    table_2(graphs)
    table_3()
    table_4(graphs)


if __name__ == "__main__":
    main()

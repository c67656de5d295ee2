"""CachingAllocator (PyTorch's) and BFCAllocator (TensorFlow's) on random traces, checked against
an independent recount from their snapshots (memlab.memory.checksnapshot)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memlab as ml
from memlab.memory import BFCAllocator, CachingAllocator
from memlab.memory.checksnapshot import check_snapshot, snapshot_totals
from tests.strategies import alloc_traces

MiB = 1 << 20
KINDS = {
    "caching": lambda cap: CachingAllocator(capacity=cap),
    "caching-expandable": lambda cap: CachingAllocator(expandable_segments=True, capacity=cap),
    "caching-max-split": lambda cap: CachingAllocator(capacity=cap, max_split_size=24 * MiB),
    "bfc": lambda cap: BFCAllocator(capacity=cap),
}


def recount_matches(a, live) -> dict:
    """Every invariant of the issue, from the snapshot alone, then against the statistics."""
    snap = a.memory_snapshot()
    check_snapshot(snap)            # no overlap, blocks tile segments, no free neighbours
    t = snapshot_totals(snap)
    s = a.memory_stats()
    assert t["allocated_bytes"] == a.memory_allocated() == s["allocated_bytes.all.current"]
    assert t["allocated_bytes"] == s["active_bytes.all.current"]
    assert t["reserved_bytes"] == a.memory_reserved() == s["reserved_bytes.all.current"]
    assert t["requested_bytes"] == s["requested_bytes.all.current"]
    assert t["segment"] == s["segment.all.current"]
    assert t["allocation"] == s["allocation.all.current"] == len(live)
    assert t["inactive_split_bytes"] == s["inactive_split_bytes.all.current"]
    assert a.memory_allocated() <= a.memory_reserved()
    if a.POOLS:   # the pools add up
        for key in ("allocated_bytes", "reserved_bytes", "segment"):
            assert s[f"{key}.all.current"] == sum(s[f"{key}.{p}.current"] for p in a.POOLS)
    active = {(b["address"], b["size"]) for seg in snap for b in seg["blocks"]
              if b["state"] == "active_allocated"}
    assert active == {(b.address, b.size) for b in live}   # the handles are the active blocks
    for b in live:
        assert b.size >= b.requested and b.size % (512 if a.POOLS else 256) == 0
    return t


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(deadline=None, max_examples=40)
@given(trace=alloc_traces(), cap=st.sampled_from([None, 48 * MiB, 100 * MiB]),
       empty=st.integers(0, 60))
def test_random_traces_keep_every_invariant(kind, trace, cap, empty):
    a, live, peak_alloc, peak_res = KINDS[kind](cap), [], 0, 0
    for i, (op, n) in enumerate(trace):
        if op == "alloc":
            try:
                live.append(a.malloc(n, f"t{i}"))
            except ml.OutOfMemoryError as e:
                assert cap is not None and "reserved but unallocated" in str(e) \
                    or "in regions but free" in str(e)
        elif live:
            a.free(live.pop(n % len(live)))
        if i == empty:
            before = a.memory_snapshot()
            wholly_free = {s["address"] for s in before if len(s["blocks"]) == 1
                           and s["blocks"][0]["state"] == "inactive" and not s["is_expandable"]}
            released = a.empty_cache()
            after = {s["address"]: s for s in a.memory_snapshot()}
            assert not wholly_free & set(after)         # every wholly free segment went back
            kept = [s for s in before if s["address"] not in wholly_free]
            for s in kept:                               # and nothing else (but expandable ends)
                if not s["is_expandable"]:
                    assert after[s["address"]] == s
            assert released == sum(s["total_size"] for s in before) - \
                sum(s["total_size"] for s in after.values())
        t = recount_matches(a, live)
        peak_alloc, peak_res = max(peak_alloc, t["allocated_bytes"]), max(peak_res,
                                                                          t["reserved_bytes"])
        if cap is not None:
            assert a.memory_reserved() <= cap
    assert a.max_memory_allocated() == peak_alloc
    assert a.max_memory_reserved() == peak_res
    for b in list(live):
        a.free(b)
    recount_matches(a, [])
    a.empty_cache()
    assert a.memory_reserved() == 0 and a.memory_snapshot() == []


@settings(deadline=None, max_examples=40)
@given(trace=alloc_traces(), cap=st.sampled_from([None, 64 * MiB]))
def test_trace_replays_to_the_same_counts(trace, cap):
    """The trace alone gives allocated and reserved after every event."""
    a, live = CachingAllocator(capacity=cap), []
    for i, (op, n) in enumerate(trace):
        if op == "alloc":
            try:
                live.append(a.malloc(n))
            except ml.OutOfMemoryError:
                pass
        elif live:
            a.free(live.pop(n % len(live)))
    requested = reserved = 0
    sign = {"alloc": 1, "free_completed": -1}
    for ev in a.trace:
        requested += sign.get(ev["action"], 0) * ev["size"]   # requested bytes, as PyTorch's
        if ev["action"] in ("segment_alloc", "segment_map"):
            reserved += ev["size"]
        elif ev["action"] in ("segment_free", "segment_unmap"):
            reserved -= ev["size"]
        assert ev["reserved"] == reserved and ev["allocated"] >= requested
    assert requested == a.memory_stats()["requested_bytes.all.current"]
    assert (a.trace[-1]["allocated"] if a.trace else 0) == a.memory_allocated()
    assert reserved == a.memory_reserved()

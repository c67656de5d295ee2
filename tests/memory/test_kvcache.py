"""The KV-cache allocators: the paged one never hands out a block twice, frees everything, equals
an independent replay, shares a prefix with copy on write; and the vLLM-shaped measurement."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import memlab as ml
from memlab.memory.kvcache import (ContiguousAllocator, PagedAllocator, PoolAllocator, Request,
                                   request_stream, serve)


def _replay_events(alloc):
    """Blocks handed out and given back, replayed: each handed out only while free."""
    owned = set()
    for kind, rid, block in alloc.events:
        if kind == "alloc":
            assert block not in owned, f"block {block} handed out twice (request {rid})"
            owned.add(block)
        elif kind == "free":
            assert block in owned, f"block {block} freed while free"
            owned.discard(block)
    return owned


@pytest.mark.parametrize("blocks, bs", [(40, 4), (25, 8), (300, 1)])
def test_paged_serving_hands_each_block_once_and_frees_all(blocks, bs):
    stream = request_stream(30, seed=3, prompt=(2, 20), output=(1, 30), per_step=0.5)
    alloc = PagedAllocator(blocks, bs)
    out = serve(stream, alloc)
    assert out["preemptions"] > 0 or blocks == 300                  # tight budgets preempt
    assert _replay_events(alloc) == set()
    assert sorted(alloc.free_list) == list(range(blocks)) and not alloc.tables
    assert out["tokens"] == sum(r.output for r in stream)


@pytest.mark.parametrize("bs", [1, 3, 16])
def test_paged_and_contiguous_equal_an_independent_replay(bs):
    """A budget that never runs out, every request at step 0: at step t request i holds
    prompt + t + 1 tokens while t < output, in ceil(tokens / bs) blocks."""
    stream = request_stream(12, seed=5, prompt=(1, 9), output=(1, 12))
    p = np.array([r.prompt for r in stream])
    o = np.array([r.output for r in stream])
    steps = np.arange(o.max())[:, None]
    live = steps < o
    tokens = np.where(live, p + steps + 1, 0)
    paged = serve(stream, PagedAllocator(10_000, bs, token_bytes=2))
    assert paged["held"] == list((-(-tokens // bs) * bs * 2).sum(axis=1))
    assert paged["used"] == list(tokens.sum(axis=1) * 2)
    assert paged["running"] == list(live.sum(axis=1))
    contiguous = serve(stream, ContiguousAllocator(10**6, 2, 32))
    assert contiguous["held"] == list(live.sum(axis=1) * 32 * 2)
    assert paged["throughput"] == contiguous["throughput"] == o.sum() / o.max()


def test_fork_shares_a_prefix_and_copies_on_write():
    alloc = PagedAllocator(8, 4)
    assert alloc.admit(0, 10)                                        # 3 blocks, last half full
    alloc.fork(0, 1)
    assert alloc.tables[1] == alloc.tables[0] and len(alloc.free_list) == 5
    assert alloc.grow(1, 11)                                         # writes into the shared tail
    assert alloc.tables[1][:2] == alloc.tables[0][:2]
    assert alloc.tables[1][2] != alloc.tables[0][2] and len(alloc.free_list) == 4
    assert alloc.grow(0, 13)                                         # its own tail, then a new one
    assert len(alloc.tables[0]) == 4 and len(alloc.free_list) == 3
    alloc.release(0)
    assert len(alloc.free_list) == 5                                 # the shared two stay
    alloc.release(1)
    assert sorted(alloc.free_list) == list(range(8)) and _replay_events(alloc) == set()


@settings(max_examples=30)
@given(st.lists(st.tuples(st.sampled_from("agfr"), st.integers(0, 5), st.integers(1, 12)),
                max_size=40), st.integers(1, 5))
def test_random_operations_keep_tables_disjoint_unless_forked(ops, bs):
    alloc = PagedAllocator(12, bs)
    length: dict[int, int] = {}
    for op, rid, n in ops:
        other = (rid + 1) % 6
        if op == "a" and rid not in length:
            if alloc.admit(rid, n):
                length[rid] = n
        elif op == "g" and rid in length:
            if alloc.grow(rid, length[rid] + n):
                length[rid] += n
        elif op == "f" and rid in length and other not in length:
            alloc.fork(rid, other)
            length[other] = length[rid]
        elif op == "r" and rid in length:
            alloc.release(rid)
            del length[rid]
        for r, t in length.items():
            assert len(alloc.tables[r]) == -(-t // bs)
        held = [b for r in length for b in alloc.tables[r]]
        counts = np.bincount(held, minlength=12) if held else np.zeros(12, int)
        assert list(counts) == alloc.refcount
        assert set(alloc.free_list) == {b for b in range(12) if counts[b] == 0}


def test_paging_wastes_little_and_reservation_much():
    """vLLM reports 60-80% of KV memory wasted by contiguous reservation, under 4% with paging."""
    stream = request_stream(120, seed=1, prompt=(16, 256), output=(16, 256))
    budget = 16 * 512
    results = {a.name + str(getattr(a, "block_size", "")): serve(stream, a) for a in (
        ContiguousAllocator(budget, 1, 512), PoolAllocator(budget, 1),
        PagedAllocator(budget // 16, 16))}
    assert results["contiguous"]["waste"] > 0.4 and results["paged16"]["waste"] < 0.04
    assert results["paged16"]["max_running"] > 2 * results["contiguous"]["max_running"]
    assert results["paged16"]["throughput"] > results["contiguous"]["throughput"]
    assert results["best-fit pool"]["fragmentation"] > 0


def test_bad_input():
    with pytest.raises(ml.BudgetError, match="block_size"):
        PagedAllocator(10, 0)
    with pytest.raises(ml.BudgetError, match="below one request"):
        ContiguousAllocator(100, 1, 200)
    with pytest.raises(ml.BudgetError, match="below one request"):
        serve([Request(0, 0, 50, 5)], PagedAllocator(2, 4))
    with pytest.raises(ml.BudgetError, match="alone"):
        serve([Request(0, 0, 5, 50)], PagedAllocator(4, 4))
    with pytest.raises(ml.BudgetError, match="stream"):
        serve([], PagedAllocator(4, 4))
    with pytest.raises(ml.MemlabError, match="n"):
        request_stream(0)

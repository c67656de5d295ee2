"""MemoryPool (p.14-16): best fit, rounding, statistics, trace, against a simple model."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memlab as ml
from memlab.memory.pool import MemoryPool, round_size


def test_rounding():
    assert [round_size(n) for n in (0, 1, 512, 513, 1024, 1500)] == [512, 512, 512, 1024, 1024, 1536]


def test_best_fit_and_stats():
    pool = MemoryPool()
    a, b, c = pool.allocate(4000, "a"), pool.allocate(1000, "b"), pool.allocate(2000, "c")
    assert pool.stats.new_blocks == 3 and pool.stats.bytes_reserved == 4096 + 1024 + 2048
    for blk in (a, b, c):
        pool.free(blk)
    d = pool.allocate(1500, "d")       # best fit: the 2048 block, not 4096
    assert d is c and d.owner == "d"
    e = pool.allocate(600, "e")        # 1024 block
    assert e is b
    f = pool.allocate(5000, "f")       # nothing fits: a new block
    assert f.size == 5120 and pool.stats.new_blocks == 4
    s = pool.stats
    assert (s.requests, s.from_pool) == (6, 2)
    assert s.bytes_in_use == 2048 + 1024 + 5120
    assert s.bytes_reserved == 4096 + 1024 + 2048 + 5120 == s.peak_reserved
    assert [ev.kind for ev in pool.events] == ["alloc"] * 3 + ["free"] * 3 + ["alloc"] * 3
    assert [ev.from_pool for ev in pool.events[6:]] == [True, True, False]
    assert pool.empty_cache() == 4096
    assert pool.stats.bytes_reserved == 1024 + 2048 + 5120


def test_views_and_errors():
    pool = MemoryPool()
    blk = pool.allocate(48, "x")
    v = blk.view((3, 4), "float32")
    v[:] = 1
    assert v.sum() == 12
    with pytest.raises(ml.PlanError, match="'y'"):
        pool.allocate(-1, "y")
    pool.free(blk)
    with pytest.raises(ml.PlanError, match="twice"):
        pool.free(blk)
    with pytest.raises(ml.PlanError, match="belong"):
        MemoryPool().free(blk)
    with pytest.raises(ml.PlanError, match="takes a Block"):
        pool.free(None)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5000)), max_size=40))
def test_against_simple_model(ops):
    pool = MemoryPool()
    free: list[tuple[int, int]] = []   # the model: (size, id) of cached blocks
    live = []
    reserved = 0
    for do_free, n in ops:
        if do_free and live:
            blk = live.pop(n % len(live))
            pool.free(blk)
            free.append((blk.size, blk.id))
            continue
        size = max(512, -(-n // 512) * 512)
        fits = [f for f in free if f[0] >= size]
        blk = pool.allocate(n)
        if fits:
            want = min(fits)
            free.remove(want)
            assert (blk.size, blk.id) == want
        else:
            reserved += size
            assert blk.size == size
        live.append(blk)
        assert pool.stats.bytes_reserved == reserved
        assert pool.stats.bytes_in_use == sum(b.size for b in live)
        assert pool.stats.peak_reserved == reserved

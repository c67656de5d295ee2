"""CachingAllocator rule by rule, on sequences worked out by hand from PyTorch's
CUDACachingAllocator.cpp; BFCAllocator likewise from TensorFlow's bfc_allocator.cc."""
from __future__ import annotations

import numpy as np
import pytest

import memlab as ml
from memlab.memory import BFCAllocator, CachingAllocator
from memlab.memory.bfc import bin_for_size
from memlab.memory.blocks import format_size
from memlab.memory.checksnapshot import check_snapshot, snapshot_totals

KiB, MiB = 1 << 10, 1 << 20


def layout(a):
    """Each segment as (type, total MiB-or-bytes, [(size, state[0])...])."""
    return [(s["segment_type"], s["total_size"], [(b["size"], b["state"][0]) for b in s["blocks"]])
            for s in a.memory_snapshot()]


def test_rounding_to_512():
    a = CachingAllocator()
    sizes = [a.malloc(n).size for n in (1, 511, 512, 513, 1024, 1500)]
    assert sizes == [512, 512, 512, 1024, 1024, 1536]
    assert a.memory_stats()["requested_bytes.all.current"] == 1 + 511 + 512 + 513 + 1024 + 1500


def test_two_pools_and_segment_sizes():
    a = CachingAllocator()
    a.malloc(MiB)                       # small pool: a 2 MiB segment
    a.malloc(MiB + 1)                   # large pool: under 10 MiB, a 20 MiB segment
    a.malloc(10 * MiB - 512)            # fits the rest of the 20 MiB segment
    a.malloc(10 * MiB)                  # 10 MiB: a segment of its own size
    a.malloc(11 * MiB)                  # rounded up to 12 MiB
    segs = [(t, n // MiB) for t, n, _ in layout(a)]
    assert segs == [("small", 2), ("large", 20), ("large", 10), ("large", 12)]
    s = a.memory_stats()
    assert s["reserved_bytes.small_pool.current"] == 2 * MiB
    assert s["reserved_bytes.large_pool.current"] == 42 * MiB
    assert s["segment.large_pool.current"] == 3


def test_small_pool_split_threshold_is_512():
    a = CachingAllocator()
    x = a.malloc(MiB)
    y = a.malloc(MiB - 512)             # the rest 1 MiB splits: a 512-byte remainder
    assert layout(a) == [("small", 2 * MiB, [(MiB, "a"), (MiB - 512, "a"), (512, "i")])]
    z = a.malloc(512)                   # takes the 512 remainder exactly
    assert z.address == y.address + y.size and a.memory_reserved() == 2 * MiB
    assert (x.address, x.offset) == (a.memory_snapshot()[0]["address"], 0)


def test_large_pool_splits_only_past_1mib():
    a = CachingAllocator()
    big = a.malloc(19 * MiB)            # 20 MiB segment, remainder 1 MiB: not > 1 MiB, no split
    assert big.size == 20 * MiB and a.memory_allocated() == 20 * MiB
    a.free(big)
    b = a.malloc(19 * MiB - 512)        # remainder 1 MiB + 512 > 1 MiB: split
    assert b.size == 19 * MiB - 512
    assert layout(a)[0][2] == [(19 * MiB - 512, "a"), (MiB + 512, "i")]
    assert a.memory_stats()["inactive_split_bytes.all.current"] == MiB + 512


def test_best_fit_ties_take_the_lowest_address():
    a = CachingAllocator()
    xs = [a.malloc(4096, str(i)) for i in range(5)]
    at = [x.address for x in xs]        # a freed handle may be reused for a free remainder
    for i in (3, 1):
        a.free(xs[i])                   # two free 4 KiB holes, at 1 and 3
    assert a.malloc(4096).address == at[1]
    a.free(xs[0])                       # 4 KiB holes at 0 and 3 (1 is taken again)
    assert a.malloc(2048).address == at[0]   # equal sizes: the lower address


def test_merging_on_both_sides():
    a = CachingAllocator()
    x, y, z = a.malloc(512), a.malloc(512), a.malloc(512)
    a.free(x)
    a.free(z)                           # z merges with the free rest after it
    assert layout(a)[0][2] == [(512, "i"), (512, "a"), (2 * MiB - 1024, "i")]
    assert a.memory_stats()["inactive_split.all.current"] == 2
    a.free(y)                           # y merges with both neighbours: one free block
    assert layout(a)[0][2] == [(2 * MiB, "i")]
    s = a.memory_stats()
    assert s["inactive_split_bytes.all.current"] == 0 and s["inactive_split.all.current"] == 0


def test_blocks_of_different_segments_never_merge():
    a = CachingAllocator()
    x = a.malloc(2 * MiB - 512)         # large pool (> 1 MiB): a 20 MiB segment
    y = a.malloc(19 * MiB)              # does not fit the 18 MiB rest: its own 20 MiB segment
    a.free(x)
    a.free(y)
    assert [len(s[2]) for s in layout(a)] == [1, 1] and a.empty_cache() == 40 * MiB


def test_release_and_retry():
    a = CachingAllocator(capacity=40 * MiB)
    x, y = a.malloc(15 * MiB), a.malloc(15 * MiB)    # two 16 MiB segments
    a.free(x)
    z = a.malloc(20 * MiB)              # 32 + 20 > 40: release x's segment, retry: 16 + 20
    assert a.memory_reserved() == 36 * MiB and z.size == 20 * MiB
    s = a.memory_stats()
    assert s["num_alloc_retries"] == 1 and s["num_ooms"] == 0 and s["num_device_free"] == 1
    assert [e["action"] for e in a.trace][-3:] == ["segment_free", "segment_alloc", "alloc"]
    del y


def test_out_of_memory_with_memory_left():
    a = CachingAllocator(capacity=20 * MiB)
    p, q, r = (a.malloc(6 * MiB, n) for n in "pqr")  # one 20 MiB segment, 2 MiB left
    a.free(p)
    a.free(r)                           # 6 MiB + 8 MiB free, but not together
    assert snapshot_totals(a.memory_snapshot())["largest_free"] == 8 * MiB
    with pytest.raises(ml.OutOfMemoryError) as info:
        a.malloc(10 * MiB)
    msg = str(info.value)
    assert "Tried to allocate 10.00 MiB" in msg and "capacity of 20.00 MiB" in msg
    assert "6.00 MiB is allocated" in msg and "14.00 MiB is reserved but unallocated" in msg
    assert isinstance(info.value, ml.MemlabError)
    assert a.memory_stats()["num_ooms"] == 1 and a.memory_stats()["num_alloc_retries"] == 1
    check_snapshot(a.memory_snapshot())


def test_expandable_segments_grow_by_pages():
    a = CachingAllocator(expandable_segments=True)
    xs = [a.malloc(5 * MiB, str(i)) for i in range(5)]
    assert a.memory_reserved() == 40 * MiB          # two 20 MiB pages
    assert [x.address - xs[0].address for x in xs] == [i * 5 * MiB for i in range(5)]
    assert a.memory_stats()["segment.all.current"] == 1
    assert [e["action"] for e in a.trace].count("segment_map") == 2
    a.free(xs[4])                       # merges with the free end of the second page
    a.free(xs[3])
    assert a.empty_cache() == 20 * MiB  # the end page goes back
    assert a.memory_reserved() == 20 * MiB
    s = a.malloc(MiB)                   # the small pool: its own segment, 2 MiB pages
    assert a.memory_stats()["reserved_bytes.small_pool.current"] == 2 * MiB and s.size == MiB
    a.malloc(MiB)
    a.malloc(512)
    assert a.memory_stats()["reserved_bytes.small_pool.current"] == 4 * MiB


def test_expandable_end_block_grows_with_the_new_pages():
    a = CachingAllocator(expandable_segments=True)
    a.malloc(15 * MiB)                  # 5 MiB free at the end of the first page
    b = a.malloc(12 * MiB)              # the free end (5) grows by one page (20) and splits
    assert a.memory_reserved() == 40 * MiB and b.address == a.memory_snapshot()[0]["address"] + 15 * MiB
    assert layout(a)[0][2] == [(15 * MiB, "a"), (12 * MiB, "a"), (13 * MiB, "i")]
    assert a.memory_stats()["inactive_split_bytes.all.current"] == 0   # as PyTorch: left out


def test_expandable_best_fit_prefers_a_hole_to_the_end():
    a = CachingAllocator(expandable_segments=True)
    x = a.malloc(4 * MiB)
    front = x.address
    a.malloc(4 * MiB)                   # 12 MiB free at the end
    a.free(x)                           # a 4 MiB hole at the front
    assert a.malloc(2 * MiB).address == front


def test_max_split_size():
    a = CachingAllocator(max_split_size=32 * MiB)
    x = a.malloc(40 * MiB)              # an oversize segment of 40 MiB
    a.free(x)
    y = a.malloc(4 * MiB)               # under max_split_size: not served by the oversize block
    assert y.size == 4 * MiB and a.memory_reserved() == 60 * MiB
    z = a.malloc(33 * MiB)              # oversize request: the 40 MiB block, whole, unsplit
    assert z.address == x.address and z.size == 40 * MiB
    b = CachingAllocator(max_split_size=32 * MiB)
    big = b.malloc(64 * MiB)
    b.free(big)
    assert b.malloc(40 * MiB).address != big.address   # 64 >= 40 + 20: not rounded up that far
    assert b.malloc(48 * MiB).address == big.address   # 64 < 48 + 20: served, not split
    with pytest.raises(ml.MemlabError, match="max_split_size"):
        CachingAllocator(max_split_size=20 * MiB)     # PyTorch wants more than 20 MiB


def test_max_split_size_releases_one_oversize_block_first():
    a = CachingAllocator(capacity=200 * MiB, max_split_size=32 * MiB)
    keep = a.malloc(2 * MiB)            # a 20 MiB segment, split
    x, y = a.malloc(40 * MiB), a.malloc(100 * MiB)
    a.free(x)
    a.free(y)                           # 160 reserved
    a.malloc(75 * MiB)                  # 100 >= 75 + 20: no fit; 160 + 76 > 200: release the 100
    assert sorted(s["total_size"] // MiB for s in a.memory_snapshot()) == [20, 40, 76]
    assert a.memory_stats()["num_alloc_retries"] == 0
    b = CachingAllocator(capacity=120 * MiB, max_split_size=32 * MiB)
    keep2 = b.malloc(2 * MiB)
    u, v = b.malloc(40 * MiB), b.malloc(40 * MiB)
    b.free(u)
    b.free(v)
    b.malloc(70 * MiB)                  # no single 70: release the largest ones, 40 then 40
    assert sorted(s["total_size"] // MiB for s in b.memory_snapshot()) == [20, 70]
    assert b.memory_stats()["num_alloc_retries"] == 0
    del keep, keep2


def test_empty_cache_releases_only_wholly_free_segments():
    a = CachingAllocator()
    x, y = a.malloc(512), a.malloc(3 * MiB)
    z = a.malloc(11 * MiB)              # fits the 17 MiB rest of y's 20 MiB segment
    a.free(y)
    w = a.malloc(19 * MiB)              # a 20 MiB segment of its own
    a.free(w)
    assert a.empty_cache() == 20 * MiB  # w's segment; y's is still split by z
    a.free(z)
    assert a.empty_cache() == 20 * MiB
    assert layout(a) == [("small", 2 * MiB, [(512, "a"), (2 * MiB - 512, "i")])]
    del x


def test_views_are_at_their_offsets_and_do_not_overlap():
    a = CachingAllocator()
    x, y = a.malloc(48, "x"), a.malloc(48, "y")
    vx, vy = x.view((12,), np.float32), y.view((12,), np.float32)
    vx[:], vy[:] = 1, 2
    assert vx.sum() == 12 and vy.sum() == 24 and y.offset == 512
    assert np.shares_memory(vx, x.segment.buffer()) and not np.shares_memory(vx, vy)


def test_format_size_as_pytorch():
    assert [format_size(n) for n in (512, 1024, 1536, 20 * MiB, 3 << 30)] == \
        ["512 bytes", "1024 bytes", "1.50 KiB", "20.00 MiB", "3.00 GiB"]


def test_memory_stats_keys_are_pytorchs():
    s = CachingAllocator().memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                "reserved_bytes.all.current", "reserved_bytes.all.peak", "active_bytes.all.peak",
                "inactive_split_bytes.all.current", "num_alloc_retries", "num_ooms",
                "segment.all.current", "allocated_bytes.small_pool.current",
                "reserved_bytes.large_pool.peak", "requested_bytes.all.current"):
        assert s[key] == 0


# -- TensorFlow's BFC ---------------------------------------------------------------------------

def test_bfc_bins_and_rounding():
    assert [bin_for_size(n) for n in (256, 511, 512, 1024, 256 << 20, 1 << 40)] == \
        [0, 0, 1, 2, 20, 20]
    a = BFCAllocator()
    assert [a.malloc(n).size for n in (1, 256, 257)] == [256, 256, 512]


def test_bfc_split_rule_and_regions():
    a = BFCAllocator()
    x = a.malloc(MiB)                   # the first region: 2 MiB >= 2 * 1 MiB: split
    assert a.memory_reserved() == 2 * MiB and x.size == MiB
    a.free(x)
    y = a.malloc(MiB + 256)             # 2 MiB < 2 * (1 MiB + 256): the whole chunk
    assert y.size == 2 * MiB
    z = a.malloc(3 * MiB)               # a new region: the next one is 4 MiB
    assert a.memory_reserved() == 6 * MiB and z.size == 4 * MiB
    w = a.malloc(5 * MiB)               # an 8 MiB region, not split: 8 < 2 * 5
    assert a.memory_reserved() == 14 * MiB and w.size == 8 * MiB
    del y, z, w


def test_bfc_coalesces_within_a_region():
    a = BFCAllocator()
    x, y, z = a.malloc(256 * KiB), a.malloc(256 * KiB), a.malloc(256 * KiB)
    for b in (x, z, y):
        a.free(b)
    assert layout(a) == [("large", 2 * MiB, [(2 * MiB, "i")])]


def test_bfc_out_of_memory_after_freeing_regions():
    a = BFCAllocator(capacity=8 * MiB)
    x = a.malloc(MiB)                   # 2 MiB region
    a.free(x)
    y = a.malloc(7 * MiB)               # 2 + 7 > 8: release the free region, retry
    assert a.memory_reserved() == 8 * MiB and a.memory_stats()["num_alloc_retries"] == 1
    with pytest.raises(ml.OutOfMemoryError, match="in regions but free"):
        a.malloc(4 * MiB)
    del y


@pytest.mark.parametrize("make", [CachingAllocator, BFCAllocator])
def test_a_stale_handle_is_never_handed_out_again(make):
    a = make()
    x = a.malloc(4096)
    a.free(x)
    y = a.malloc(1024)                  # splits the free block that x's handle now names
    assert y is not x and not x.allocated
    with pytest.raises(ml.MemlabError, match="freed twice"):
        a.free(x)
    a.free(y)
    check_snapshot(a.memory_snapshot())

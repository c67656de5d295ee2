"""Snapshots drawn as PyTorch's memory viewer does, from memlab's allocators and from a snapshot
file in PyTorch's format written by hand (tests/viz/data/torch_snapshot.json; no torch)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import memlab as ml
from memlab import viz
from memlab.memory import CachingAllocator
from memlab.memory.checksnapshot import check_snapshot, snapshot_totals
from memlab.viz import snapshots

MiB = 1 << 20
TORCH = json.loads((Path(__file__).parent / "data" / "torch_snapshot.json").read_text())


def rects(svg: str) -> int:
    return svg.count("<path")


def test_the_hand_written_torch_snapshot_is_valid_and_recounts():
    check_snapshot(TORCH)
    t = snapshot_totals(TORCH)
    assert t["allocated_bytes"] == 8 * MiB + 4 * MiB + 512
    assert t["reserved_bytes"] == 20 * MiB + 2 * MiB + 12 * MiB
    assert t["inactive_split_bytes"] == 4 * MiB + 4 * MiB + 2096640   # the lone 12 MiB is not split


def test_draw_a_torch_snapshot():
    segs = snapshots.segments_of(TORCH)
    assert [s["total_size"] for s in segs] == [20 * MiB, 2 * MiB, 12 * MiB]
    colors: dict[str, int] = {}
    svg = viz.to_svg(viz.draw_snapshot(TORCH, title="a GPU run", colors=colors))
    assert set(colors) == {"forward train.py:10", "backward train.py:22", "loss train.py:30"}
    assert "forward train.py:10" in svg and "a GPU run" in svg
    assert "large 20" in svg and "small 2" in svg and "large 12" in svg
    assert svg.count('id="patch') >= 3 + 9        # the bars' blocks, at least


def test_memory_over_time_of_a_torch_trace_recounts():
    allocated, reserved = snapshots.timeline(TORCH)
    assert reserved[-1] == 34 * MiB and allocated[-1] == 8000000 + 4000000 + 100
    assert max(allocated) == 8000000 + 4000000 + 100 + 12000000
    svg = viz.to_svg(viz.memory_over_time(TORCH, title="timeline"))
    assert "reserved but unallocated" in svg


def test_draw_memlabs_snapshot_and_timeline():
    a = CachingAllocator()
    x, y = a.malloc(3 * MiB, "x"), a.malloc(5 * MiB, "y")
    a.free(x)
    a.malloc(1000, "z")
    colors: dict[str, int] = {}
    svg = viz.to_svg(viz.draw_snapshot(a, colors=colors))
    assert list(colors) == ["y", "z"]              # the free block is not an owner
    assert "large 20" in svg and "small 2" in svg
    allocated, reserved = snapshots.timeline(a)
    assert (allocated[-1], reserved[-1]) == (a.memory_allocated(), a.memory_reserved())
    viz.to_svg(viz.memory_over_time(a))
    del y


def test_allocator_frames_keep_owner_colours_and_show_oom():
    reqs = [("alloc", "a", 6 * MiB), ("alloc", "b", 6 * MiB), ("free", "a"),
            ("alloc", "c", 30 * MiB)]
    frames = viz.allocator_frames(reqs, lambda: CachingAllocator(capacity=24 * MiB))
    assert len(frames) == 4
    assert frames[0].caption.startswith("1. malloc a (6 MiB): allocated 6 MiB, reserved 20 MiB")
    assert "out of memory" in frames[3].caption
    fills = [re.findall(r"fill: (#[0-9a-f]{6})", f.picture) for f in frames[:2]]
    assert set(fills[0]) <= set(fills[1])         # a keeps its colour when b arrives


def test_bad_snapshot():
    with pytest.raises(ml.MemlabError, match="snapshot must be"):
        viz.draw_snapshot("no")
    with pytest.raises(ml.MemlabError, match="'segments'"):
        viz.draw_snapshot({"blocks": []})

"""The pictures of lesson 15 (memlab.viz.transformer), headless."""
from __future__ import annotations

import html

from memlab import viz
from memlab.memory import kvcache as kv
from memlab.models import activations as act
from memlab.models.gpt import transformer
from memlab.viz import transformer as vt


def test_term_bars_name_every_term():
    m = transformer(1, 8, 16, 2, 1, 5, dropout=0.1, dtype="float16")
    svg = html.unescape(viz.to_svg(vt.term_bars(act.saved_terms(m), act.formula_terms(8, 1, 16, 2),
                                                "t")))
    for term in act.TERMS:
        assert term in svg


def test_kv_frames_follow_the_allocator():
    stream = kv.request_stream(6, seed=1, prompt=(2, 8), output=(2, 9), per_step=0.5)
    frames = vt.kv_frames(stream, num_blocks=20, block_size=4, steps=6)
    assert len(frames) == 6
    # replay the same run: the captions' counts are the allocator's after each step
    alloc, want = kv.PagedAllocator(20, 4), []
    kv.serve(stream, alloc, on_step=lambda step, running: want.append(
        (len(running), 20 - len(alloc.free_list))))
    for frame, (running, used) in zip(frames, want):
        assert f"{running} requests running, {used} of 20 blocks" in frame.caption
        assert frame.html().count("<svg") == 1


def test_lines_draw_one_curve_per_series():
    svg = viz.to_svg(vt.lines([1, 2, 4], {"a": [1, 2, 3], "b": [3, 2, 1]}, "x", "y", "title"))
    assert "title" in svg and svg.count('id="line2d_') >= 2


def test_loss_curve_has_no_peak_label():
    from memlab.viz import transformer as vt
    fig = vt.loss_curve([2.0, 1.0, 0.5], "t")
    ax = fig.axes[0]
    assert list(ax.get_lines()[0].get_ydata()) == [2.0, 1.0, 0.5]
    assert not any("peak" in t.get_text() for t in ax.texts)

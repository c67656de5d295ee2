"""Flipbooks: every stepper and slider replays its frames on a page without a kernel."""
from __future__ import annotations

import re

import ipywidgets as widgets
import matplotlib.pyplot as plt
from hypothesis import given, settings, strategies as st

from memlab import viz
from memlab.viz.flipbook import MAX_FRAMES, Axis, flipbook_html, grid, sample_axes


def frames_of(page: str) -> list[str]:
    """The frames a flipbook stores, in order (its HTML, independently parsed)."""
    parts = re.split(r'<div class="memlab-fb-frame" data-frame="(\d+)"(?: hidden)?>', page)
    idx = [int(x) for x in parts[1::2]]
    assert idx == list(range(len(idx)))
    bodies = parts[2::2]
    bodies[-1] = bodies[-1][: bodies[-1].rindex("</div></div><script>")]
    return [b[: -len("</div>")] if i + 1 < len(bodies) else b for i, b in enumerate(bodies)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=4).flatmap(
    lambda sizes: st.tuples(st.just(sizes), st.tuples(*[st.integers(0, n - 1) for n in sizes]))))
def test_sampling_keeps_ends_and_default_and_fits(case):
    sizes, defaults = case
    keep = sample_axes(sizes, defaults)
    total = 1
    for n, d, k in zip(sizes, defaults, keep):
        assert k == sorted(set(k)) and all(0 <= i < n for i in k)
        assert d in k and 0 in k and n - 1 in k
        total *= len(k)
    full = 1
    for n in sizes:
        full *= n
    assert total == full if full <= MAX_FRAMES else total <= MAX_FRAMES or \
        all(len(k) <= 3 for k in keep)


def test_grid_order_is_first_axis_slowest():
    axes = [Axis("a", ("0", "1")), Axis("b", ("x", "y", "z"))]
    assert grid(axes)[:4] == [(0, 0), (0, 1), (0, 2), (1, 0)]


def test_flipbook_rejects_a_wrong_frame_count():
    try:
        flipbook_html([Axis("a", ("0", "1"))], ["only one"])
    except ValueError as err:
        assert "1 frames for a grid of 2" in str(err)
    else:
        raise AssertionError("a flipbook with a missing frame was accepted")


def test_stepper_flipbook_holds_every_frame_in_order_first_shown():
    frames = [viz.Frame(f"<svg><text>{i}</text></svg>", f"step {i}") for i in range(5)]
    s = viz.Stepper(frames, title="five steps")
    bundle = s._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    page = bundle["text/html"]
    stored = frames_of(page)
    assert len(stored) == 5
    for i, body in enumerate(stored):
        assert f"<b>frame {i + 1} of 5: step {i}</b>" in body and f"<text>{i}</text>" in body
    assert '<div class="memlab-fb-frame" data-frame="0">' in page   # shown
    assert page.count(" hidden>") == 4 and "memlab-fb-play" in page
    assert "<script src" not in page and "http" not in page.split("<script>")[1]


def test_interact_frames_match_the_live_widget_at_each_value():
    calls = []

    def show(depth=4, batch=32):
        calls.append((depth, batch))
        print(f"depth {depth}, batch {batch}: {depth * batch} units")

    e = viz.interact(show, depth=(2, 6), batch=widgets.SelectionSlider(options=[8, 16, 32],
                                                                      value=32))
    assert e.values == {"depth": 4, "batch": 32}              # the function's defaults
    assert "depth 4, batch 32: 128 units" in e.out.value
    e.controls["depth"].value = 6
    assert "depth 6, batch 32: 192 units" in e.out.value       # the live widget redraws
    page = e.flipbook()
    stored = frames_of(page)
    assert len(stored) == 5 * 3
    for k, (d, b) in enumerate((d, b) for d in range(2, 7) for b in (8, 16, 32)):
        assert f"depth {d}, batch {b}: {d * b} units" in stored[k]
    assert "Sampled" not in page
    assert len(calls) == len(set(calls))                      # each frame rendered once


def test_interact_samples_a_large_grid_and_says_so():
    e = viz.interact(lambda n=10: print(n), n=widgets.IntSlider(10, min=0, max=200, step=1))
    page = e.flipbook()
    stored = frames_of(page)
    assert len(stored) <= MAX_FRAMES
    assert "Sampled for this page (n: " in page and "of 201 values" in page
    shown = re.search(r'data-frame="(\d+)">', page).group(1)
    assert stored[int(shown)].strip().endswith("10\n</pre>")   # the default value is a frame


def test_interact_captures_figures_as_svg_in_order():
    def draw(k=1):
        print("before")
        fig, ax = plt.subplots()
        ax.plot(range(k + 2))
        from IPython.display import display
        display(fig)
        print("after")

    open_before = plt.get_fignums()         # figures other tests in this process left open
    e = viz.interact(draw, k=(1, 2))
    html = e.out.value
    assert html.index("before") < html.index("<svg") < html.index("after")
    assert html.count("<svg") == 1 and plt.get_fignums() == open_before


def test_explorer_over_html_controls():
    e = viz.Explorer(lambda P, alpha: f"<p>P={P} alpha={alpha:g}</p>",
                     {"P": widgets.IntSlider(2, min=1, max=3),
                      "alpha": widgets.FloatSlider(0.5, min=0.3, max=1.0, step=0.1)})
    stored = frames_of(e.flipbook())
    assert len(stored) == 3 * 8 and stored[0] == "<p>P=1 alpha=0.3</p>"
    assert stored[-1] == "<p>P=3 alpha=1</p>"

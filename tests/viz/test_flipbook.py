"""Flipbooks: every stepper and slider replays its frames on a page without a kernel."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from urllib.parse import unquote

import ipywidgets as widgets
import matplotlib.pyplot as plt
from hypothesis import given, settings, strategies as st

from memlab import viz
from memlab.viz.flipbook import (MAX_FRAMES, MIME, Axis, compact, decode_frames, encode_frames,
                                 flipbook_data, flipbook_from_data, flipbook_html, grid,
                                 page_frames, sample_axes)


def frames_of(page: str) -> list[str]:
    """The frames a page's flipbook holds, in order, and the one it shows without its script."""
    frames = page_frames(page)
    shown = re.search(r'<div class="memlab-fb-frame" data-frame="(\d+)">', page)
    assert shown and page.count('class="memlab-fb-frame"') == 1   # each frame stored once
    assert page.split(shown.group(0), 1)[1].startswith(frames[int(shown.group(1))])
    return frames


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
    page = flipbook_from_data(bundle[MIME])           # what the site builds from the notebook
    assert page == s.flipbook()
    stored = frames_of(page)
    assert len(stored) == 5
    for i, body in enumerate(stored):
        assert f"<b>frame {i + 1} of 5: step {i}</b>" in body and f"<text>{i}</text>" in body
    assert '<div class="memlab-fb-frame" data-frame="0">' in page   # shown
    assert "memlab-fb-play" in page
    assert "<script src" not in page and "http" not in page.split("<script>")[1]


# JupyterLab's sanitiser (packages/apputils/src/sanitizer.ts, sanitize-html underneath), through
# which a notebook's outputs go until its cells run: the tags it keeps (no svg, no script, no
# style); a dropped tag keeps its text, except script, style, textarea and option.
KEPT = set("""a abbr acronym address area article aside audio b bdi bdo big blockquote br button
canvas caption center cite code col colgroup colspan command data datalist dd del details dfn dir
div dl dt em fieldset figcaption figure font footer form h1 h2 h3 h4 h5 h6 header hgroup hr i img
input ins kbd label legend li map mark menu meter nav nobr ol optgroup option output p pre progress
q rowspan s samp section select small source span strike strong sub summary sup table tbody td
textarea tfoot th thead time tr track tt u ul var video wbr""".split())


class _Sanitised(HTMLParser):
    """The text a reader sees of HTML after the sanitiser, and the images it keeps."""

    def __init__(self):
        super().__init__()
        self.text, self.images, self._mute = [], [], 0

    def handle_starttag(self, tag, attrs):
        self._mute += tag in ("script", "style", "textarea", "option")
        if tag == "img" and tag in KEPT:
            self.images.append(dict(attrs).get("src", ""))

    def handle_endtag(self, tag):
        self._mute -= tag in ("script", "style", "textarea", "option") and self._mute > 0

    def handle_data(self, data):
        if not self._mute and data.strip():
            self.text.append(data.strip())


def sanitised(page: str) -> _Sanitised:
    p = _Sanitised()
    p.feed(page)
    return p


def test_before_it_runs_a_stepper_shows_its_first_frame_and_one_line():
    frames = [viz.Frame(f'<svg xmlns="http://www.w3.org/2000/svg"><text>label {i}</text></svg>',
                        f"step {i}") for i in range(5)]
    preview = viz.Stepper(frames, title="five steps")._repr_mimebundle_()["text/html"]
    seen = sanitised(preview)
    # the caption of the first frame and the line, nothing of the other frames
    assert seen.text == ["five steps", "frame 1 of 5: step 0",
                         "\u25b6 Run this cell to step through it (5 frames)."], seen.text
    assert "<svg" not in preview.replace("data:image/svg+xml,<svg", "") and "<script" not in preview
    (src,) = seen.images                                 # the picture, as an image of the SVG
    assert src.startswith("data:image/svg+xml,") and "label 0" in unquote(src)
    assert "label 1" not in preview
    # the page's flipbook, through the same sanitiser: one frame too (the others are data)
    page = sanitised(viz.Stepper(frames).flipbook())
    assert sum(": step" in t for t in page.text) == 1


def test_before_it_runs_a_slider_shows_its_default_frame():
    e = viz.interact(lambda depth=4: print(f"depth {depth}"), depth=(2, 6))
    bundle = e._repr_mimebundle_()
    seen = sanitised(bundle["text/html"])
    assert seen.text == ["depth 4", "\u25b6 Run this cell to move its sliders (5 frames)."]
    assert frames_of(flipbook_from_data(bundle[MIME]))[2].strip() == \
        '<pre class="memlab-out">depth 4\n</pre>'


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.sampled_from(['<g fill="red">', '<g fill="blue" x="1">', "</g>",
                                          "<text>a b</text>", '<path d="M 0 0"/>', "text",
                                          ' y="2"', '"', "<", ">"]), max_size=12),
                min_size=1, max_size=6))
def test_frames_stored_as_differences_come_back_exactly(parts):
    frames = ["".join(p) for p in parts]
    encoded = encode_frames(frames)
    assert decode_frames(json.loads(json.dumps(encoded))) == [compact(f) for f in frames]


def test_a_frame_like_the_one_before_costs_its_difference():
    pic = "".join(f'<rect x="{i}" y="0" width="9" height="9" fill="#aaa"/>' for i in range(200))
    frames = [pic.replace(f'x="{k}" y="0" width="9" height="9" fill="#aaa"',
                          f'x="{k}" y="0" width="9" height="9" fill="#f00"') for k in range(20)]
    data = flipbook_data([Axis("frame", tuple(map(str, range(20))))], frames)
    assert len(json.dumps(data)) < 1.3 * len(json.dumps(frames[0])) + 20 * 100   # not 20 drawings
    assert decode_frames(data["frames"]) == frames


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

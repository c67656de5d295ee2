"""Drawings and the slide stepper, headless."""
from __future__ import annotations

import memlab as ml
from memlab import viz


def test_draw_graph_colours_nodes_by_storage():
    a, b = ml.placeholder("a"), ml.placeholder("b")
    m = a * b
    y = ml.exp(m + 3)
    svg = viz.to_svg(viz.draw_graph(y, storage={m: 0, y: 0}))
    assert svg.startswith("<svg") and svg.count(viz.color(0)) == 2
    assert "<?xml" not in svg


def test_draw_graph_marks_nodes_with_a_double_border_not_a_colour():
    a, b = ml.placeholder("a"), ml.placeholder("b")
    m = a * b
    y = ml.exp(m + 3)
    plain = viz.to_svg(viz.draw_graph(y))
    svg = viz.to_svg(viz.draw_graph(y, marked=[m, y]))
    # graphviz draws a second outline per marked box: two more polygons, and no storage colour
    assert svg.count("<polygon") == plain.count("<polygon") + 2
    assert viz.color(0) not in svg


def test_stepper_moves_and_shows_each_caption_headless():
    frames = [viz.Frame(f"<svg><text>{i}</text></svg>", f"step {i}") for i in range(4)]
    s = viz.Stepper(frames)
    seen = []
    for i in range(4):
        s.slider.value = i + 1     # the slider counts frames from 1, as the caption does
        seen.append(s.shown_html())
        assert f"frame {i + 1} of 4: step {i}" in s.shown_html() and s.caption == f"step {i}"
    assert len(set(seen)) == 4
    s.play.value = 2  # the Play button drives the slider through widgets.link
    assert s.slider.value == 2 and "frame 2 of 4: step 1" in s.shown_html()
    flip = s.flipbook()        # the page's slider counts the same way
    assert 'aria-label="frame"' in flip and 'max="3"' in flip and '"1", "2", "3", "4"' in flip
    assert "frame 3 of 4: step 2" in flip


def test_memory_plot_marks_the_peak():
    svg = viz.to_svg(viz.memory_plot([1, 4, 2]))
    assert "peak 4" in svg


def test_show_displays_a_figure_once_and_closes_it(monkeypatch):
    import matplotlib.pyplot as plt
    import IPython.display
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    fig, _ = plt.subplots()
    viz.show(fig)
    assert shown == [fig] and not plt.fignum_exists(fig.number)

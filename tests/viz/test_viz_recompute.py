"""Lesson 06's drawings (memlab/viz/recompute.py): each shows what its data says."""
from __future__ import annotations

import html

import matplotlib.pyplot as plt
import pytest

import memlab as ml
from memlab import checkpoint as ck, models, viz
from memlab.viz import recompute as vr


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _step(depth=6):
    return models.training_outputs(models.mlp(depth=depth, batch=64, n_in=4, hidden=4, n_out=3))


def test_recompute_drawing_and_frames():
    outs = _step(3)
    keep = ck.every_k(outs, 2)
    new = ck.recompute_graph(outs, keep)
    svg = html.unescape(viz.to_svg(vr.draw_recompute(outs, new, keep)))
    assert svg.count("'") >= len(ck.recomputed_nodes(new))      # copies are primed names
    frames = vr.execution_frames(new, "every 2nd")
    assert len(frames) == len([n for n in ml.memory_order(new) if n.op.computes])


def test_panel_b_plots_the_totals_and_the_slide():
    rows = models.resnet_curve((20, 40), batch=2, sublinear="sqrt", wrt="params")
    fig = vr.recompute_memory_curves(rows, models.SLIDE35, models.SUBLINEAR["resnet"], "layers", "t",
                           total_slide={20: (1.0, 0.5), 40: (None, 0.7)})
    a, b = fig.axes
    lines = {l.get_label(): l for l in b.get_lines()}
    assert list(lines["sharing (total)"].get_ydata()) == [r["sharing total"] for r in rows]
    assert list(lines["sublinear (feature maps)"].get_ydata()) == [r["sublinear"] for r in rows]
    squares = [l for l in b.get_lines() if l.get_marker() == "s"]
    assert sorted(len(l.get_xdata()) for l in squares) == [1, 2]     # None: no square
    assert len(plt.subplots()[0].axes) == 1 and len(vr.recompute_memory_curves(
        rows, models.SLIDE35, models.SUBLINEAR["resnet"], "layers", "t").axes) == 1


def test_overhead_curves_show_counted_measured_and_the_slide():
    rows = [{"x": 2, "counted extra": 0.5, "measured extra": 0.25},
            {"x": 4, "counted extra": 0.75, "measured extra": 0.5}]
    fig = vr.overhead_curves({"ResNet": (rows, "blocks")}, {"resnet": {1: (1.0, 1.5), 2: (None, 3.0)}})
    lines = fig.axes[0].get_lines()
    assert list(lines[0].get_ydata()) == [1.5, 1.75] and list(lines[1].get_ydata()) == [1.25, 1.5]
    assert list(lines[2].get_ydata()) == [1.5, 1.5]              # the slide's ratio, None skipped


def test_order_curves_peaks_are_the_orders_peaks():
    step = _step()
    new = ck.recompute_graph(step, ck.sqrt_checkpoints(step))
    for method in ("dfs", "greedy"):
        fig = vr.order_curves(step, new, method)
        got = [max(l.get_ydata()) for l in fig.axes[0].get_lines()]
        assert got == pytest.approx([ml.order_peak(step, method) / 1e6,
                                     ml.order_peak(new, method) / 1e6])


def test_optimum_plot():
    fig = vr.optimum_plot([(10, 3), (20, 1), (30, 0)], {"sqrt(N)": (20, 4)}, "t")
    step, dot = fig.axes[0].get_lines()
    assert list(step.get_xdata()) == [10, 20, 30] and list(dot.get_ydata()) == [4]


def test_rebuilt_and_recomputed_nodes_show_their_op_not_an_automatic_name():
    """A rewrite rebuilds backward nodes under their old names and primes its copies' names; an
    automatic name (``matmul_118``) must still read as its op (``matmul``, ``matmul'``)."""
    import re
    from memlab.viz.graphs import node_text
    outs = _step(3)
    new = ck.recompute_graph(outs, ck.every_k(outs, 2))
    texts = [node_text(n) for n in ml.topo_order(new)]
    assert not [t for t in texts if re.search(r"_\d+'*$", t)]
    copies = [n for n in ml.topo_order(new) if n.op is ck.rewrite.RECOMPUTE]
    assert copies and all(node_text(c).split(" = ")[0].endswith("'") for c in copies)


def test_optimum_plot_spreads_coinciding_dots():
    fig = vr.optimum_plot([(10, 3), (20, 1), (30, 0)], {"a": (20, 4), "b": (20, 4), "c": (10, 5)},
                          "t")
    _, a, b, c = fig.axes[0].get_lines()
    assert a.get_xdata()[0] == 20 and b.get_xdata()[0] > 20 and c.get_xdata()[0] == 10
    assert "(20 B, 4)" in a.get_label()


def test_tradeoff_plot_marks_sqrt_n_and_the_least_k():
    rows = [{"K": k, "n": 16, "feature maps": 1000 * (k + 16 / k), "recomputed": 16 - k}
            for k in (1, 2, 4, 8, 16)]
    fig = vr.recompute_tradeoff_plot(rows, "t")
    labels = [l.get_label() for l in fig.axes[0].get_lines()]
    assert "K = sqrt(N) = 4.0" in labels and "least: K = 4" in labels
    slide = next(l for l in fig.axes[0].get_lines() if l.get_label().startswith("c·"))
    assert max(abs(y - 1e-3 * (x + 16 / x)) for x, y in zip(*slide.get_data())) < 1e-12

"""Lesson 11's plots (plotting moved out of the lesson): each draws what it is given."""
from __future__ import annotations

import matplotlib
matplotlib.use("Agg")

from memlab import taskgraph as tg, listsched as ls, viz  # noqa: E402


def test_schedules_figure_has_one_row_per_processor_count_on_common_axes():
    g = tg.sequential_example()
    scheds = {P: ls.list_schedule(g, P=P) for P in (1, 2)}
    fig = viz.schedules_figure(g, scheds)
    assert len(fig.axes) == 4
    assert fig.axes[1].get_ylim() == fig.axes[3].get_ylim()


def test_points_cost_and_io_curves_draw_every_point():
    fig = viz.schedule_points([("a", 1, 5.0, 3.0), ("a", 2, 3.0, 4.0), ("b", 1, 6.0, 2.0)])
    drawn = [(tuple(l.get_xdata()), tuple(l.get_ydata())) for l in fig.axes[0].lines]
    assert ((5.0,), (3.0,)) in drawn and ((6.0,), (2.0,)) in drawn
    fig = viz.search_cost_figure({4: [10, 12], 6: [30]})
    assert [tuple(l.get_ydata()) for l in fig.axes[0].lines][-2:] == [(11.0, 30.0), (16.0, 64.0)]
    fig = viz.io_curves({"x": [(3, 2.0), (4, 0.0)], "y": [(3, 5.0), (4, 1.0)]})
    assert [tuple(l.get_ydata()) for l in fig.axes[0].lines] == [(2.0, 0.0), (5.0, 1.0)]

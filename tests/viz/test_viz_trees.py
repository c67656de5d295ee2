"""Tree and task-graph drawings, headless: they show what the algorithms computed."""
from __future__ import annotations

import memlab as ml
from memlab import viz
from memlab.scheduling.mapping import all_to_all
from memlab.scheduling.taskgraph import sequential_example


def test_draw_tree_colours_held_outputs_and_marks_the_running_node():
    t = ml.Tree([-1, 0, 0, 1], f=[1, 2, 3, 4])
    svg = viz.to_svg(viz.draw_tree(t, done=[3], running=1))
    assert svg.startswith("<svg") and svg.count("<g id=\"node") == 4
    assert "f=4" in svg and "f=3" in svg


def test_draw_taskgraph_has_every_task_and_edge():
    g = sequential_example()
    svg = viz.to_svg(viz.draw_taskgraph(g, done=["A"], running="C"))
    for task in "ABCDEF":
        assert f">{task}" in svg
    assert svg.count("<g id=\"edge") == 5


def test_traversal_bars_mark_the_peak():
    svg = viz.to_svg(viz.traversal_bars([3, 5, 4], [2, 3, 1], ["a", "b", "c"]))
    assert "5" in svg and svg.startswith("<svg")


def test_tree_gantt_draws_one_bar_per_node():
    t = ml.Tree([-1, 0, 0], f=[1, 1, 1])
    sched = all_to_all(t, [1.0, 2.0, 3.0], P=2)
    fig = viz.tree_gantt(sched, names=["r", "x", "y"])
    assert len(fig.axes[0].patches) == 3
    viz.to_svg(fig)


def test_traversal_frames_step_through_a_profile():
    from memlab.scheduling.taskgraph import memory_profile
    g = sequential_example()
    order = list("ACBEDF")
    during, after = memory_profile(g, order)
    frames = viz.traversal_frames(lambda done, run: viz.draw_taskgraph(g, done=done, running=run),
                                  order, during, after, "ACBEDF")
    assert len(frames) == len(order) + 1
    assert frames[2].caption.startswith("ACBEDF: step 2, run C")
    s = viz.Stepper(frames)
    shown = set()
    for i in range(len(frames)):
        s.slider.value = i
        assert frames[i].caption.split(":")[1].strip().split(",")[0] in s.shown_html()
        shown.add(s.shown_html())
    assert len(shown) == len(frames)

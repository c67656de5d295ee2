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
        s.slider.value = i + 1
        assert frames[i].caption.split(":")[1].strip().split(",")[0] in s.shown_html()
        shown.add(s.shown_html())
    assert len(shown) == len(frames)


def test_fronts_by_depth_groups_m_by_the_distance_to_the_root():
    t = ml.Tree([-1, 0, 0, 1, 3], f=[0, 1, 1, 1, 1], m=[5, 4, 3, 2, 1])
    assert t.depths() == [0, 1, 1, 2, 3] and t.depth() == 4
    assert viz.fronts_by_depth(t) == {0: [5], 1: [4, 3], 2: [2], 3: [1]}


def test_assembly_fronts_grow_from_the_leaves_and_peak_under_the_root():
    """Lesson 12's claim on the 7 x 7 nested-dissection tree: the mean front grows level by level
    from the leaves up to depth 1, and the root's front (the last separator alone) is smaller."""
    from memlab.scheduling.assembly import grid_assembly_tree
    level = viz.fronts_by_depth(grid_assembly_tree((7, 7), "nd"))
    means = [sum(ms) / len(ms) for _, ms in sorted(level.items())]
    assert all(a > b for a, b in zip(means[1:], means[2:]))
    assert means[0] < max(level[1])

"""The pictures and steppers of lessons 04-05 (memlab.viz.concurrency), headless."""
from __future__ import annotations

import html

import pytest

import memlab as ml
from memlab import viz
from memlab.memory.coloring import (concurrency_tradeoff, control_vs_mutation, implicit_dependencies,
                             longest_path_coloring, simulate_schedule)
from memlab.viz import concurrency


@pytest.fixture
def slide23():
    g = ml.models.slide23()
    return g, g["A[8]"]


def _svg(picture):
    return html.unescape(viz.to_svg(picture))   # Graphviz writes "-" as "&#45;"


def test_implicit_edges_are_dashed_red_and_constants_hidden(slide23):
    _, out = slide23
    plan = ml.plan_memory(out)
    imp = implicit_dependencies(plan)
    svg = _svg(concurrency.draw_dependencies(out, plan.storage, imp))
    assert "A[5] = pool" in svg and "#1" in svg and "implicit" in svg
    assert concurrency.IMPLICIT in svg and "stroke-dasharray" in svg
    assert "kernel" not in svg                                    # conv kernels are constants: not drawn
    assert "kernel" in _svg(concurrency.draw_dependencies(out, hide_constants=False))
    assert viz.color(plan.storage[slide23[0]["A[5]"]]).lower() in svg.lower()
    none = _svg(concurrency.draw_dependencies(out, ml.plan_memory(out, colors=2).storage, []))
    assert "implicit" not in none and "stroke-dasharray" not in none
    ctrl = _svg(concurrency.draw_dependencies(out, plan.storage, imp, implicit_label="control"))
    assert "control" in ctrl


def test_coloring_stepper_replays_the_paths(slide23):
    g, out = slide23
    col = longest_path_coloring(out, colors=4)
    frames = concurrency.coloring_frames(out, col["paths"])
    assert len(frames) == 1 + 2 * 2 + 1            # start, two rounds of (path, reset), final
    assert "reward 1" in _svg(frames[0].picture) and "reward 0" not in _svg(frames[0].picture)
    assert "longest path has reward 4" in frames[1].caption and "A[2], A[3], A[4], A[8]" in frames[1].caption
    assert "reward 0" in _svg(frames[2].picture)
    assert "longest path has reward 3" in frames[3].caption
    assert "2 colour(s)" in frames[-1].caption
    st = viz.Stepper(frames)
    seen = set()
    for i, f in enumerate(frames):
        st.slider.value = i + 1
        shown = st.shown_html()
        assert st.caption == f.caption and f.caption.split(":")[0] in shown
        seen.add(shown)
    assert len(seen) == len(frames)
    st.play.value = 2
    assert st.slider.value == 2 and "round 1" in st.shown_html()
    # final frame: both colour classes drawn as borders
    final = _svg(frames[-1].picture)
    assert concurrency.class_color(0) in final and concurrency.class_color(1) in final


def test_schedule_gantt_and_access_lanes(slide23):
    _, out = slide23
    plan = ml.plan_memory(out)
    sched = simulate_schedule(plan.order, 2, implicit_dependencies(plan))
    fig = concurrency.schedule_gantt(sched["slots"], plan.storage, workers=2, title="t")
    assert len(fig.axes[0].patches) == len(sched["slots"]) == 7
    svg = _svg(fig)
    assert "makespan 7" in svg and "worker 1" in svg
    cvm = control_vs_mutation(plan)
    fig = concurrency.access_lanes(cvm["accesses"], plan.order)
    n_acc = sum(len(a) for a in cvm["accesses"].values())
    assert len(fig.axes[0].patches) == n_acc
    assert sorted(t.get_text() for t in fig.axes[0].texts).count("W") == sum(
        k == "write" for a in cvm["accesses"].values() for _, k in a)
    assert "storage #0" in _svg(fig)


def test_tradeoff_plot_groups_equal_points(slide23):
    _, out = slide23
    rows = concurrency_tradeoff(out, colors=(1, 2, 4))
    fig = concurrency.colors_tradeoff_plot(rows, label="2 workers")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "1" in texts and "2, 4" in texts                    # 2 and 4 colours give the same plan here
    viz.to_svg(fig)


def test_training_graph_puts_backward_beside_forward():
    m = ml.models.mlp2(batch=4, n_in=8, hidden=6, n_out=3)
    plan = ml.plan_memory(m["outputs"], trace=True)
    names = {g: f"{w.name}-grad" for w, g in zip(m["params"], m["grads"])}
    g = concurrency.draw_training_graph(m["outputs"], m["loss"], plan.storage, labels=names)
    src = g.source
    assert "cluster_fwd" in src and "cluster_bwd" in src and "dir=back" in src
    svg = _svg(g)
    assert "W1-grad" in svg and "sigmoid1 = sigmoid" in svg and "#0" in svg
    frames = concurrency.training_plan_frames(plan, m["loss"], labels=names)
    assert len(frames) == len(plan.steps) + 1
    assert "before planning" in frames[0].caption and "#0" not in _svg(frames[0].picture)
    assert "sigmoid1" in frames[2].caption and "in place" in frames[2].caption
    st = viz.Stepper(frames)
    seen = set()
    for i, f in enumerate(frames):
        st.slider.value = i + 1
        shown = st.shown_html()
        assert st.caption == f.caption
        assert (f"step {i}/" if i else "before planning") in shown
        seen.add(shown)
    assert len(seen) == len(frames)


def test_training_plan_captions_name_nodes_by_their_labels():
    """A step's note names the node it writes over as the drawing labels it: the ones the
    backward pass starts from, labelled out_grad, never by the name autodiff gave it."""
    m = ml.models.mlp2(batch=4, n_in=8, hidden=6, n_out=3)
    plan = ml.plan_memory(m["outputs"], trace=True)
    ones = next(n for n in ml.topo_order(m["outputs"]) if n.op.name == "full")
    frames = concurrency.training_plan_frames(plan, m["loss"], labels={ones: "out_grad"})
    on_ones = [f.caption for s, f in zip(plan.steps, frames[1:])
               if s.action == "inplace" and s.source is ones]
    assert on_ones and all("in-place on out_grad" in c for c in on_ones)
    assert ones.name != "out_grad" and not any(ones.name in f.caption for f in frames)


def test_slide29_bars_and_memory_curves():
    rows = [{"model": "m", "mode": "forward", "naive": 4.0, "inplace": 3.0, "co-share": 2.0, "both": 1.0,
             "slide": {"naive": 3.5, "inplace": 2.5, "co-share": 1.5, "both": 1.2}}]
    fig = concurrency.slide29_bars(rows, "forward")
    assert len(fig.axes[0].patches) == 4
    assert "slide p.29" in _svg(fig)
    curve = ml.models.resnet_curve(layers=(20, 40), batch=2)
    fig = concurrency.sharing_memory_curves(curve, {20: (1.0, 0.5, 0.25)}, xlabel="layers")
    labels = [l.get_label() for l in fig.axes[0].get_lines()]
    assert "memlab: sharing" in labels and "slide: in-place" in labels
    assert fig.axes[0].get_xscale() == "log"
    viz.to_svg(fig)


def test_slide29_figure_has_one_legend_under_both_panels():
    rows = [{"model": "m", "mode": mode, "naive": 4.0, "inplace": 3.0, "co-share": 2.0,
             "both": 1.0, "slide": {"naive": 3.5, "inplace": 2.5, "co-share": 1.5, "both": 1.2}}
            for mode in ("forward", "training")]
    fig = concurrency.slide29_figure(rows)
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    assert "slide p.29" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_runtime_total_curves_draw_each_assumption_and_the_slide():
    rows = [{"x": 10, "sharing": 1.0, "sharing total": 1.5}, {"x": 20, "sharing": 2.0,
                                                               "sharing total": 2.5}]
    more = [dict(r, **{"sharing total": r["sharing total"] + 1}) for r in rows]
    fig = concurrency.runtime_total_curves({"a": rows, "b": more}, {10: (3.0, 1.0), 20: (None, 2.0)})
    lines = {l.get_label(): l for l in fig.axes[0].get_lines()}
    assert list(lines["b"].get_ydata()) == [2.5, 3.5]
    assert list(lines["feature maps (sharing)"].get_ydata()) == [1.0, 2.0]
    assert list(lines["slide (b): sharing"].get_xdata()) == [10]

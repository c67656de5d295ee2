"""The pictures and steppers of lessons 02-03 (memlab.viz.plans), headless."""
from __future__ import annotations

import pytest

import memlab as ml
from memlab import viz
from memlab.viz import plans


@pytest.fixture
def slide22_plan():
    s = ml.models.slide22()
    return s, ml.plan_memory(s["G"], order=s["order"], trace=True)


def _svg(picture):
    return viz.to_svg(picture)


def test_plan_state_draws_tags_counts_and_box(slide22_plan):
    s, plan = slide22_plan
    step = plan.steps[3]  # E reuses B's tag; the box holds C's tag
    svg = _svg(plans.draw_plan_state(s["G"], {x.node: x.tag for x in plan.steps[:4]}, step.refcount, step.box,
                                     running=step.node, done=[x.node for x in plan.steps[:4]], order=plan.order))
    assert svg.startswith("<svg") and "box of free tags" in svg
    assert "E = pool(C)" in svg and "tag 0" in svg
    assert viz.color(step.box[0][0]).lower() in svg.lower()      # the free tag's square
    assert "stroke-dasharray" in svg                              # G's input edges: not completed yet


def test_planning_frames_follow_the_steps(slide22_plan):
    s, plan = slide22_plan
    frames = plans.planning_frames(plan)
    assert len(frames) == len(plan.steps) + 1 == 6
    assert "initial state" in frames[0].caption
    assert "cannot do in-place on B" in frames[2].caption
    assert "in place" in frames[5].caption
    with pytest.raises(ValueError):
        plans.planning_frames(plan, captions=["only one"])
    with pytest.raises(ml.PlanError, match="trace=True"):
        plans.planning_frames(ml.plan_memory(s["G"], order=s["order"]))


def test_slide22_stepper_moves_through_every_frame(slide22_plan):
    _, plan = slide22_plan
    caps = ["initial"] + [f"step {k}: x" for k in range(1, 6)]
    st = viz.Stepper(plans.planning_frames(plan, captions=caps))
    seen = []
    for i in range(6):
        st.slider.value = i + 1
        html = st.shown_html()
        assert caps[i] in html and st.caption == caps[i]
        seen.append(html)
    assert len(set(seen)) == 6
    st.play.value = 3
    assert st.slider.value == 3 and "frame 3 of 6: step 2: x" in st.shown_html()


def test_pool_blocks_replay_the_trace_and_draw():
    a, b = ml.placeholder("a"), ml.placeholder("b")
    out = ml.exp(ml.add(ml.mul(a, b, name="mul"), 3, name="add"), name="exp")
    ex = ml.Executor(out, memory="pool")
    ex.run({a: 4, b: 8})
    ev = ex.runner.pool.events
    assert plans.pool_blocks(ev, 0) == []
    after_free = plans.pool_blocks(ev, 3)   # mul, add allocated; mul freed
    assert [(x.id, x.in_use) for x in after_free] == [(0, False), (1, True)]
    end = plans.pool_blocks(ev)
    assert [(x.owner, x.in_use) for x in end] == [("exp", True), ("add", False)]
    svg = plans.draw_pool(after_free, title="pool")
    assert svg.startswith("<svg") and "free" in svg and "add" in svg and viz.color(1) in svg
    assert "no blocks yet" in plans.draw_pool([])
    # a stepper over the pool events: each frame shows its own caption
    frames = [viz.Frame(plans.draw_pool(plans.pool_blocks(ev, k)), f"event {k}") for k in range(len(ev) + 1)]
    st = viz.Stepper(frames)
    shown = set()
    for k in range(len(ev) + 1):
        st.slider.value = k + 1
        assert f"event {k}" in st.shown_html()
        shown.add(st.shown_html())
    assert len(shown) == len(ev) + 1


def test_release_events_remove_blocks():
    p = ml.MemoryPool()
    p.free(p.allocate(100, "x"))
    p.allocate(2000, "y")
    p.empty_cache()
    assert [(b.owner, b.size) for b in plans.pool_blocks(p.events)] == [("y", 2048)]


def test_timeline_layout_and_bars_render():
    m = ml.models.mlp(depth=2, batch=8, hidden=16)
    ex = ml.Executor(m["outputs"], memory="pool")
    ex.run(m["make_feed"](0))
    naive = ml.Executor(m["outputs"])
    naive.run(m["make_feed"](0))
    svg = _svg(plans.pool_timeline(ex.runner.pool.events, naive=[s.held for s in naive.stats.trace]))
    assert "peak reserved" in svg and "naive" in svg
    plan = ml.plan_memory(m["outputs"])
    lb = ml.live_bytes_lower_bound(plan)
    svg = _svg(plans.draw_layout(plan, lower_bound=lb))
    assert f"arena {plan.total_bytes:,} B" in svg and "lower bound" in svg
    assert "arena" in _svg(plans.draw_layout(ml.plan_offsets(m["outputs"])))
    svg = _svg(plans.bytes_bars({"naive": 10.0, "both": 4.0}, lower_bound=3.0))
    assert "naive" in svg and "lower bound" in svg


def test_draw_plan_state_without_counts_or_box():
    x = ml.placeholder("x", (2,))
    y = ml.exp(x, name="y")
    svg = _svg(plans.draw_plan_state(y, {y: 0}, refcount=None, box=None))
    assert "y = exp(x)" in svg and "box of free tags" not in svg


def test_bytes_against_draws_each_series_from_zero_with_the_mark_and_floor():
    series = {"naive": [3e6, 4e6, 6e6], "planned": [2e6, 2.5e6, 3.5e6]}
    fig = plans.bytes_against([8, 16, 32], series, mark=16, floor=1e6,
                              floor_label="weight gradients", xlabel="batch")
    ax = fig.axes[0]
    assert ax.get_ylim()[0] == 0 and ax.get_xlim()[0] == 0      # the fixed part is visible
    lines = {l.get_label(): l for l in ax.get_lines()}
    assert list(lines["naive"].get_ydata()) == [3.0, 4.0, 6.0]   # in MB
    assert "weight gradients" in lines and lines["weight gradients"].get_ydata()[0] == 1.0
    assert "batch" in _svg(fig)

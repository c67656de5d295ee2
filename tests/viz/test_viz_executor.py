"""The executor steppers of lessons 01-02 (memlab.viz.executor), headless."""
from __future__ import annotations

import html

import pytest

import memlab as ml
from memlab import viz
from memlab.viz import executor


@pytest.fixture
def slide12():
    a, b = ml.placeholder("a"), ml.placeholder("b")
    out = ml.exp(ml.add(ml.mul(a, b, name="mul"), 3, name="add-const"), name="exp")
    return a, b, out


def _step_through(frames):
    """Set a Stepper's slider to every value; return (caption, shown HTML) per value."""
    st = viz.Stepper(frames)
    seen = []
    for i in range(len(frames)):
        st.slider.value = i + 1
        assert st.play.value == i + 1                                 # widgets.link ties them
        seen.append((st.caption, st.shown_html()))
    return seen


def test_node_values_match_the_arithmetic(slide12):
    a, b, out = slide12
    values = executor.node_values(out, {a: 4, b: 8})
    by_name = {n.name: float(v) for n, v in values.items()}
    assert by_name["a"] == 4 and by_name["b"] == 8
    assert by_name["mul"] == 32 and by_name["add-const"] == 35      # slide p.12


def test_naive_stepper_allocates_first_then_runs(slide12):
    a, b, out = slide12
    ex = ml.Executor(out)
    ex.run({a: 4, b: 8})
    seen = _step_through(executor.naive_frames(ex, executor.node_values(out, {a: 4, b: 8})))
    assert len(seen) == 5                                           # start, allocate, three ops
    assert seen[0][0] == "Allocate nothing yet: the inputs a = 4 and b = 8 are given"
    # p.11: every intermediate gets its array before any op runs: 3 float32 scalars
    assert seen[1][0] == ("allocate: a fresh array for every one of the 3 intermediate values, "
                          "12 bytes of temporary memory, before any op runs")
    assert all(f"#{k}" in seen[1][1] for k in range(3)) and ">= 32<" not in seen[1][1]
    for k, name in enumerate(["mul", "add-const", "exp"], start=2):
        cap, shown = seen[k]
        assert cap == (f"traverse, step {k - 1}: run {name} into its array #{k - 2} (4 bytes); "
                       "temporary memory stays 12 bytes")
        assert html.escape(cap) in shown and shown.count("<svg") == 1
    assert len({shown for _, shown in seen}) == len(seen)           # the Output changes
    assert ">= 32<" in seen[2][1] and ">= 35<" in seen[3][1]           # the values as labels


def test_pool_stepper_follows_the_pool_events(slide12):
    a, b, out = slide12
    ex = ml.Executor(out, memory="pool")
    ex.run({a: 4, b: 8})
    events = ex.runner.pool.events
    seen = _step_through(executor.pool_frames(ex, executor.node_values(out, {a: 4, b: 8})))
    assert len(seen) == len(events) + 1 == 6
    caps = [c for c, _ in seen]
    assert caps[0] == "start: the inputs a = 4 and b = 8 are given, the pool is empty"
    assert caps[1].startswith("event 1: mul asks for 4 bytes, the pool needs a new block #0")
    assert caps[2].startswith("event 2: add-const asks for 4 bytes, the pool needs a new block #1")
    assert caps[3].startswith("event 3: mul's last consumer has run: block #0 goes back")
    assert caps[4].startswith("event 4: exp asks for 4 bytes, the pool recycles cached block #0")
    for cap, shown in seen:
        assert html.escape(cap) in shown and shown.count("<svg") == 2            # graph beside the pool
    assert "(no blocks yet)" in seen[0][1] and "(no blocks yet)" not in seen[1][1]
    assert len({shown for _, shown in seen}) == len(seen)


def test_frames_need_a_run_and_a_pool(slide12):
    a, b, out = slide12
    values = executor.node_values(out, {a: 4, b: 8})
    with pytest.raises(ml.MemlabError, match="call ex.run"):
        executor.naive_frames(ml.Executor(out), values)
    naive = ml.Executor(out)
    naive.run({a: 4, b: 8})
    with pytest.raises(ml.MemlabError, match="memory='pool'"):
        executor.pool_frames(naive, values)
    with pytest.raises(ml.MemlabError, match="no value for node"):
        executor.naive_frames(naive, {a: 4})

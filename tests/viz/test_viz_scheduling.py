"""Headless tests of the lesson 11-13 steppers and sliders (memlab/viz/scheduling.py): each control
is set to several values and the output or caption must change as an independent count predicts."""
from __future__ import annotations

import html
import re

import numpy as np
import pytest

from memlab import viz
from memlab.scheduling import mapping, taskgraph as tg
from memlab.scheduling.treebase import Tree

SMALL = Tree([-1, 0, 0, 0, 1, 1, 2, 2, 3], f=[1, 3, 2, 4, 2, 5, 1, 6, 3],
             m=[2, 1, 3, 1, 2, 1, 1, 2, 2])
WORK = [3.0, 2.0, 5.0, 1.0, 4.0, 2.0, 3.0, 6.0, 2.0]


def _walk_taskgraph(g, order):
    """Memory while each task runs, walking the order: live data + the task's outputs."""
    live, during = 0.0, []
    for t in order:
        out = sum(s for (u, _), s in g.size.items() if u == t)
        during.append(live + out)
        live += out - sum(s for (_, v), s in g.size.items() if v == t)
    return during


def _walk_tree(tree, order):
    """Memory while each node runs: outputs held (its children's among them) + m + f."""
    held, during = set(), []
    for v in order:
        during.append(sum(tree.f[x] for x in held) + tree.m[v] + tree.f[v])
        held -= set(tree.children[v])
        held.add(v)
    return during


def _check_stepper(stepper, labels, during):
    shown = set()
    for k in [0, *range(1, len(labels) + 1), 2, 0]:
        stepper.slider.value = k + 1          # frames count from 1
        page = stepper.shown_html()
        assert html.escape(stepper.caption) in page
        if k:
            want = f"run {labels[k - 1]}: memory {during[k - 1]:g} while it runs"
            assert want in stepper.caption
        else:
            assert "nothing run yet" in stepper.caption
        shown.add(page)
    assert len(shown) == len(labels) + 1, "every step shows a different frame"


@pytest.mark.parametrize("which", ["bad", "good"])
def test_taskgraph_stepper_steps_through_the_seed_orders(which):
    g = tg.sequential_example()
    order = tg.EXAMPLE_ORDERS[which]
    _check_stepper(viz.taskgraph_stepper(g, order, which), order, _walk_taskgraph(g, order))


def test_tree_stepper_steps_through_a_traversal():
    order = [4, 5, 1, 6, 7, 2, 8, 3, 0]
    names = [f"n{i}" for i in range(SMALL.n)]
    stepper = viz.tree_stepper(SMALL, order, "post-order", names=names)
    _check_stepper(stepper, [names[v] for v in order], _walk_tree(SMALL, order))


def _postorder(tree, v, kids):
    out = []
    for c in kids(v):
        out += _postorder(tree, c, kids)
    return out + [v]


@pytest.mark.parametrize("child_order", [None, [3, 2, 1], [2, 3, 1]])
def test_formula_frames_add_one_term_per_child(child_order):
    kids = child_order or SMALL.children[0]
    frames = viz.formula_frames(SMALL, child_order=child_order)
    assert len(frames) == len(kids) + 1
    for k, c in enumerate(kids):
        assert frames[k].caption.startswith(f"term {k + 1}: P_{c} ")
        assert frames[k].caption.count(";") == k + 1        # the terms so far, then "..."
    order = _postorder(SMALL, 0, lambda v: kids if v == 0 else SMALL.children[v])
    want = max(_walk_tree(SMALL, order))
    assert frames[-1].caption.endswith(f"= {want:g}")
    assert frames[-1].caption.startswith("root 0:")


def test_counterexample_explorer_follows_its_sliders():
    box = viz.counterexample_explorer()
    sb, sk, sm, se = box.sliders
    seen = set()
    for b, K, M, eps in [(2, 1, 12.0, 1.0), (3, 2, 60.0, 0.01), (5, 1, 60.0, 10 ** 0.25),
                         (4, 3, 100.0, 0.001)]:
        sb.value, sk.value, sm.value, se.value = b, K, M, eps
        text = box.children[-1].value
        eps = se.value                                   # the log slider's own value
        assert f"b={b}, K={K}, M={M:g}, eps={eps:g}" in text
        bpo, bt = M + eps + K * (b - 1) * M / b, M + eps + K * (b - 1) * eps
        assert f"M + eps + K(b-1)M/b  = {bpo:.4g}" in text
        assert f"M + eps + K(b-1)eps  = {bt:.4g}" in text
        shown = [float(x) for x in re.findall(r"(?:post-order|optimal)\s+([\d.e+-]+)", text)]
        assert shown == pytest.approx([float(f"{bpo:.4g}"), float(f"{bt:.4g}")], rel=1e-3)
        assert ("&gt; K" in text) == (bpo / bt > K)
        seen.add(text)
    assert len(seen) == 4


def test_counterexample_explorer_offers_only_trees_of_the_family():
    """Every value the sliders (and the page's flipbook) can take builds T_K: M > eps > 0 and
    b * eps <= M at the corners of the grid, and no frame is an error message."""
    from memlab.scheduling import treegen
    box = viz.counterexample_explorer()
    sb, sk, sm, se = box.sliders
    for b in (sb.min, sb.max):
        for M in (sm.min, sm.max):
            for e in (se.base ** se.min, se.base ** se.max):
                assert M > e > 0 and b * e <= M, (b, M, e)
                treegen.counterexample_peaks(b, 1, M, e)          # raises outside the family
    sm.value, se.value = 1.0, 100.0                 # clamped to the sliders' valid range
    assert sm.value == sm.min and se.value == pytest.approx(se.base ** se.max)
    page = box.flipbook()
    assert "need" not in page and "Error" not in page and page.count("best post-order") > 10


@pytest.mark.parametrize("P", [1, 3, 4])
def test_svg_gantt_draws_whole_processor_bars_and_a_cursor(P):
    s = mapping.proportional(SMALL, WORK, P)
    plain = viz.svg_gantt(s)
    assert plain.count("<rect") == sum(hi - lo for lo, hi in s.procs)
    assert plain.count(">P") == P and "<line" not in plain
    for t in (0.0, s.makespan / 3, s.makespan * 0.9):
        svg = viz.svg_gantt(s, t=t)
        running = [i for i in range(SMALL.n) if s.start[i] <= t < s.end[i]]
        later = [i for i in range(SMALL.n) if s.start[i] > t]
        assert svg.count('stroke="#c0392b" stroke-width="2"') == sum(
            s.procs[i][1] - s.procs[i][0] for i in running)
        faded = sum(s.procs[i][1] - s.procs[i][0] for i in later)
        assert svg.count('fill-opacity="0.25"') == faded
        assert svg.count("<line") == 1


def test_mapping_frames_caption_the_running_nodes_and_memory():
    s = mapping.memory_aware(SMALL, WORK, 4, 1.5 * mapping.sequential_minimum(SMALL), alpha=0.7)
    frames = viz.mapping_frames(s)
    times = sorted(set(s.start) | set(s.end))
    assert len(frames) == len(times)
    for t, fr in zip(times, frames):
        running = [i for i in range(SMALL.n) if s.start[i] <= t < s.end[i]]
        held = s.memory[max(k for k, x in enumerate(s.times) if x <= t + 1e-12)]
        want = f"t = {t:.3g}: running {running or 'nothing'}; memory held {held:g}"
        assert want in fr.caption
    assert "running nothing" in frames[-1].caption
    assert len({fr.picture for fr in frames}) == len(frames), "the cursor moves"


def test_mapping_explorer_follows_p_alpha_and_the_bound():
    box = viz.mapping_explorer(SMALL, WORK)
    sp, sa, sf = box.sliders
    out = box.children[-1]
    pages = set()
    for P, alpha, factor in [(1, 1.0, 1.0), (2, 0.5, 1.5), (4, 0.75, 2.0), (8, 0.5, 4.0)]:
        sp.value, sa.value, sf.value = P, alpha, factor
        page = out.value
        assert page.count(">P") == 3 * P, "three charts, one lane per processor"
        assert f"all-to-all: makespan {sum(WORK) / P ** alpha:.3g}," in page
        assert f"M_B = {factor:g} x {mapping.sequential_minimum(SMALL):g}" in page
        pages.add(page)
    assert len(pages) == 4


def _dominated(p, q):
    return q["makespan"] <= p["makespan"] and q["peak"] <= p["peak"] and (
        q["makespan"], q["peak"]) != (p["makespan"], p["peak"])


@pytest.mark.parametrize("alpha", [0.5, 1.0])
def test_pareto_points_and_tradeoff_plot(alpha):
    import matplotlib.pyplot as plt

    pts = mapping.tradeoff_points(SMALL, WORK, Ps=(1, 2, 4), alpha=alpha)
    front = viz.pareto_points(pts)
    assert all(not any(_dominated(p, q) for q in pts) for p in front)
    assert all(any(q["makespan"] <= p["makespan"] and q["peak"] <= p["peak"] for q in front)
               for p in pts)
    assert [p["makespan"] for p in front] == sorted(p["makespan"] for p in front)
    fig, ax = plt.subplots()
    got = viz.tradeoff_plot(pts, ax=ax, title="t", legend=False)
    assert got == front
    assert len(ax.lines) == len(pts) + 1 and len(ax.texts) == len(front)
    plt.close(fig)
    fig, ax = plt.subplots()
    viz.tradeoff_plot(pts, ax=ax, front=False)
    assert len(ax.lines) == len(pts) and not ax.texts
    assert len(ax.get_legend().texts) == 3 + 3
    plt.close(fig)
    assert np.isclose(min(p["peak"] for p in front), min(p["peak"] for p in pts))

"""Lesson 10's pictures: the unrolled model, replica storages, the technique stepper, tables."""
from __future__ import annotations

import memlab as ml
from memlab.memory import sharing
from memlab.viz import Stepper, sharing as vs
from memlab.viz.render import to_svg


def _plans():
    m = ml.models.seq2seq(2, 5, hidden=8, batch=4, vocab=7)
    outs = [m.loss, *m.grads()]
    order = m.order(outs)
    return {name: sharing.plan_sharing(outs, order, **r)
            for name, r in [("none", {}), ("horizontal", dict(horizontal=True))]}


def test_module_diagram_elides_long_recurrences():
    src = vs.module_diagram(ml.models.seq2seq(9, 2, hidden=4, batch=2, vocab=5)).source
    assert "encoder\nt=8" in src and "encoder\nt=5" not in src and "…" in src
    assert src.count("generator\nt=") == 2


def test_replica_grid_counts_the_storages_of_the_decoder():
    plans = _plans()
    for name, plan in plans.items():
        fig = vs.replica_grid(plan)
        used = {plan.storage[n] for n in plan.storage if n.scope and n.scope.module == "decoder"
                and not n.scope.backward and n.scope.step is not None}
        assert fig.axes[0].get_title() == f"decoder: {len(used)} storages"
        to_svg(fig)
    none, horiz = (vs.replica_grid(p).axes[0].get_title() for p in plans.values())
    assert int(horiz.split()[1]) < int(none.split()[1])


def test_technique_stepper_shows_every_technique_headless():
    stepper = Stepper(vs.technique_frames(_plans(), given=0))
    captions = []
    for k in range(len(stepper.frames)):
        stepper.slider.value = k + 1
        captions.append(stepper.caption)
    assert captions[0].startswith("none:") and captions[1].startswith("horizontal:")


def test_table_formats_bytes_and_counts():
    html = vs.table([{"a": "x", "nodes": 1234, "b": 3 * vs.MB}], ["a", "nodes", "b"], unit=vs.MB)
    assert "<td>1,234</td>" in html and "<td>3.00</td>" in html


def test_technique_panels_give_every_line_its_own_style_and_show_each_saving():
    from memlab.viz import sharing as vs_
    lengths = [10, 20]
    M = vs_.MB
    curves = {"a": [40 * M, 80 * M], "b": [39 * M, 79 * M], "c": [38 * M, 77 * M],
              "g": [20 * M, 30 * M]}
    fig = vs_.technique_panels(lengths, curves, ["a", "b", "c"], ["g"])
    left, mid, right = fig.axes
    styles = [(l.get_color(), l.get_marker(), l.get_linestyle()) for l in left.lines]
    assert len(styles) == 3 == len(set(styles))
    assert [round(p.get_width(), 6) for p in mid.patches] == [1.0, 2.0]   # 80 - 79, 79 - 77 MB
    assert [l.get_label() for l in right.lines] == ["c", "g"]
    import matplotlib.pyplot as plt
    plt.close(fig)

"""Lesson 16's drawings (memlab/viz/densenet.py): each shows what its data says."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from memlab.models import densenets as dn
from memlab.viz import densenet as vd


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def curve():
    return dn.depth_curve((1, 2), batch=1, image=32)


def test_variant_bars_stack_gradients_under_feature_maps():
    rows = dn.pleiss_variants(dn.densenet((1, 2), batch=1, image=32, growth=4))
    fig = vd.variant_bars(rows, "t")
    ax = fig.axes[0]
    bars = ax.patches
    assert len(bars) == 6                       # feature maps and gradients, three variants
    tops = sorted(round(b.get_y() + b.get_height(), 9) for b in bars[:3])
    assert tops == sorted(round(rows[v]["total"], 9) for v in vd.VARIANTS)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(vd.VARIANTS)


def test_depth_figure_marks_the_chosen_depth(curve):
    fig = vd.depth_figure(curve, 2)
    ax = fig.axes[0]
    assert ax.get_title().startswith("2 layers a block")
    assert len(ax.get_lines()) == 5             # three variants, concat + BN, the marker
    naive = ax.get_lines()[0].get_ydata()
    assert list(naive) == [r["naive total"] for r in curve]

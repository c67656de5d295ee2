"""memlab's tree traversals against the plain reference of bench/tree_reference.py (written from the
slides, sharing no code with memlab): equal peaks for Liu's optimal traversal and the best
post-order on random small trees, and each memlab order reaches its peak when simulated."""
from __future__ import annotations

import pathlib
import sys

import pytest
from hypothesis import given, settings

from memlab.scheduling.liu import optimal_traversal
from memlab.scheduling.postorder import best_postorder
from memlab.scheduling.treebase import Tree
from memlab.scheduling.trees import peak
from strategies import trees_data

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
ref = pytest.importorskip("tree_reference", reason="bench/ is not in a student copy of the course "
                          "(memlab release)")


@settings(max_examples=300, deadline=None)
@given(trees_data(1, 14))
def test_same_peaks_as_the_reference(data):
    par, f, m = data
    tree = Tree(par, f, m)
    order, least = optimal_traversal(tree)
    ref_order, ref_least = ref.optimal_traversal(par, f, m)
    assert least == pytest.approx(ref_least, abs=1e-9)
    assert peak(tree, order) == pytest.approx(least, abs=1e-9)
    assert peak(tree, ref_order) == pytest.approx(ref_least, abs=1e-9)
    po, po_peak = best_postorder(tree)
    ref_po, ref_po_peak = ref.best_postorder(par, f, m)
    assert po_peak == pytest.approx(ref_po_peak, abs=1e-9)
    assert peak(tree, po) == pytest.approx(po_peak, abs=1e-9)
    assert least <= po_peak + 1e-9

"""memlab's tree traversals against the plain reference of bench/tree_reference.py (written from the
slides, sharing no code with memlab): equal peaks for Liu's optimal traversal and the best
post-order on random small trees, and each memlab order reaches its peak when simulated."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest
from hypothesis import given, settings

from memlab.scheduling.liu import optimal_traversal
from memlab.scheduling.postorder import best_postorder
from memlab.scheduling.treebase import Tree
from memlab.scheduling.trees import peak
from strategies import trees_data

# loaded by its path: with bench/ on sys.path, bench/cuda.py would shadow the CUDA bindings that
# numba looks for as ``cuda`` in every later test of the same process
REFERENCE = pathlib.Path(__file__).resolve().parents[2] / "bench" / "tree_reference.py"
if not REFERENCE.exists():
    pytest.skip("bench/ is not in a student copy of the course (memlab release)",
                allow_module_level=True)
_spec = importlib.util.spec_from_file_location("tree_reference", REFERENCE)
ref = importlib.util.module_from_spec(_spec)
sys.modules["tree_reference"] = ref           # dataclasses and pickling look their module up
_spec.loader.exec_module(ref)


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

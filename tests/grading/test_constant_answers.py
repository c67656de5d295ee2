"""Constant and tabulated answers earn nothing: an answer that returns what the fixed inputs of a
check expect, without the work the question asks, scores 0 on its question."""
from __future__ import annotations

from pathlib import Path

import pytest

from memlab.grading import grade

from test_alternatives import notebook_with

ROOT = Path(__file__).resolve().parents[2]

CONSTANT = {
    "07_chain_dp": {
        "q1_min_forwards": "def min_forwards(l, M):\n    return math.inf\n",
        "q2_schedule": "def optimal_schedule(l, M):\n    raise ml.BudgetError('too few')\n",
    },
    "08_hetero_chain": {
        "q2_schedule": "def hetero_schedule(sizes, costs, budget):\n"
                       "    raise ml.BudgetError('too few')\n",
    },
    "12_trees": {
        "q1_postorder_peak": "def postorder_peak(tree, children):\n    return 2.0\n",
        "q3_postorder_sequence": "def postorder_sequence(tree, children):\n"
                                 "    return list(range(tree.n - 1, -1, -1))\n",
    },
    "01_executor": {
        # the value of the visible check's fixed input exp(4*8+3), and 12 bytes
        "q2_run_naive": "def run_naive(outputs, feed):\n"
                        "    return [np.exp(np.float32(35))] * len(outputs), 12\n",
        # a wrong gradient that reads the sigmoid's output
        "q4_sigmoid_gradient": "def sigmoid_gradient(node, grad):\n    return [grad * node]\n",
    },
}


@pytest.mark.parametrize("exercise", sorted(CONSTANT))
def test_constant_answers_score_zero(exercise, tmp_path):
    path = notebook_with(exercise, CONSTANT[exercise], tmp_path)
    result = grade(path, solution=ROOT / "solutions" / f"{exercise}.ipynb", timeout=60,
                   isolate=False)
    for qid in CONSTANT[exercise]:
        assert result.questions[qid].score == 0, f"{exercise}: a constant {qid} earned points\n" + \
            result.feedback()

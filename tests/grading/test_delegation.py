"""An answer that only calls memlab's own version of what a question asks for scores 0 there."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from memlab.grading import grade

ROOT = Path(__file__).resolve().parents[2]

#: exercise -> {question id: an answer that delegates to the library}
DELEGATING = {
    "01_executor": {
        "q1_topo_sort": "def topo_sort(outputs):\n    return ml.topo_order(outputs)\n",
        "q2_run_naive": "def run_naive(outputs, feed):\n    ex = ml.Executor(outputs)\n"
                        "    return ex.run(feed), ex.stats.allocated_bytes\n",
        "q3_mul_gradient": "def mul_gradient(node, grad):\n    return node.op.gradient(node, grad)\n",
        "q4_sigmoid_gradient": "def sigmoid_gradient(node, grad):\n"
                               "    return ml.gradients(node, [node.inputs[0]], grad)\n",
    },
    "06_sqrt_segments": {
        "q1_forward": "def forward_values(outputs):\n"
                      "    return [n for n in ck.forward_nodes_of(outputs) if n is not outputs[0]]\n",
        "q2_sqrt": "def sqrt_segments(outputs):\n    return ck.sqrt_checkpoints(outputs)\n",
    },
    "07_chain_dp": {
        "q1_min_forwards": "def min_forwards(l, M):\n    return ck.optimal_forwards(l, M)\n",
        "q2_schedule": "from memlab.checkpoint import optimal\n\n"
                       "def optimal_schedule(l, M):\n    return optimal(l, M).actions\n",
    },
    "11_min_peak": {
        "q1_held": "def held(graph, done):\n"
                   "    first = [t for t in graph.topological_order() if t in done]\n"
                   "    rest = [t for t in graph.topological_order() if t not in done]\n"
                   "    _, after = tg.memory_profile(graph, first + rest)\n"
                   "    return after[len(first) - 1] if first else 0.0\n",
        "q3_min_peak": "def min_peak(graph):\n"
                       "    best = tg.min_peak_order(graph)\n"
                       "    return best.peak, best.order\n",
    },
    "10_horizontal_sharing": {
        "q1_lifetimes": "def lifetimes(order, outputs):\n"
                        "    return ml.memory.lifetimes(order, outputs)\n",
        "q3_plan": "def horizontal_plan(outputs, order):\n"
                   "    def key(n):\n"
                   "        return (n.scope.backward, n.scope.role) if decoder_replica(n) else n\n"
                   "    return ml.plan_memory(outputs, inplace=False, order=order, group=key,\n"
                   "                          match='exact')\n",
    },
}


@pytest.mark.parametrize("exercise", sorted(DELEGATING))
def test_delegating_answers_score_zero(exercise, tmp_path):
    nb = nbformat.read(ROOT / "exercises" / f"{exercise}.ipynb", as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("memlab", {})
        if meta.get("kind") == "answer" and meta.get("id") in DELEGATING[exercise]:
            cell.source = DELEGATING[exercise][meta["id"]]
    path = tmp_path / f"{exercise}.ipynb"
    nbformat.write(nb, path)
    result = grade(path, solution=ROOT / "solutions" / f"{exercise}.ipynb", timeout=60)
    for qid in DELEGATING[exercise]:
        assert result.questions[qid].score == 0, f"{exercise}: delegating {qid} earned points"

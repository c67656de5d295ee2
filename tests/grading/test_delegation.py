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
    "02_pool": {
        "q1_round_up": "from memlab.memory.pool import round_size\n\n"
                       "def round_up(nbytes):\n    return round_size(nbytes)\n",
        "q2_pool": "class BestFitPool:\n"
                   "    def __init__(self):\n"
                   "        self.pool = ml.MemoryPool(trace=False)\n"
                   "        self.sizes, self.in_use, self.cached = {}, set(), set()\n"
                   "    def allocate(self, n):\n"
                   "        b = self.pool.allocate(n)\n"
                   "        self.sizes[b.id] = b.size\n"
                   "        return b.id\n"
                   "    def free(self, i):\n"
                   "        if i not in self.pool.blocks or not self.pool.blocks[i].in_use:\n"
                   "            raise ValueError(f'block {i} is not in use')\n"
                   "        self.pool.free(self.pool.blocks[i])\n"
                   "    reserved = property(lambda self: self.pool.stats.bytes_reserved)\n"
                   "    peak_reserved = property(lambda self: self.pool.stats.peak_reserved)\n"
                   "    new_blocks = property(lambda self: self.pool.stats.new_blocks)\n"
                   "    from_pool = property(lambda self: self.pool.stats.from_pool)\n",
        "q3_run_with_pool": "class _Stats:\n"
                            "    def __init__(self, pool):\n"
                            "        s = pool.stats\n"
                            "        self.peak_reserved, self.new_blocks = s.peak_reserved, s.new_blocks\n"
                            "        self.from_pool = s.from_pool\n"
                            "        self.in_use = {b.id for b in pool.blocks.values() if b.in_use}\n\n"
                            "def run_with_pool(outputs, feed):\n"
                            "    ex = ml.Executor(outputs, memory='pool')\n"
                            "    return ex.run(feed), _Stats(ex.runner.pool)\n",
    },
    "03_planner": {
        "q1_refcounts": "def reference_counts(order):\n"
                        "    return ml.memory.reference_counts(order)\n",
        "q2_plan_tags": "def plan_tags(outputs, order, inplace=True, share=True):\n"
                        "    p = ml.plan_memory(outputs, order=order, inplace=inplace, share=share,\n"
                        "                       trace=True)\n"
                        "    return p.storage, p.storage_bytes, [(s.node, s.action) for s in p.steps]\n",
        "q3_live_bytes": "def live_bytes(outputs, order):\n"
                         "    p = ml.plan_memory(outputs, order=order, inplace=False)\n"
                         "    return ml.live_bytes_lower_bound(p)\n",
    },
    "04_coloring": {
        "q2_color_nodes": "def color_nodes(order, colors):\n"
                          "    return ml.coloring.node_colors(order, colors)\n",
        "q3_implicit": "def implicit_dependencies(plan):\n"
                       "    return set(ml.coloring.implicit_dependencies(plan))\n",
    },
    "12_trees": {
        "q1_postorder_peak": "def postorder_peak(tree, children):\n"
                             "    return trees.postorder_peak(tree, children)\n",
        "q2_liu_children": "from memlab.scheduling.postorder import best_child_order\n\n"
                           "def liu_children(tree):\n    return best_child_order(tree)[0]\n",
        "q3_postorder_sequence": "def postorder_sequence(tree, children):\n"
                                 "    return trees.postorder_from_children(tree, children)\n",
    },
    "05_training_plan": {
        "q1_saved": "def saved_for_backward(outputs, loss):\n"
                    "    fwd = ml.topo_order(loss)\n"
                    "    order = fwd + [n for n in ml.topo_order(outputs) if n not in set(fwd)]\n"
                    "    life = ml.memory.lifetimes(order, outputs)\n"
                    "    return [n.name for n in fwd\n"
                    "            if n in life and n not in outputs and life[n][1] >= len(fwd)]\n",
        "q2_order": "def training_order(outputs):\n    return ml.memory_order(outputs)\n",
        "q3_explain": "def explain_bytes(plan, loss):\n"
                      "    p = ml.plan_memory(plan.outputs, order=plan.order, trace=True)\n"
                      "    fwd = set(ml.topo_order(loss))\n"
                      "    shares, by_pass = {}, {'forward': 0, 'backward': 0}\n"
                      "    for s in p.steps:\n"
                      "        if s.action == 'new':\n"
                      "            side = 'forward' if s.node in fwd else 'backward'\n"
                      "            by_pass[side] += p.storage_bytes[s.tag]\n"
                      "        shares.setdefault(s.tag, []).append(s.node.name)\n"
                      "    return shares, by_pass\n",
    },
    "06_sqrt_segments": {
        "q1_forward": "def forward_values(outputs):\n"
                      "    return [n for n in ck.forward_nodes_of(outputs) if n is not outputs[0]]\n",
        "q2_sweep": "def sweep(outputs):\n"
                    "    out = {}\n"
                    "    for k in range(1, len(forward_values(outputs)) + 1):\n"
                    "        new = ck.recompute_graph(outputs, ck.every_k(outputs, k))\n"
                    "        out[k] = (ml.plan_offsets(new, order=ml.topo_order(new)).total_bytes,\n"
                    "                  len(ck.recomputed_nodes(new)))\n"
                    "    return out\n",
        "q3_choose_k": "def choose_k(outputs, budget=None):\n"
                       "    keep = ck.memonger(outputs, budget)\n"
                       "    values = forward_values(outputs)\n"
                       "    return len(values) // max(1, len(keep))\n",
    },
    "07_chain_dp": {
        "q1_min_forwards": "def min_forwards(l, M):\n    return ck.optimal_forwards(l, M)\n",
        "q2_schedule": "from memlab.checkpoint import optimal\n\n"
                       "def optimal_schedule(l, M):\n    return optimal(l, M).actions\n",
    },
    "08_hetero_chain": {
        "q1_min_time": "def min_time(sizes, costs, budget):\n"
                       "    try:\n"
                       "        return ck.optimal_hetero(ck.hetero_chain(sizes, costs), budget).forward_time\n"
                       "    except ml.BudgetError:\n"
                       "        return math.inf\n",
        "q2_schedule": "def hetero_schedule(sizes, costs, budget):\n"
                       "    return ck.optimal_hetero(ck.hetero_chain(sizes, costs), budget).actions\n",
    },
    "09_pipeline_memory": {
        "q1_memory": "def gpipe_memory(params, acts, inputs, S, M, batch, remat=False):\n"
                     "    model = ck.parallel.Model(list(params), list(acts), list(inputs))\n"
                     "    return ck.parallel.pipeline_memory(model, S, M, batch, remat=remat)\n",
        "q2_bubble": "def pipeline_bubble(fwd, bwd, M):\n"
                     "    return ck.parallel.bubble_fraction(len(fwd), M)\n",
    },
    "13_mapping": {
        "q1_subtree_work": "def subtree_work(tree, w):\n    return mapping.subtree_work(tree, w)\n",
        "q2_proportional_shares": "def proportional_shares(tree, w, P):\n"
                                  "    W = mapping.subtree_work(tree, w)\n"
                                  "    p = [0.0] * tree.n\n"
                                  "    p[tree.root] = float(P)\n"
                                  "    for v in tree.bfs:\n"
                                  "        tot = sum(W[c] for c in tree.children[v])\n"
                                  "        for c in tree.children[v]:\n"
                                  "            p[c] = p[v] * W[c] / tot\n"
                                  "    return p\n",
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
    "16_real_networks": {
        "q2_count": "def count_by_hand(widths, batch):\n"
                    "    m = ml.models.from_onnx(build_mlp(widths, batch))\n"
                    "    fwd = [n for n in ml.topo_order(m['output']) if n.op.computes]\n"
                    "    return m['parameters'], sum(n.nbytes for n in fwd)\n",
        "q3_checkpoints": "def checkpoints_within(widths, batch, budget):\n"
                          "    m = ml.models.from_onnx(build_mlp(widths, batch))\n"
                          "    step = ml.models.training_outputs(m)\n"
                          "    return {n.name for n in ck.memonger(step, budget)}\n",
    },
    "15_paged_kv_cache": {   # q1 is a ceiling division: nothing in the library to delegate to
        "q2_paged": "class PagedKVCache(kvcache.PagedAllocator):\n"
                    "    def free_count(self):\n"
                    "        return len(self.free_list)\n"
                    "    def admit(self, rid, tokens):\n"
                    "        self.free_list.sort(reverse=True)\n"
                    "        return super().admit(rid, tokens)\n"
                    "    def append(self, rid):\n"
                    "        self.free_list.sort(reverse=True)\n"
                    "        return self.grow(rid, self.lengths[rid] + 1)\n"
                    "    def free(self, rid):\n"
                    "        self.release(rid)\n",
        "q3_prefix": "class PrefixKVCache(PagedKVCache):\n    pass\n",
    },
}


#: exercise -> answers the delegating ones build on, taken from the solution (not graded here)
SUPPORT = {"16_real_networks": ("q1_build_mlp",)}


def _solution_answer(exercise, qid):
    nb = nbformat.read(ROOT / "solutions" / f"{exercise}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("memlab", {}).get("id") == qid)
    return "\n".join(line for line in cell.source.split("\n")
                     if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def _delegating_notebook(exercise, folder):
    answers = dict(DELEGATING[exercise])
    answers.update({qid: _solution_answer(exercise, qid) for qid in SUPPORT.get(exercise, ())})
    nb = nbformat.read(ROOT / "exercises" / f"{exercise}.ipynb", as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("memlab", {})
        if meta.get("kind") == "answer" and meta.get("id") in answers:
            cell.source = answers[meta["id"]]
    path = folder / f"{exercise}.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("exercise", sorted(DELEGATING))
def test_delegating_answers_score_zero(exercise, tmp_path):
    path = _delegating_notebook(exercise, tmp_path)
    result = grade(path, solution=ROOT / "solutions" / f"{exercise}.ipynb", timeout=60)
    for qid in DELEGATING[exercise]:
        assert result.questions[qid].score == 0, f"{exercise}: delegating {qid} earned points"


def test_a_table_built_when_the_answer_cell_runs_scores_zero(tmp_path):
    """Exercise 07 refuses memlab's solvers while the answer cells run (its solution's ``forbid``
    metadata), so a table of their answers cannot be built outside the hidden tests' ``forbid``."""
    nb = nbformat.read(ROOT / "exercises" / "07_chain_dp.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("memlab", {}).get("id") == "q1_min_forwards":
            cell.source = ("_T = {(l, M): ck.optimal_forwards(l, M) for l in range(1, 61) for M in range(1, 13)}\n"
                           "def min_forwards(l, M):\n    return _T[(l, M)]\n")
    path = tmp_path / "07_chain_dp.ipynb"
    nbformat.write(nb, path)
    result = grade(path, solution=ROOT / "solutions" / "07_chain_dp.ipynb", timeout=60)
    assert result.questions["q1_min_forwards"].score == 0, result.feedback()
    assert "WriteItYourself" in result.feedback() or "'min_forwards' is not defined" in result.feedback()


#: exercise 14: answers that compute with numpy instead of the kernel: the judge launches the
#: student's kernels itself on device arrays it makes and reads the results back, so a kernel that
#: does nothing earns nothing, whatever the numpy beside it returns
GPU_SHORTCUTS = {
    "q1_bias_relu": "def bias_relu(x, b):\n    return np.maximum(x + b, 0)\n",
    "q2_row_sum": "@cuda.jit\ndef row_sum_kernel(x, out):\n    pass\n\n"
                  "row_sums = lambda x: x.sum(1)\n",
}


def test_gpu_answers_without_the_kernel_score_zero(tmp_path):
    nb = nbformat.read(ROOT / "exercises" / "14_gpu_kernels.ipynb", as_version=4)
    for cell in nb.cells:
        qid = cell.metadata.get("memlab", {}).get("id")
        if qid in GPU_SHORTCUTS:
            cell.source = GPU_SHORTCUTS[qid]
    path = tmp_path / "14_gpu_kernels.ipynb"
    nbformat.write(nb, path)
    result = grade(path, solution=ROOT / "solutions" / "14_gpu_kernels.ipynb", timeout=120)
    assert result.score == 0, result.feedback()


#: make test runs exercise 12's (whose visible checks once passed the refused answer); the others run in
#: make test-extended, which CI runs too (.ci/run)
@pytest.mark.parametrize("exercise", [
    pytest.param(e, marks=() if e.startswith("12") else pytest.mark.extended)
    for e in sorted(DELEGATING)])
def test_visible_checks_refuse_delegating_answers(exercise, tmp_path):
    """A visible check never passes what the hidden tests refuse: run in ``memlab check-work``,
    every delegating answer fails a visible check of its question, which names the refused
    function (WriteItYourself)."""
    from memlab.grading import check_work

    result = check_work(_delegating_notebook(exercise, tmp_path), timeout=60)
    for qid in DELEGATING[exercise]:
        tests = [t for t in result.tests if t.question == qid]
        assert tests, f"{exercise}: {qid} has no visible check"
        passed = all((all(c.passed for c in t.checks) if t.checks else t.passed) for t in tests)
        assert not passed, f"{exercise}: the delegating {qid} passes every visible check"
    assert "WriteItYourself" in result.feedback() or "write it yourself" in result.feedback()

"""Minimum I/O volume of an order under memory shortage (the scheduling slides, "Research
problems"): furthest-in-the-future eviction against an exhaustive search over every eviction."""
from __future__ import annotations

import itertools
from functools import lru_cache

import pytest

from memlab.errors import BudgetError, TreeError
from memlab.scheduling.iovolume import io_floor, io_volume, tree_taskgraph
from memlab.scheduling.taskgraph import TaskGraph, peak, random_taskgraph, sequential_example
from memlab.scheduling.treebase import peak as tree_peak
from memlab.scheduling.liu import optimal_traversal
from memlab.scheduling.postorder import best_postorder
from memlab.scheduling.treegen import random_tree


def least_volume(g: TaskGraph, order: list, M: int) -> float:
    """Exhaustive search: before each task, write any whole number of bytes of any datum it does
    not read (as long as the task then fits), read its inputs back, run it; the least total."""
    @lru_cache(maxsize=None)
    def best(k: int, state: tuple) -> float:
        if k == len(order):
            return 0.0
        t = order[k]
        res = dict(state)                        # datum -> bytes in memory (live data only)
        inputs = [(u, t) for u in g.pred[t]]
        others = [e for e in res if e[1] != t]
        base = g.out_size(t) + g.memory[t] + sum(g.size[e] for e in inputs)
        out = float("inf")
        for cut in itertools.product(*(range(int(res[e]) + 1) for e in others)):
            if sum(res[e] - c for e, c in zip(others, cut)) + base > M:
                continue
            nxt = {e: res[e] - c for e, c in zip(others, cut)}
            nxt.update({(t, v): g.size[(t, v)] for v in g.succ[t]})
            out = min(out, sum(cut) + best(k + 1, tuple(sorted(nxt.items(), key=repr))))
        return out

    return best(0, ())


def graphs():
    yield "slides' example", sequential_example()
    for seed in range(6):
        g = random_taskgraph(6, 0.45, seed=seed, max_size=3)
        yield f"random {seed}", g
    t = random_tree(7, "recursive", seed=3, f_range=(1, 3), m_range=(0, 1))
    yield "tree", tree_taskgraph(t)


@pytest.mark.parametrize("name,g", list(graphs()), ids=[n for n, _ in graphs()])
def test_furthest_in_the_future_writes_the_least(name, g):
    order = g.topological_order()
    lo, hi = int(io_floor(g, order)), int(peak(g, order))
    for M in range(lo, hi + 1):
        got = io_volume(g, order, M)
        assert got.peak <= M + 1e-9
        assert got.volume == pytest.approx(least_volume(g, order, M))
        for rule in ("oldest", "largest"):         # the others can only write more
            assert io_volume(g, order, M, rule).volume >= got.volume - 1e-9
    assert io_volume(g, order, hi).volume == 0 and io_volume(g, order, hi).peak == hi


def test_a_rule_that_ignores_the_future_writes_more_somewhere():
    worse = [(M, io_volume(g, g.topological_order(), M, "oldest").volume
              - io_volume(g, g.topological_order(), M).volume)
             for _, g in graphs()
             for M in range(int(io_floor(g, g.topological_order())),
                            int(peak(g, g.topological_order())))]
    assert any(d > 0 for _, d in worse)


def test_tree_taskgraph_keeps_the_trees_peak():
    t = random_tree(30, "recursive", seed=2, f_range=(1, 9), m_range=(0, 5))
    g = tree_taskgraph(t)
    for order in (g.topological_order(), best_postorder(t)[0], optimal_traversal(t)[0]):
        assert peak(g, order) == pytest.approx(tree_peak(t, order))


def test_memory_below_the_floor_names_the_task():
    g = sequential_example()
    order = list("ACBEDF")
    floor = io_floor(g, order)
    with pytest.raises(BudgetError, match="task .* needs"):
        io_volume(g, order, floor - 1)
    with pytest.raises(TreeError, match="rule must be one of"):
        io_volume(g, order, floor, "random")

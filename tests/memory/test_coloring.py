"""Concurrency vs memory (p.23-25): implicit dependencies, colouring, schedules, control vs mutation."""
from hypothesis import given, settings

from memlab.memory.checkplan import check_plan
from memlab.memory.coloring import (concurrency_tradeoff, control_vs_mutation, implicit_dependencies,
                             longest_path_coloring, node_colors, simulate_schedule)
from memlab.graph import topo_order
from memlab.models import slide23, slide24
from memlab.memory.planner import plan_memory
from strategies import random_dags


def _names(edges):
    return {(a.name, b.name) for a, b in edges}


def test_slide23_sharing_serialises_the_branches():
    g = slide23()
    plan = plan_memory(g["A[8]"])
    # A[5] takes the tag of A[3], which A[4] reads: A[5] must wait for A[4]
    assert _names(implicit_dependencies(plan)) == {("A[4]", "A[5]")}
    rows = {r["colors"]: r for r in concurrency_tradeoff(g["A[8]"])}
    assert rows[1]["makespan"] == 7 and rows[1]["makespan_data_only"] == 4
    assert rows[2]["makespan"] == 4 and rows[2]["implicit"] == []
    assert rows[1]["total_bytes"] < rows[2]["total_bytes"] <= rows[4]["total_bytes"]


def test_slide24_longest_path_first():
    g = slide23()
    col = longest_path_coloring(g["A[8]"], 2)
    first = {n.name for n in col["paths"][0]}
    assert first == {"A[2]", "A[3]", "A[4]", "A[8]"}
    assert {n.name for n in col["paths"][1]} == {"A[5]", "A[6]", "A[7]"}


def test_slide25_control_vs_mutation_agree():
    g = slide23()
    res = control_vs_mutation(plan_memory(g["A[8]"]))
    assert _names(res["control_deps"]) == {("A[4]", "A[5]")}
    assert res["makespan_control"] == res["makespan_mutation"] == 7
    assert res["data_only"] == 4
    kinds = {tag: [k for _, k in acc] for tag, acc in res["accesses"].items()}
    assert all(acc[0] == "write" for acc in kinds.values())


@settings(deadline=None, max_examples=30)
@given(random_dags())
def test_schedules_respect_dependencies(dag):
    outs, _ = dag
    for k in (1, 2, 4):
        plan = plan_memory(outs, colors=k)
        check_plan(plan)
        extra = implicit_dependencies(plan)
        sched = simulate_schedule(plan.order, 2, extra)
        end = {n: e for n, _, _, e in sched["slots"]}
        start = {n: s for n, _, s, _ in sched["slots"]}
        for n in end:
            for x in n.inputs:
                if x in end:
                    assert start[n] >= end[x]
        for a, b in extra:
            assert start[b] >= end[a]
        data = simulate_schedule(plan.order, 2)["makespan"]
        assert data <= sched["makespan"] <= len(end)
        mut = control_vs_mutation(plan)
        assert mut["makespan_mutation"] == mut["makespan_control"] or mut["makespan_mutation"] >= data
        colors = node_colors(plan.order, k)
        assert set(colors.values()) <= set(range(k))


def test_slide24_rebuilt_graph_colours_as_the_slide_counts():
    """p.24: ten rewards of 1; the first longest path takes seven, the next the other three. The
    path lengths are checked by brute force over every source-to-sink path of the graph."""
    g = slide24()
    ops = [n for n in topo_order(g["n7"]) if not n.is_leaf]
    assert len(ops) == 10

    def paths(node):                       # every path of ops ending at node
        ins = [x for x in node.inputs if not x.is_leaf]
        return [[node]] if not ins else [p + [node] for x in ins for p in paths(x)]
    assert max(len(p) for p in paths(g["n7"])) == 7
    rounds = longest_path_coloring(g["n7"], colors=3)["paths"]
    assert [len(p) for p in rounds] == [7, 3, 0]
    assert {n.name for n in rounds[1]} == {"n8", "n9", "n10"}

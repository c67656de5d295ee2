"""Trees and task graphs as plain data (what the grader's judge sends to a student's kernel): each
comes back equal, with the same orders, and a malformed description is a TreeError."""
from __future__ import annotations

import json

import pytest

from memlab import taskgraph as tg, trees
from memlab.errors import TreeError
from memlab.grading import codec
from memlab.scheduling.taskgraph import TaskGraph
from memlab.scheduling.treebase import Tree


@pytest.mark.parametrize("seed", range(6))
def test_a_tree_round_trips_through_the_wire(seed):
    t = trees.random_tree(40, ("recursive", "deep", "bushy")[seed % 3], seed=seed,
                          f_range=(0, 9), m_range=(0, 5))
    back = Tree.from_plain(codec.decode(codec.encode(t.to_plain())))
    assert (back.parent, back.f, back.m) == (t.parent, t.f, t.m)
    assert back.children == t.children and back.bfs == t.bfs and back.root == t.root
    assert trees.best_postorder(back)[1] == trees.best_postorder(t)[1]


@pytest.mark.parametrize("graph", [tg.sequential_example(), tg.random_taskgraph(9, 0.4, seed=3),
                                   TaskGraph.from_edges([("b", "a", 2.5)], durations={"b": 3.0},
                                                        memory={"a": 1.0}, tasks=["b", "a"])])
def test_a_task_graph_round_trips_through_the_wire(graph):
    back = TaskGraph.from_plain(codec.decode(codec.encode(graph.to_plain())))
    assert back.tasks == graph.tasks and back.size == graph.size
    assert list(back.size) == list(graph.size)                    # edges in the same order
    assert back.duration == graph.duration and back.memory == graph.memory
    assert back.succ == graph.succ and back.pred == graph.pred
    assert tg.min_peak_order(back).peak == tg.min_peak_order(graph).peak
    json.dumps(codec.to_wire(graph.to_plain()))                  # plain JSON-able data


@pytest.mark.parametrize("cls, data, match", [
    (Tree, [[-1, 0]], "a plain tree is a dict"),
    (Tree, {"parent": [-1, 0], "f": [1, 1]}, "a plain tree is a dict"),
    (Tree, {"parent": [1, 0], "f": [1, 1], "m": [0, 0]}, "no root"),
    (TaskGraph, {"tasks": [1], "duration": [1.0], "memory": []}, "a plain task graph is a dict"),
    (TaskGraph, {"tasks": [1], "duration": [1.0], "memory": [], "edges": []}, "one memory per task"),
    (TaskGraph, {"tasks": [1, 2], "duration": [1, 1], "memory": [0, 0], "edges": [[1, 2]]},
     "an edge is"),
    (TaskGraph, {"tasks": [1, 2], "duration": [1, 1], "memory": [0, 0], "edges": [[1, 3, 1]]},
     "unknown task 3"),
])
def test_a_malformed_description_is_refused(cls, data, match):
    with pytest.raises(TreeError, match=match):
        cls.from_plain(data)

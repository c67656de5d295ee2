"""Task graphs with data on edges: sequential peak, exact search, list scheduling (seed 002)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings

from memlab.errors import MemlabError, TreeError
from memlab.scheduling.listsched import bottom_levels, list_schedule
from memlab.scheduling.taskgraph import TaskGraph, memory_profile, min_peak_order, peak, sequential_example

from strategies import all_topological_orders as all_orders, dags_data


def build(data):
    names, edges, dur, mem = data
    return TaskGraph.from_edges(edges, durations=dur, memory=mem, tasks=names)


def sim_peak(names, edges, mem, order):
    """Independent recount: a datum lives from its producer's run to its consumer's run."""
    pos = {t: k for k, t in enumerate(order)}
    assert sorted(pos) == sorted(names)
    best = 0.0
    for k, t in enumerate(order):
        held = mem.get(t, 0.0)
        for u, v, s in edges:
            assert pos[u] < pos[v]
            if pos[u] <= k <= pos[v]:
                held += s
        best = max(best, held)
    return best


def all_topological_orders(names, edges):
    return all_orders(names, {t: {u for u, v, _ in edges if v == t} for t in names})


def test_sequential_example():
    g = sequential_example()
    assert g.tasks == list("ABCDEF")
    assert all(m == 0 for m in g.memory.values())
    assert peak(g, list("ACBEDF")) == 5
    assert peak(g, list("ABCEDF")) == 6
    # the seed's frames of the bad order: Mem = 3, 6, 5, 5, 4 (after A's frame)
    assert memory_profile(g, list("ABCEDF"))[0].tolist()[1:] == [3, 6, 5, 5, 4]
    res = min_peak_order(g)
    assert res.peak == 5 and peak(g, res.order) == 5 and res.states > 6
    during, after = memory_profile(g, list("ACBEDF"))
    assert during.max() == 5 and after[-1] == 0


@settings(max_examples=60)
@given(dags_data(max_tasks=7))
def test_exact_search_matches_all_topological_orders(data):
    names, edges, dur, mem = data
    g = build(data)
    best = min(sim_peak(names, edges, mem, o) for o in all_topological_orders(names, edges))
    res = min_peak_order(g)
    assert res.peak == pytest.approx(best)
    assert peak(g, res.order) == pytest.approx(res.peak)
    for o in list(all_topological_orders(names, edges))[:5]:
        assert peak(g, o) == pytest.approx(sim_peak(names, edges, mem, o))


def recount(g, sched, t):
    """Memory held just after time t (frees at t before allocations at t)."""
    held = 0.0
    for v in g.tasks:
        if sched.start[v] <= t < sched.end[v]:
            held += g.memory[v]
    for (u, v), s in g.size.items():
        if sched.start[u] <= t < sched.end[v]:
            held += s
    return held


@settings(max_examples=60)
@given(dags_data(max_tasks=9))
def test_list_schedule_is_valid_and_memory_recounts(data):
    g = build(data)
    for P in (1, 2, 3):
        s = list_schedule(g, P)
        for (u, v) in g.size:
            assert s.start[v] >= s.end[u] - 1e-12
        for t in g.tasks:
            assert s.end[t] == pytest.approx(s.start[t] + g.duration[t])
            assert 0 <= s.proc[t] < P
        for a in g.tasks:  # a processor runs one task at a time
            for b in g.tasks:
                if a != b and s.proc[a] == s.proc[b] and g.duration[a] > 0 and g.duration[b] > 0:
                    assert s.end[a] <= s.start[b] or s.end[b] <= s.start[a]
        assert s.makespan >= sum(g.duration.values()) / P - 1e-9
        assert s.makespan >= max(bottom_levels(g).values(), default=0) - 1e-9
        for t, mval in zip(s.times, s.memory):
            # tasks of zero duration hold their data only at an instant: skip those times
            if not any(g.duration[v] == 0 and s.start[v] == t for v in g.tasks):
                assert mval == pytest.approx(recount(g, s, t))


@settings(max_examples=40)
@given(dags_data(max_tasks=7))
def test_one_processor_peak_equals_sequential_peak(data):
    names, edges, dur, mem = data
    g = build((names, edges, {t: d + 1 for t, d in dur.items()}, mem))  # positive durations
    order = g.topological_order()
    s = list_schedule(g, 1, priority=order)
    assert sorted(g.tasks, key=lambda t: s.start[t]) == order
    assert s.peak == pytest.approx(peak(g, order))


def test_list_schedule_two_chains():
    g = TaskGraph.from_edges([("a", "b", 2), ("c", "d", 3)], durations={"a": 1, "b": 1, "c": 1, "d": 2})
    s = list_schedule(g, 2)
    assert s.makespan == 3 and s.peak == 5
    s1 = list_schedule(g, 1, priority=["a", "b", "c", "d"])
    assert s1.makespan == 5 and s1.peak == 3


# ---- validation ---------------------------------------------------------------

def test_bad_graphs():
    g = TaskGraph().add_task("x").add_task("y")
    with pytest.raises(TreeError, match="unknown task 'z'"):
        g.add_edge("x", "z", 1)
    with pytest.raises(TreeError, match="task 'x': self-loop"):
        g.add_edge("x", "x", 1)
    with pytest.raises(TreeError, match="edge 'x' -> 'y': size = -1 is negative"):
        g.add_edge("x", "y", -1)
    with pytest.raises(TreeError, match="task 'q': duration"):
        g.add_task("q", duration=-2)
    with pytest.raises(TreeError, match="task 'q': memory"):
        g.add_task("q", memory=float("nan"))
    with pytest.raises(TreeError, match="task 'x' is already"):
        g.add_task("x")
    g.add_edge("x", "y", 1)
    with pytest.raises(TreeError, match="duplicate edge"):
        g.add_edge("x", "y", 1)
    with pytest.raises(TreeError, match="cycle") as exc:
        TaskGraph.from_edges([("a", "b", 1), ("b", "c", 1), ("c", "a", 1), ("s", "a", 1)])
    assert "'a'" in str(exc.value) and issubclass(exc.type, MemlabError)


@pytest.mark.parametrize("order,needle", [
    (list("ABCDE"), "task 'F' is missing"),
    (list("ABCDEFF"), "task 'F' appears twice"),
    (list("ABCDEFZ"), "unknown task 'Z'"),
    (list("ACBDEF"), "task 'D' comes before its predecessor 'E'"),
])
def test_bad_orders(order, needle):
    g = sequential_example()
    with pytest.raises(TreeError, match=needle):
        peak(g, order)


def test_exact_search_limit_and_bad_priorities():
    g = TaskGraph()
    for i in range(30):
        g.add_task(i)
    with pytest.raises(TreeError, match="30 tasks"):
        min_peak_order(g)
    with pytest.raises(TreeError, match="task 'F' is missing from the priority list"):
        list_schedule(sequential_example(), 2, priority=list("ABCDE"))
    with pytest.raises(TreeError, match="P must be"):
        list_schedule(sequential_example(), 0)


@settings(max_examples=30)
@given(dags_data(max_tasks=6))
def test_topological_orders_are_all_valid_permutations(data):
    import itertools

    from memlab.scheduling.taskgraph import topological_orders
    names, edges, _, _ = data
    g = build(data)
    valid = {p for p in itertools.permutations(names) if all(p.index(u) < p.index(v) for u, v, _ in edges)}
    got = [tuple(o) for o in topological_orders(g)]
    assert len(got) == len(set(got)) and set(got) == valid


def test_topological_orders_limit():
    from memlab.scheduling.taskgraph import random_taskgraph, topological_orders
    with pytest.raises(TreeError, match="too many"):
        next(topological_orders(random_taskgraph(13, seed=0)))


@settings(max_examples=60, deadline=None)
@given(dags_data(max_tasks=7))
def test_width_is_the_largest_antichain(data):
    """Dilworth's matching against brute force over every set of tasks."""
    import itertools

    from memlab.scheduling.taskgraph import width
    names, edges, _, _ = data
    g = build(data)
    succ = {t: {v for u, v, _ in edges if u == t} for t in names}

    def reaches(u, v):
        todo, seen = [u], set()
        while todo:
            x = todo.pop()
            for y in succ[x] - seen:
                seen.add(y)
                todo.append(y)
        return v in seen

    best = max(k for k in range(len(names) + 1) for s in itertools.combinations(names, k)
               if not any(reaches(a, b) or reaches(b, a) for a, b in itertools.combinations(s, 2)))
    assert width(g) == best


def test_width_of_the_slides_example_is_two():
    from memlab.scheduling.taskgraph import width
    assert width(sequential_example()) == 2          # A or C beside B; nothing else is independent

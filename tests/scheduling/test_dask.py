"""memlab's trees and task graphs on Dask: graphs, orders followed, measured peaks.

Each check has its own route: the Dask graph against the tree edge by edge; the tasks' meter
against ``ml.trees.peak`` of the order the tasks' own log shows; that order against a hand-worked
example and against :func:`followed_order`'s replay of Dask's rule; Dask's own ordering (no
priorities given) against :func:`dask_order`. One cluster per worker count serves the module.
"""
from __future__ import annotations

import random

import pytest

pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

import memlab as ml  # noqa: E402
from memlab.errors import BudgetError, MemlabError, TreeError  # noqa: E402
from memlab.scheduling import dask as md  # noqa: E402
from memlab.scheduling import taskgraph as tg  # noqa: E402
from memlab.scheduling.postorder import postorder_from_children  # noqa: E402

T = ml.trees


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


@pytest.fixture(scope="module", autouse=True)
def no_leaked_processes():
    before = _children()
    yield
    assert _children() <= before, "a Dask cluster left child processes behind"


@pytest.fixture(scope="module")
def one():
    with md.LocalDask(1) as c:
        yield c


@pytest.fixture(scope="module")
def two():
    with md.LocalDask(2) as c:
        yield c


def _trees():
    return [T.random_tree(25, shape, seed=s) for s, shape in
            enumerate(["recursive", "bushy", "deep", "recursive"])]


def test_to_dask_has_the_trees_edges_one_by_one():
    for tree in _trees():
        g = md.to_dask(tree)
        assert set(g.dsk) == set(g.keys) and len(g.keys) == tree.n
        for i in range(tree.n):
            assert g.dsk[g.keys[i]].dependencies == {g.keys[c] for c in tree.children[i]}, i
    graph = tg.sequential_example()
    g = md.to_dask(graph)
    for k, t in enumerate(graph.tasks):
        assert g.dsk[g.keys[k]].dependencies == {g.keys[graph.tasks.index(u)]
                                                 for u in graph.pred[t]}, t


def test_to_dask_priorities_and_extra_edges():
    tree = T.Tree([-1, 0, 0, 1, 2], [1, 2, 3, 4, 5])
    g = md.to_dask(tree, order=[3, 1, 4, 2, 0], after={4: [1]})
    assert [g.priority[g.keys[v]] for v in [3, 1, 4, 2, 0]] == [0, -1, -2, -3, -4]
    assert g.dsk[g.keys[4]].dependencies == {g.keys[1]}
    assert md.to_dask(tree).priority == {}  # no order: no annotation, Dask orders by itself


def test_tasks_allocate_the_modelled_sizes_on_a_plain_scheduler():
    """Run by Dask's synchronous scheduler: the meter's peak is the model's peak of the log."""
    import dask

    from memlab.scheduling import dasktasks

    tree = T.random_tree(30, "bushy", seed=4)
    g = md.to_dask(tree, unit=8)
    root = g.keys[tree.root]
    out = dask.get(g.dsk, root, scheduler="sync")
    m = dasktasks.meter(g.meter)
    order = [e[0] for e in m.log]
    assert m.peak == 8 * T.peak(tree, order)
    assert m.live == 8 * tree.f[tree.root]  # only the root's output is left
    out[-1].release()
    assert m.live == 0 and m.resident == 0
    dasktasks.drop_meter(g.meter)


def test_a_hand_worked_deviation():
    """Node 1 becomes ready when 3 ends: Dask runs it at once, before 4 (worked by hand)."""
    tree = T.Tree([-1, 0, 0, 1, 2], [1, 1, 1, 5, 5])
    assert md.followed_order(tree, [3, 4, 1, 2, 0]) == [3, 1, 4, 2, 0]
    assert md.followed_order(tree, [3, 1, 4, 2, 0]) == [3, 1, 4, 2, 0]


def test_postorders_are_followed_exactly_and_the_peak_is_the_models(one):
    rng = random.Random(0)
    for tree in _trees():
        kids = [rng.sample(c, len(c)) for c in tree.children]
        for order in (T.best_postorder(tree)[0], postorder_from_children(tree, kids)):
            r = md.run(tree, order, cluster=one)
            assert r.followed == order
            assert r.peak == r.model_peak == T.peak(tree, order)
            assert r.worker == [0] * tree.n and r.spilled == [(0, 0)]


def test_other_orders_follow_dasks_rule_and_the_peak_is_that_of_the_order_followed(one):
    deviated = 0
    for tree in _trees():
        for order in ("liu", T.random_traversal(tree, seed=1)):
            r = md.run(tree, order, cluster=one)
            assert r.followed == md.followed_order(tree, r.given)
            assert r.peak == r.model_peak == T.peak(tree, r.followed)
            deviated += r.followed != r.given
    assert deviated > 0  # random orders leave ready parents waiting; Dask does not


def test_with_no_priorities_dask_follows_its_own_order(one):
    for tree in _trees()[:2]:
        mine = md.followed_order(tree, md.dask_order(tree))
        assert md.run(tree, None, cluster=one).followed == mine
        assert md.run(tree, "dask", cluster=one).followed == mine


def test_the_six_task_example_in_both_orders(one):
    graph = tg.sequential_example()
    for name, order in tg.EXAMPLE_ORDERS.items():
        r = md.run(graph, order, cluster=one)
        assert r.followed == md.followed_order(graph, order)
        assert r.peak == tg.peak(graph, r.followed)
    assert md.run(graph, tg.EXAMPLE_ORDERS["good"], cluster=one).followed == \
        tg.EXAMPLE_ORDERS["good"]


def test_a_run_closes_its_own_cluster_and_the_times_are_consistent():
    tree = T.random_tree(12, "recursive", seed=2)
    r = md.run(tree, "best_postorder", durations=[0.002] * tree.n)
    for i in range(tree.n):
        assert r.end[i] - r.start[i] >= 0.002
        assert all(r.end[c] <= r.start[i] for c in tree.children[i])
    assert r.makespan >= 0.002 * tree.n


def test_clusters_close_even_when_the_body_fails():
    before = _children()
    with pytest.raises(RuntimeError):
        with md.LocalDask(2) as c:
            assert c.client is not None
            raise RuntimeError("boom")
    assert c.client is None and c.cluster is None
    assert _children() <= before


def test_memory_limit_makes_the_worker_spill_under_a_bad_order():
    """Four groups of three leaves (f = 4) under middles (f = 1): the third leaves last holds
    eight leaf outputs even after Dask's rule; Liu's order holds at most two groups' worth."""
    tree = T.Tree([-1] + [0] * 4 + [1 + k // 3 for k in range(12)], [1.0] * 5 + [4.0] * 12)
    least = T.optimal_traversal(tree)[1]
    bad = [5 + 3 * g + j for j in range(3) for g in range(4)] + [1, 2, 3, 4, 0]
    with md.LocalDask(1, int(least * 1024)) as c:
        good = md.run(tree, "liu", memory_limit=least, cluster=c)
        worse = md.run(tree, bad, memory_limit=least, cluster=c)
    assert worse.followed == md.followed_order(tree, bad)
    assert worse.peak == T.peak(tree, worse.followed) > least == good.peak
    count, nbytes = worse.spilled[0]
    assert nbytes >= 4 * 1024 * 4  # live leaf outputs went to disk...
    assert worse.resident_peak < worse.peak  # ...so fewer bytes were in RAM than alive


def test_an_all_to_all_mapping_runs_on_one_worker_with_the_models_peak(two):
    tree = T.random_tree(15, "recursive", seed=3)
    r, sched = md.run_mapping(tree, "all-to-all", 2, seconds=0.001, cluster=two)
    assert r.worker == [0] * tree.n and r.worker_peaks[1] == 0
    assert r.peak == T.peak(tree, r.followed)


def test_a_proportional_mapping_places_and_serializes_as_mapped(two):
    tree = T.random_tree(20, "bushy", seed=5)
    w = [1.0 + (i % 3) for i in range(tree.n)]
    r, sched = md.run_mapping(tree, "proportional", 2, w, seconds=0.002, cluster=two)
    assert r.worker == [lo for lo, _ in sched.procs]
    for k in range(2):  # one thread per worker: its tasks never overlap
        spans = sorted((r.start[i], r.end[i]) for i in range(tree.n) if r.worker[i] == k)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
        busy = sum(w[i] / (sched.procs[i][1] - sched.procs[i][0]) * 0.002
                   for i in range(tree.n) if r.worker[i] == k)
        assert r.makespan >= busy
    assert md.simulated_worker_peaks(tree, sched) == r.extra["simulated_worker_peaks"]
    assert max(r.extra["simulated_worker_peaks"]) <= sched.peak


@pytest.mark.parametrize("call,error", [
    (lambda t: md.run(t, [0, 1, 2, 3]), TreeError),  # the root first: not a traversal
    (lambda t: md.run(t, [3, 1, 2]), TreeError),  # a node missing
    (lambda t: md.run(t, "fifo"), TreeError),
    (lambda t: md.run(t, "liu", workers=0), TreeError),
    (lambda t: md.run(t, "liu", memory_limit=T.optimal_traversal(t)[1] - 0.5), BudgetError),
    (lambda t: md.run(tg.sequential_example(), "liu"), TreeError),
    (lambda t: md.run("tree"), TreeError),
    (lambda t: md.run(t, "liu", placement=[0, 0, 0, 5]), TreeError),
    (lambda t: md.run_mapping(t, "round-robin"), TreeError),
    (lambda t: md.to_dask(t, unit=0), TreeError),
    (lambda t: md.LocalDask(0), TreeError),
])
def test_bad_input_is_refused_before_any_cluster_starts(call, error):
    tree = T.Tree([-1, 0, 0, 1], [1.0, 2.0, 3.0, 1.0])
    before = _children()
    with pytest.raises(error) as e:
        call(tree)
    assert isinstance(e.value, MemlabError) and str(e.value)
    assert _children() <= before


def test_the_messages_name_the_problem():
    tree = T.Tree([-1, 0, 0, 1], [1.0, 2.0, 3.0, 1.0])
    with pytest.raises(TreeError, match="node 0 comes before its child"):
        md.run(tree, [0, 3, 1, 2])
    with pytest.raises(TreeError, match="workers"):
        md.run(tree, "liu", workers=0)
    with pytest.raises(BudgetError, match="too large for it at every order"):
        md.run(tree, "liu", memory_limit=1.0)


def test_followed_order_is_a_traversal_no_better_than_the_optimum_and_a_fixed_point():
    """Replayed without a cluster: every order Dask would run is a valid traversal, never below
    Liu's optimum (an independent bound), unchanged by a second pass, and post-orders pass as is."""
    for n, shape, seed in [(40, "recursive", 1), (60, "bushy", 2), (60, "deep", 3)]:
        tree = T.random_tree(n, shape, seed=seed)
        opt = T.optimal_traversal(tree)[1]
        for order in (T.optimal_traversal(tree)[0], T.random_traversal(tree, seed=seed),
                      md.dask_order(tree)):
            ran = md.followed_order(tree, order)
            assert T.check_traversal(tree, ran) == ran
            assert T.peak(tree, ran) >= opt - 1e-9
            assert md.followed_order(tree, ran) == ran
        assert md.followed_order(tree, T.best_postorder(tree)[0]) == T.best_postorder(tree)[0]
        assert T.peak(tree, md.dask_order(tree)) >= opt - 1e-9


def test_dask_order_is_the_same_in_every_process():
    """Integer keys keep dask.order's ties independent of PYTHONHASHSEED."""
    import subprocess
    import sys

    code = ("import memlab.scheduling.dask as md, memlab as ml; "
            "print(md.dask_order(ml.trees.random_tree(300, 'recursive', seed=0)))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**__import__("os").environ, "PYTHONHASHSEED": h},
                           check=True).stdout for h in ("1", "2")}
    assert len(outs) == 1


def test_the_pictures_of_a_run():
    pytest.importorskip("matplotlib")
    from memlab.viz import dask as vd

    tree = T.random_tree(12, "recursive", seed=6)
    r = md.run(tree, "liu", durations=[0.001] * tree.n)
    fig = vd.run_figure(tree, r, "liu")
    assert len(fig.axes) == 2 and "peak" in fig.axes[1].get_title()
    rows = vd.order_rows(30, shapes=("bushy",), seeds=range(2))
    assert rows[0]["dask.order"] >= 1 and rows[0]["best post-order"] >= 1
    assert "<table>" in vd.order_table(rows)

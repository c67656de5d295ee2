"""Tree traversals: Liu's algorithms against independent brute force (seed 002)."""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.errors import MemlabError, TreeError
from memlab.scheduling.trees import (Tree, best_postorder, brute_force, counterexample_peaks,
                          memory_profile, optimal_traversal, outtree_peak, peak,
                          postorder_counterexample, postorder_peak, postorder_from_children)
from memlab.scheduling.trees import brute_force_stats
from memlab.scheduling.liu import subtree_optimal_peaks
from memlab.scheduling.postorder import best_child_order
from memlab.scheduling.treebase import breadth_first
from memlab.scheduling.treegen import random_tree
from memlab.scheduling.assembly import (column_counts, elimination_tree, grid_adjacency, grid_assembly_tree,
                             minimum_degree, nested_dissection)
from memlab.scheduling.trees_table import postorder_table

from strategies import all_topological_orders as all_orders, trees_data

TOL = 1e-9


# ---- independent reference implementations ---------------------------------

def kids_of(parent):
    kids = {i: [] for i in range(len(parent))}
    for i, p in enumerate(parent):
        if p >= 0:
            kids[p].append(i)
    return kids


def sim_peak(parent, f, m, order):
    """Straight from the slide: memory = outputs produced and not consumed (+ m_i + f_i)."""
    kids = kids_of(parent)
    done, alive, best = set(), {}, 0.0
    for v in order:
        assert v not in done and all(c in done for c in kids[v])
        best = max(best, sum(alive.values()) + m[v] + f[v])
        for c in kids[v]:
            del alive[c]
        alive[v] = f[v]
        done.add(v)
    assert len(done) == len(parent)
    return best


def all_traversals(parent):
    kids = kids_of(parent)
    return all_orders(range(len(parent)), kids)


def best_postorder_by_permutations(parent, f, m):
    """min over every child permutation at every node (choices are independent)."""
    kids = kids_of(parent)
    root = parent.index(-1)
    P = {}
    stack, seen = [root], []
    while stack:
        v = stack.pop()
        seen.append(v)
        stack.extend(kids[v])
    for v in reversed(seen):
        best = None
        for perm in itertools.permutations(kids[v]):
            acc, pk = 0.0, 0.0
            for c in perm:
                pk = max(pk, acc + P[c])
                acc += f[c]
            pk = max(pk, acc + m[v] + f[v])
            best = pk if best is None else min(best, pk)
        P[v] = best if kids[v] else m[v] + f[v]
    return P[root]


# ---- exactness ----------------------------------------------------------------

@settings(max_examples=150)
@given(trees_data(max_nodes=11))
def test_optimal_traversal_matches_brute_force(data):
    par, f, m = data
    t = Tree(par, f, m)
    order, pk = optimal_traversal(t)
    border, bpk = brute_force(t)
    assert pk == pytest.approx(bpk, abs=TOL)
    assert sim_peak(par, f, m, order) == pytest.approx(pk, abs=TOL)
    assert sim_peak(par, f, m, border) == pytest.approx(bpk, abs=TOL)


@settings(max_examples=80)
@given(trees_data(max_nodes=10))
def test_every_subtree_gets_its_own_least_peaks(data):
    """Each subtree's peaks from the one bottom-up pass equal the algorithms run on that subtree
    alone, and the best post-order is the post-order of the returned child orders."""
    par, f, m = data
    t = Tree(par, f, m)
    least = subtree_optimal_peaks(t)
    children, P = best_child_order(t)
    for v in range(t.n):
        sub = t.subtree(v)
        assert least[v] == pytest.approx(brute_force(sub)[1], abs=TOL)
        assert P[v] == pytest.approx(best_postorder_by_permutations(sub.parent, sub.f, sub.m),
                                     abs=TOL)
        assert sorted(children[v]) == t.children[v]
    order, pk = best_postorder(t)
    assert order == postorder_from_children(t, children) and pk == P[t.root]


@settings(max_examples=60)
@given(trees_data(max_nodes=12))
def test_breadth_first_numbering(data):
    """Position k's children are the positions first[k] .. first[k] + count[k] - 1, in the order
    of tree.children, and the sizes follow their nodes."""
    par, f, m = data
    t = Tree(par, f, m)
    bf = breadth_first(t)
    node = bf.node.tolist()
    assert sorted(node) == list(range(t.n)) and node[0] == t.root
    for k, v in enumerate(node):
        kids = node[bf.first[k]:bf.first[k] + bf.count[k]]
        assert kids == t.children[v]
        assert (bf.f[k], bf.m[k]) == (t.f[v], t.m[v])


@settings(max_examples=60)
@given(trees_data(max_nodes=7))
def test_brute_force_is_min_over_all_traversals(data):
    par, f, m = data
    t = Tree(par, f, m)
    best = min(sim_peak(par, f, m, o) for o in all_traversals(par))
    assert brute_force(t)[1] == pytest.approx(best, abs=TOL)


@settings(max_examples=80)
@given(trees_data(max_nodes=9))
def test_best_postorder_is_best_over_child_permutations(data):
    par, f, m = data
    t = Tree(par, f, m)
    order, pk = best_postorder(t)
    assert pk == pytest.approx(best_postorder_by_permutations(par, f, m), abs=TOL)
    assert sim_peak(par, f, m, order) == pytest.approx(pk, abs=TOL)
    assert peak(t, order) == pytest.approx(pk, abs=TOL)
    assert pk >= optimal_traversal(t)[1] - TOL


@settings(max_examples=60)
@given(trees_data(max_nodes=10), st.randoms(use_true_random=False))
def test_postorder_peak_formula_matches_simulation(data, rnd):
    par, f, m = data
    t = Tree(par, f, m)
    order = {v: rnd.sample(t.children[v], len(t.children[v])) for v in range(t.n)}
    seq = postorder_from_children(t, [order[v] for v in range(t.n)])
    assert postorder_peak(t, order) == pytest.approx(sim_peak(par, f, m, seq), abs=TOL)
    assert postorder_peak(t) == pytest.approx(
        sim_peak(par, f, m, postorder_from_children(t, t.children)), abs=TOL)


def random_traversal(t, rnd):
    kids_left = [len(c) for c in t.children]
    ready = [v for v in range(t.n) if kids_left[v] == 0]
    order = []
    while ready:
        v = ready.pop(rnd.randrange(len(ready)))
        order.append(v)
        p = t.parent[v]
        if p >= 0:
            kids_left[p] -= 1
            if kids_left[p] == 0:
                ready.append(p)
    return order


def sim_outtree_peak(parent, f, m, order):
    """Out-tree: node i reads f[i] (from its out-tree parent), writes f[c] for each in-tree child."""
    kids = kids_of(parent)
    root = parent.index(-1)
    alive = {root: f[root]}
    best = 0.0
    for v in order:
        assert v in alive
        best = max(best, sum(alive.values()) + m[v] + sum(f[c] for c in kids[v]))
        del alive[v]
        for c in kids[v]:
            alive[c] = f[c]
    return best


@settings(max_examples=60)
@given(trees_data(max_nodes=12), st.randoms(use_true_random=False))
def test_reversal_theorem(data, rnd):
    par, f, m = data
    t = Tree(par, f, m)
    for order in (random_traversal(t, rnd), optimal_traversal(t)[0]):
        rev = order[::-1]
        assert outtree_peak(t, rev) == pytest.approx(peak(t, order), abs=TOL)
        assert sim_outtree_peak(par, f, m, rev) == pytest.approx(peak(t, order), abs=TOL)


def test_memory_profile_steps():
    t = Tree([-1, 0, 0], [1, 2, 3], [4, 0, 1])
    during, after = memory_profile(t, [1, 2, 0])
    assert during.tolist() == [2, 6, 10] and after.tolist() == [2, 5, 1]


# ---- the counterexample family -------------------------------------------------

@pytest.mark.parametrize("b,K", [(2, 1), (2, 2), (2, 3), (3, 1), (3, 2), (4, 1), (4, 2), (5, 1)])
@pytest.mark.parametrize("M,eps", [(12.0, 1.0), (10.0, 0.5), (7.5, 0.3)])
def test_counterexample_matches_formulas(b, K, M, eps):
    if b * eps > M:
        pytest.skip("outside the family's domain")
    t = postorder_counterexample(b, K, M, eps)
    bpo, bt = counterexample_peaks(b, K, M, eps)
    assert bpo == pytest.approx(M + eps + K * (b - 1) * M / b)
    assert bt == pytest.approx(M + eps + K * (b - 1) * eps)
    assert best_postorder(t)[1] == pytest.approx(bpo)
    assert best_postorder_by_permutations(t.parent, t.f, t.m) == pytest.approx(bpo)
    order, pk = optimal_traversal(t)
    assert pk == pytest.approx(bt) and peak(t, order) == pytest.approx(bt)
    if t.n <= 17:
        assert brute_force(t)[1] == pytest.approx(bt)
    if eps < M / b:
        assert bpo / bt > 1


def test_counterexample_ratio_grows_beyond_K():
    for K in (1, 2, 3):  # BPO/BT -> 1 + K(b-1)/b as eps -> 0, which is > K once b > K
        b, M, eps = K + 2, 300.0, 0.001
        bpo, bt = counterexample_peaks(b, K, M, eps)
        t = postorder_counterexample(b, K, M, eps)
        assert best_postorder(t)[1] / optimal_traversal(t)[1] == pytest.approx(bpo / bt)
        assert bpo / bt > K


@pytest.mark.parametrize("args", [(1, 1, 10.0, 1.0), (2, 0, 10.0, 1.0), (2, 1, 1.0, 2.0),
                                  (2, 1, 10.0, 0.0), (4, 1, 10.0, 3.0)])
def test_counterexample_bad_parameters(args):
    with pytest.raises(TreeError, match="postorder_counterexample"):
        postorder_counterexample(*args)


# ---- validation ---------------------------------------------------------------

@pytest.mark.parametrize("parent,f,m,needle", [
    ([-1, 5], [1, 1], None, "node 1"),
    ([-1, -1], [1, 1], None, "two roots"),
    ([1, 0], [1, 1], None, "no root"),
    ([-1, 2, 1], [1, 1, 1], None, "node 1"),
    ([-1, 1], [1, 1], None, "node 1"),
    ([-1, 0], [1, -2], None, "node 1"),
    ([-1, 0], [1, 1], [0, -1], "node 1"),
    ([-1, 0], [1], None, "length mismatch"),
    ([-1, 0], [1, 1], [0], "length mismatch"),
    ([], [], None, "at least one node"),
])
def test_bad_trees(parent, f, m, needle):
    with pytest.raises(TreeError, match=needle):
        Tree(parent, f, m)
    assert issubclass(TreeError, MemlabError)


@pytest.mark.parametrize("order,needle", [
    ([1, 2], "not a permutation"),
    ([1, 1, 0], "node 1 appears twice"),
    ([1, 7, 0], "node 7"),
    ([0, 1, 2], "node 0 comes before its child"),
    ([1, 0, 2], "node 0 comes before its child 2"),
])
def test_bad_orders(order, needle):
    t = Tree([-1, 0, 0], [1, 1, 1])
    with pytest.raises(TreeError, match=needle):
        peak(t, order)


def test_brute_force_limit():
    t = random_tree(30, seed=0)
    with pytest.raises(TreeError, match="30 nodes"):
        brute_force(t)
    small = random_tree(10, "bushy", seed=1)
    res = brute_force_stats(small)
    assert res.states >= 10 and res[1] == pytest.approx(optimal_traversal(small)[1])


def test_bad_child_order():
    t = Tree([-1, 0, 0], [1, 1, 1])
    with pytest.raises(TreeError, match="node 0"):
        postorder_peak(t, {0: [1]})


# ---- scale and generators -----------------------------------------------------

@pytest.mark.parametrize("shape", ["recursive", "deep", "bushy"])
def test_large_trees_no_recursion_limit(shape):
    t = random_tree(100_000 if shape == "deep" else 20_000, shape, seed=3)
    order, pk = optimal_traversal(t)
    border, bpk = best_postorder(t)
    assert peak(t, order) == pytest.approx(pk) and peak(t, border) == pytest.approx(bpk)
    assert pk <= bpk + TOL


def test_random_tree_shapes_and_seeds():
    a, b = random_tree(50, "deep", seed=5), random_tree(50, "deep", seed=5)
    assert a.parent == b.parent and a.f == b.f
    assert all(i - 3 <= p < i for i, p in enumerate(a.parent) if p >= 0)
    assert random_tree(2000, "deep", seed=1).depth() > random_tree(2000, "recursive", seed=1).depth()
    with pytest.raises(TreeError, match="shape"):
        random_tree(5, "weird")


def dense_cholesky_structure(adj, perm):
    n = len(adj)
    iperm = np.empty(n, int)
    iperm[perm] = np.arange(n)
    A = np.eye(n, dtype=bool)
    for u in range(n):
        for v in adj[u]:
            A[iperm[u], iperm[v]] = True
    for k in range(n):
        rows = np.nonzero(A[k + 1:, k])[0] + k + 1
        A[np.ix_(rows, rows)] = True
    L = np.tril(A)
    parent = [int(np.argmax(L[k + 1:, k]) + k + 1) if L[k + 1:, k].any() else -1 for k in range(n)]
    return parent, L.sum(axis=0).tolist()


@pytest.mark.parametrize("dims", [(5, 4), (6, 6), (3, 4, 3), (1, 7)])
def test_elimination_tree_and_counts_match_dense_factorization(dims):
    adj = grid_adjacency(dims)
    for perm in (nested_dissection(dims), minimum_degree(adj), minimum_degree(adj, seed=2)):
        parent, iperm = elimination_tree(adj, perm)
        counts = column_counts(adj, perm, parent, iperm)
        assert (parent, counts) == dense_cholesky_structure(adj, perm)


def test_assembly_trees():
    for dims, o in [((12, 12), "nd"), ((12, 12), "md"), ((5, 5, 5), "nd")]:
        full = grid_assembly_tree(dims, o, amalgamate=False)
        amal = grid_assembly_tree(dims, o, amalgamate=True)
        assert full.n == int(np.prod(dims)) and amal.n < full.n
        assert full.f[full.root] == 0 and all(mi >= fi for mi, fi in zip(full.m, full.f))
        assert optimal_traversal(amal)[1] <= best_postorder(amal)[1] + TOL


def test_postorder_table_small():
    table = postorder_table(n_assembly=6, n_random=30, seed=2)
    for row in table.values():
        share, mx, avg = row.as_tuple()
        assert 0 <= share <= 1 and 0 <= avg <= mx
    assert table["random"].nonoptimal_share > 0


def test_random_traversal_is_valid_and_reaches_every_traversal():
    from memlab.scheduling.trees import check_traversal, random_traversal
    par = [-1, 0, 0, 1, 1]
    t = Tree(par, f=[1] * 5)
    seen = {tuple(random_traversal(t, seed)) for seed in range(400)}
    for o in seen:
        check_traversal(t, o)
    assert seen == {tuple(o) for o in all_traversals(par)}


def test_postorder_table_reports_progress():
    from memlab.scheduling.trees_table import postorder_table
    seen = []
    table = postorder_table(2, 3, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k, 5) for k in range(1, 6)]
    assert table["assembly"].count == 2 and table["random"].count == 3

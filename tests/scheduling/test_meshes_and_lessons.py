"""Library values behind lessons 11-13 (moved out of the lesson cells) and the mesh trees."""
import itertools

import pytest

from memlab.errors import TreeError
from memlab.scheduling import taskgraph as tg
from memlab.scheduling.mapping import memory_aware, proportional, sequential_minimum, split_range
from memlab.scheduling.meshes import graph_nested_dissection, mesh_assembly_tree
from memlab.scheduling.postorder import postorder_from_children, postorder_terms
from memlab.scheduling.treebase import Tree, peak
from memlab.scheduling.treegen import random_tree


def test_seed_example_frames_and_peaks():
    g = tg.sequential_example()
    bad, good = tg.EXAMPLE_ORDERS["bad"], tg.EXAMPLE_ORDERS["good"]
    assert tg.memory_profile(g, bad)[0].tolist()[-5:] == [3, 6, 5, 5, 4]
    assert (tg.peak(g, bad), tg.peak(g, good)) == (6, 5)
    assert min(tg.peak(g, o) for o in tg.topological_orders(g)) == 5


def test_postorder_terms_match_a_simulation():
    t = Tree([-1, 0, 0, 0, 1, 1, 2, 2, 3], f=[1, 3, 2, 4, 2, 5, 1, 6, 3], m=[2, 1, 3, 1, 2, 1, 1, 2, 2])
    terms = postorder_terms(t)
    assert [x[3] for x in terms] == [11, 15, 13, 12]
    assert max(x[3] for x in terms) == peak(t, postorder_from_children(t, t.children))
    with pytest.raises(TreeError, match="not a permutation"):
        postorder_terms(t, child_order=[1, 2])


@pytest.mark.parametrize("p,k", [(4, 2), (3, 5), (8, 3), (5, 5)])
def test_split_range_gives_whole_processors(p, k):
    shares = list(range(1, k + 1))
    ranges = split_range(0, p, shares)
    assert all(b - a >= 1 and 0 <= a < b <= p for a, b in ranges)
    big = [r for r, s in zip(ranges, shares) if p * s / sum(shares) >= 1]
    small = [r for r, s in zip(ranges, shares) if p * s / sum(shares) < 1]
    held = list(itertools.chain.from_iterable(range(a, b) for a, b in big))
    assert len(held) == len(set(held))          # the big children's ranges are disjoint
    used = set(held) | {a for a, _ in small}
    assert used == set(range(p))                # and no processor is left without work
    assert all(b - a == 1 for a, b in small)    # the others time-share one processor each
    if sum(p * s / sum(shares) for s in shares if p * s / sum(shares) < 1) >= 1:
        assert not {a for a, _ in small} & set(held)   # a group of small ones: its own processors


def test_mappings_hold_the_bound_with_whole_processors():
    t = random_tree(40, seed=3, f_range=(1, 9), m_range=(1, 5))
    w = [float(1 + i % 7) for i in range(t.n)]
    for P in (2, 3, 5):
        assert all(b - a >= 1 for a, b in proportional(t, w, P).procs)
        for fac in (1.0, 1.5, 3.0):
            s = memory_aware(t, w, P, fac * sequential_minimum(t), alpha=0.5)
            assert s.peak <= fac * sequential_minimum(t) + 1e-9
            assert set(s.extra["decisions"].values()) <= {"parallel", "serialized", "sequential"}


def test_nested_dissection_is_a_permutation_with_separators_last():
    adj = [[1], [0, 2], [1, 3], [2, 4], [3, 5], [4, 6], [5, 7], [6, 8], [7]]  # a path
    perm = graph_nested_dissection(adj, leaf=1)
    assert sorted(perm) == list(range(9))
    assert perm[-1] not in (0, 8)   # the top separator is inside the path, eliminated last


def test_mesh_trees_build_and_reject_bad_input():
    for mesh in ("delaunay", "geometric"):
        for ordering in ("nd", "md"):
            t = mesh_assembly_tree(200, mesh, ordering, seed=1)
            assert t.n > 10 and t.f[t.root] == 0
    with pytest.raises(TreeError, match="unknown mesh"):
        mesh_assembly_tree(100, "square")
    with pytest.raises(TreeError, match="at least 3 points"):
        mesh_assembly_tree(2)


def test_grids_and_meshes_refuse_an_unknown_ordering():
    from memlab.scheduling.assembly import grid_assembly_tree
    with pytest.raises(TreeError, match="unknown ordering 'amd'"):
        grid_assembly_tree((4, 4), ordering="amd")
    with pytest.raises(TreeError, match="unknown ordering 'amd'"):
        mesh_assembly_tree(30, ordering="amd", seed=0)

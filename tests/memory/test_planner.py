"""Tag planner (lecture 7, p.17-22): slide p.22 exactly, properties on random DAGs, bad input."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import memlab as ml
from memlab.memory.checkplan import check_plan
from memlab.models import slide22
from memlab.memory.offsets import live_bytes_lower_bound
from memlab.memory.planner import MATCH_RANGE, Box, plan_memory
from memlab.errors import PlanError
from strategies import random_dags


def test_slide22_five_steps():
    g = slide22()
    B, C, E, F, G = (g[k] for k in "BCEFG")
    plan = plan_memory(G, order=g["order"], trace=True)
    steps = plan.steps
    assert [s.node for s in steps] == [B, C, F, E, G]
    # step 1: allocate a tag for B
    assert steps[0].action == "new"
    # step 2: allocate a tag for C, cannot do in-place because B is still alive
    assert steps[1].action == "new" and steps[1].tag != steps[0].tag
    assert steps[1].refcount[B] == 1 and "B" in steps[1].note
    # step 3: allocate a tag for F, release the space of B
    assert steps[2].action == "new" and steps[2].released == (steps[0].tag,)
    assert steps[2].box == ((steps[0].tag, B.nbytes),)
    # step 4: reuse the tag in the box for E
    assert steps[3].action == "reuse" and steps[3].tag == steps[0].tag
    assert steps[3].released == (steps[1].tag,)
    # step 5: re-use the tag of E: an in-place optimisation
    assert steps[4].action == "inplace" and steps[4].source is E and steps[4].tag == steps[3].tag
    assert steps[4].refcount == {}
    assert plan.num_storages == 3 and plan.total_bytes == 3 * ml.placeholder("t", (8, 16)).nbytes
    assert plan.initial_refcount == {g["A"]: 1, B: 2, C: 1, F: 1, E: 1}
    check_plan(plan)


def test_default_order_and_trace_off():
    g = slide22()
    plan = plan_memory(g["G"])                       # the trace is recorded only when asked
    assert plan.steps == [] and not plan.traced and len(plan.order) == 6
    check_plan(plan)
    with pytest.raises(PlanError, match="trace=True"):
        plan.require_trace("a stepper")
    traced = plan_memory(g["G"], trace=True)
    assert traced.traced and len(traced.steps) == 5
    assert traced.storage == plan.storage and traced.storage_bytes == plan.storage_bytes


@settings(deadline=None, max_examples=30)
@given(random_dags())
def test_every_option_gives_a_valid_plan(dag):
    outs, _ = dag
    for inplace in (True, False):
        for share in (True, False):
            for colors in (1, 2, 3):
                for match in ("best", "exact"):
                    plan = plan_memory(outs, inplace=inplace, share=share, colors=colors, match=match,
                                       trace=True)
                    check_plan(plan)
                    assert plan.total_bytes >= live_bytes_lower_bound(plan)
                    if not inplace:
                        assert not plan.inplace_pairs
                    for s in plan.steps:
                        if s.action == "inplace":
                            pos = [i for i in s.node.op.inplace(s.node) if s.node.inputs[i] is s.source]
                            assert pos, f"{s.node.name} ran in place on a forbidden input"


@settings(deadline=None, max_examples=30)
@given(random_dags())
def test_outputs_and_leaves_never_reused(dag):
    outs, _ = dag
    plan = plan_memory(outs)
    pos = {n: i for i, n in enumerate(plan.order)}
    for o in outs:
        if o in plan.storage:
            later = [n for n in plan.order if pos[n] > pos[o] and plan.storage.get(n) == plan.storage[o]]
            assert not later
    assert all(n.op.computes for n in plan.storage)
    naive = plan_memory(outs, inplace=False, share=False)
    assert naive.num_storages == len(naive.storage)
    assert plan.total_bytes <= naive.total_bytes


def test_corrupted_plan_fails_naming_nodes():
    g = slide22()
    plan = plan_memory(g["G"], order=g["order"])
    plan.storage[g["C"]] = plan.storage[g["B"]]  # C written over B while F still needs B
    with pytest.raises(ml.PlanError, match="'B'.*'C'|'C'.*'B'"):
        check_plan(plan)
    plan = plan_memory(g["G"], order=g["order"])
    plan.storage[g["F"]] = plan.storage[g["C"]]  # F over C while E still needs C
    with pytest.raises(ml.PlanError, match="'C'.*'F'"):
        check_plan(plan)


def test_inplace_only_at_last_consumer():
    a = ml.placeholder("a", (4,))
    x = ml.exp(a, name="x")
    y = ml.neg(x, name="y")          # x still needed by z: no in-place
    z = ml.add(x, y, name="z")       # last consumer of both: in-place
    plan = plan_memory(z)
    assert plan.storage[y] != plan.storage[x]
    assert plan.storage[z] in (plan.storage[x], plan.storage[y])
    check_plan(plan)


def test_bad_input():
    a = ml.placeholder("a", (4,))
    b = ml.exp(a, name="b")
    c = ml.neg(b, name="c")
    with pytest.raises(ml.PlanError, match="'c'.*'b'"):
        plan_memory(c, order=[a, c, b])
    with pytest.raises(ml.PlanError, match="colors"):
        plan_memory(c, colors=0)
    z = ml.exp(ml.placeholder("e", (0, 3)), name="empty")
    with pytest.raises(ml.PlanError, match="'empty'"):
        plan_memory(z)
    d = ml.exp(a, name="neg_size")
    d.nbytes = -8       # only a corrupted node: Node refuses negative dimensions when built
    with pytest.raises(ml.PlanError, match="'neg_size'"):
        plan_memory(d)
    b.inputs.append(c)  # b -> c -> b: a cycle
    with pytest.raises(ml.CycleError, match="'[bc]'"):
        plan_memory(c)
    assert issubclass(ml.CycleError, ml.MemlabError)


def test_match_rules_and_growth():
    a = ml.placeholder("a", (8,))
    big = ml.concat(a, a, name="big")     # 64 bytes
    s = ml.sum(big, axis=-1, keepdims=True, name="s")  # big dies here
    t = ml.exp(ml.concat(s, s, s, name="c3"), name="t")  # 12 bytes: fits big's tag
    best = plan_memory(t)
    assert best.storage[best.order[-2]] == best.storage[big]
    exact = plan_memory(t, match="exact")
    assert exact.storage[exact.order[-2]] != exact.storage[big]
    for p in (best, exact):
        check_plan(p)


def test_colors_restrict_sharing():
    from memlab.models import slide23
    g = slide23()
    one = plan_memory(g["A[8]"])
    two = plan_memory(g["A[8]"], colors=2)
    assert one.num_storages < two.num_storages
    for p in (one, two):
        check_plan(p)
    for n, s in two.storage.items():
        for m, t in two.storage.items():
            if s == t:
                assert two.color[n] == two.color[m]
    assert np.isfinite(two.total_bytes)


@settings(deadline=None, max_examples=40)
@given(random_dags())
def test_releases_happen_where_reference_counts_reach_zero(dag):
    """The planner frees a tag at its value's last reader; the trace's reference counts (p.22),
    counted here again from scratch, must reach 0 at exactly that step."""
    outs, _ = dag
    for inplace in (True, False):
        _check_releases(outs, inplace)


def _check_releases(outs, inplace):
    plan = plan_memory(outs, inplace=inplace, trace=True)
    assert plan_memory(outs, inplace=inplace).storage == plan.storage  # the trace changes nothing
    left = {}
    for n in plan.order:
        for x in set(n.inputs):
            left[x] = left.get(x, 0) + 1
    assert plan.initial_refcount == left
    for s in plan.steps:
        dead = set()
        for x in set(s.node.inputs):
            left[x] -= 1
            if left[x] == 0 and x in plan.storage and x not in outs and x is not s.source:
                dead.add(plan.storage[x])
        assert sorted(s.released) == sorted(dead - {s.tag}), s.node.name
        assert s.refcount == {x: k for x, k in left.items() if k}


class _ListBox:
    """The match rule of the planner's docstring, written as a search of a plain list."""

    def __init__(self, match):
        self.match, self.free = match, []

    def put(self, tag, nbytes):
        self.free.append((nbytes, tag))

    def take(self, nbytes):
        if self.match == "exact":
            fits = [f for f in self.free if f[0] == nbytes]
            pick = min(fits) if fits else None
        else:
            big = [f for f in self.free if nbytes <= f[0] <= nbytes * MATCH_RANGE]
            small = [f for f in self.free if f[0] < nbytes <= f[0] * MATCH_RANGE]
            pick = min(big) if big else max(small) if small else None
        if pick is None:
            return None
        self.free.remove(pick)
        return pick[1]


@settings(deadline=None, max_examples=200)
@given(st.sampled_from(["best", "exact"]),
       st.lists(st.tuples(st.booleans(), st.sampled_from([1, 8, 10, 16, 40, 200, 1000])),
                max_size=60))
def test_box_follows_the_match_rule(match, ops):
    box, ref, free_tags, next_tag = Box(match), _ListBox(match), [], 0
    for put, nbytes in ops:
        if put:
            tag = free_tags.pop() if free_tags else next_tag
            next_tag = max(next_tag, tag + 1)
            box.put(tag, nbytes)
            ref.put(tag, nbytes)
        else:
            got = box.take(nbytes)
            assert got == ref.take(nbytes)
            if got is not None:
                free_tags.insert(0, got)                    # put back later, out of order
        assert box.contents() == tuple(sorted((t, b) for b, t in ref.free))


def test_box_ties():
    box = Box()
    for tag in (5, 2, 7):
        box.put(tag, 8)
    box.put(9, 200)                       # more than 16 times 10 bytes: not a candidate
    assert box.take(10) == 7              # no tag of 10 or more in range: the largest of 8, grown
    assert box.take(8) == 2               # a size that fits exactly: its smallest tag
    assert box.take(1000) == 9 and box.take(8) == 5 and box.take(8) is None

"""plan_offsets' greedy by size (TensorFlow Lite's best fit, biggest first) against a plain
reference written from its definition: for each block, the placed blocks alive with it sorted by
offset, the gaps left between them, the smallest that fits (ties: the lowest offset), else on top
of them all. Same offsets on random lifetimes (zero sizes and overlaps in offset space included)
and on random graphs with in-place ops, repeated inputs and workspaces."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from memlab.memory.checkplan import check_plan
from memlab.memory.offsets import _blocks, _greedy_by_size, plan_offsets
from strategies import planning_graphs


def reference_greedy(first: list[int], last: list[int], size: list[int]) -> tuple[list[int], int]:
    """The definition, one block at a time, in plain Python."""
    m = len(size)
    off = [0] * m
    placed: list[int] = []
    total = 0
    for k in sorted(range(m), key=lambda k: (-size[k], first[k], k)):
        alive = [p for p in placed if first[p] <= last[k] and last[p] >= first[k]]
        alive.sort(key=lambda p: off[p])              # stable: ties in the order placed
        best, below = None, 0                         # below: the highest end so far
        for p in alive:
            gap = off[p] - below
            if gap >= size[k] and (best is None or gap < best[0]):
                best = (gap, below)
            below = max(below, off[p] + size[p])
        off[k] = best[1] if best is not None else below
        placed.append(k)
        total = max(total, off[k] + size[k])
    return off, total


@st.composite
def lifetimes(draw):
    m = draw(st.integers(1, 30))
    steps = draw(st.integers(1, 25))
    first = [draw(st.integers(0, steps - 1)) for _ in range(m)]
    last = [f + draw(st.integers(0, steps)) for f in first]
    size = [64 * draw(st.integers(0, 8)) for _ in range(m)]
    return first, last, size


@settings(deadline=None, max_examples=300)
@given(lifetimes())
def test_same_offsets_as_the_definition(blocks):
    first, last, size = blocks
    assert _greedy_by_size(first, last, size) == reference_greedy(first, last, size)


@settings(deadline=None, max_examples=40)
@given(planning_graphs(), st.booleans())
def test_same_offsets_on_random_graphs(graph, inplace):
    outs, _ = graph
    plan = plan_offsets(outs, inplace=inplace, method="greedy")
    check_plan(plan)
    first, last, size, _, _ = _blocks(plan.liveness, inplace, plan.alignment)
    off, total = reference_greedy(first, last, size)
    assert plan.total_bytes == total
    got = [plan.offset[plan.liveness.graph.nodes[c[0]]] for c in _blocks(plan.liveness, inplace,
                                                                        plan.alignment)[3]]
    assert got == off[:len(got)]

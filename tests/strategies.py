"""Shared hypothesis strategies for memlab tests (others may append)."""
from __future__ import annotations

from hypothesis import strategies as st

SHAPES = ("recursive", "deep", "bushy", "chain", "star")


@st.composite
def parent_arrays(draw, min_nodes: int = 1, max_nodes: int = 10, shapes=SHAPES) -> list[int]:
    """A parent array (root 0, -1 for the root) of a given random shape, then
    relabelled by a random permutation so the root is not always node 0."""
    n = draw(st.integers(min_nodes, max_nodes))
    shape = draw(st.sampled_from(shapes))
    par = [-1]
    for i in range(1, n):
        if shape == "recursive":
            p = draw(st.integers(0, i - 1))
        elif shape == "deep":
            p = draw(st.integers(max(0, i - 3), i - 1))
        elif shape == "bushy":
            p = draw(st.integers(0, max(0, int(i ** 0.5) - 1)))
        elif shape == "chain":
            p = i - 1
        else:
            p = 0
        par.append(p)
    perm = draw(st.permutations(range(n)))
    out = [0] * n
    for i, p in enumerate(par):
        out[perm[i]] = -1 if p < 0 else perm[p]
    return out


@st.composite
def size_lists(draw, n: int, zero: bool = False) -> list[float]:
    """n sizes: all zero, small integers, or floats."""
    if zero:
        return [0.0] * n
    kind = draw(st.sampled_from(["int", "float"]))
    if kind == "int":
        return [float(x) for x in draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))]
    return draw(st.lists(st.floats(0, 10, allow_nan=False, allow_infinity=False),
                         min_size=n, max_size=n))


@st.composite
def trees_data(draw, min_nodes: int = 1, max_nodes: int = 10, shapes=SHAPES):
    """(parent, f, m) of a random small in-tree; m is all zeros half of the time."""
    par = draw(parent_arrays(min_nodes, max_nodes, shapes))
    n = len(par)
    f = draw(size_lists(n))
    m = draw(size_lists(n, zero=draw(st.booleans())))
    return par, f, m


@st.composite
def dags_data(draw, min_tasks: int = 1, max_tasks: int = 7, max_size: int = 5):
    """(names, edges, durations, memory) of a small random DAG: edges go from
    lower to higher position in a random ordering of the tasks."""
    n = draw(st.integers(min_tasks, max_tasks))
    names = [f"t{i}" for i in range(n)]
    pos = draw(st.permutations(range(n)))
    edges = []
    for i in range(n):
        for j in range(i + 1, n):
            if draw(st.integers(0, 2)) == 0:
                edges.append((names[pos[i]], names[pos[j]], draw(st.integers(0, max_size))))
    dur = {t: float(draw(st.integers(0, 4))) for t in names}
    mem = {t: float(draw(st.integers(0, 2))) for t in names} if draw(st.booleans()) else {}
    return names, edges, dur, mem

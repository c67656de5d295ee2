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


# --- random DAGs of memlab ops (memory planning tests) ---------------------------------
import numpy as _np
from hypothesis import strategies as _st

import memlab as _ml

_UNARY = ("sigmoid", "tanh", "neg", "relu", "pool", "conv", "softmax", "reshape", "scale")
_BINARY = ("add", "mul", "sub")


def _unary(kind, x):
    if kind == "reshape":
        return _ml.reshape(_ml.reshape(x, (-1,)), x.shape)
    if kind == "scale":
        return x * 0.5
    return getattr(_ml, kind)(x)


@_st.composite
def random_dags(draw, max_nodes: int = 14):
    """``(outputs, feed)``: a random DAG of elementwise, pooling, conv, softmax, reshape,
    concat and slice ops over (3, 4) and (3, 8) float32 values, with a feed for its placeholders."""
    n_in = draw(_st.integers(1, 3))
    nodes = [_ml.placeholder(f"x{i}", (3, 4)) for i in range(n_in)]
    for _ in range(draw(_st.integers(1, max_nodes))):
        small = [n for n in nodes if n.shape == (3, 4)]
        wide = [n for n in nodes if n.shape == (3, 8)]
        kind = draw(_st.sampled_from(("unary", "unary", "binary", "binary", "concat", "slice")))
        if kind == "unary":
            x = draw(_st.sampled_from(nodes))
            nodes.append(_unary(draw(_st.sampled_from(_UNARY)), x))
        elif kind == "binary":
            pool = draw(_st.sampled_from([p for p in (small, wide) if p]))
            a, b = draw(_st.sampled_from(pool)), draw(_st.sampled_from(pool))
            nodes.append(getattr(_ml, draw(_st.sampled_from(_BINARY)))(a, b))
        elif kind == "concat":
            nodes.append(_ml.concat(draw(_st.sampled_from(small)), draw(_st.sampled_from(small)), axis=-1))
        elif wide:
            start = draw(_st.sampled_from((0, 2, 4)))
            nodes.append(_ml.slice_axis(draw(_st.sampled_from(wide)), -1, start, start + 4))
    computed = [n for n in nodes if n.op.computes]
    outs = draw(_st.lists(_st.sampled_from(computed or nodes), min_size=1, max_size=3, unique=True))
    if computed and computed[-1] not in outs:
        outs.append(computed[-1])
    rng = _np.random.default_rng(draw(_st.integers(0, 2**16)))
    feed = {n: rng.standard_normal(n.shape).astype(_np.float32) for n in nodes if n.op is _ml.PLACEHOLDER}
    return outs, feed


def all_topological_orders(nodes, preds):
    """Every order of ``nodes`` in which each node follows all of ``preds[node]`` (exhaustive, small inputs)."""
    nodes = list(nodes)

    def rec(done, order):
        if len(order) == len(nodes):
            yield list(order)
            return
        for t in nodes:
            if t not in done and set(preds[t]) <= done:
                done.add(t)
                order.append(t)
                yield from rec(done, order)
                order.pop()
                done.discard(t)

    yield from rec(set(), [])


def op_matches_numpy(build, reference, arrays) -> None:
    """An op (``build`` on float64 placeholders shaped like ``arrays``) computes what ``reference``
    computes with numpy on the same arrays."""
    import numpy as np
    import memlab as ml

    xs = [ml.placeholder(f"x{i}", a.shape, np.float64) for i, a in enumerate(arrays)]
    (got,) = ml.Executor(build(*xs)).run(dict(zip(xs, arrays)))
    np.testing.assert_allclose(got, reference(*arrays), rtol=1e-12, atol=1e-12)


def op_gradient_matches_differences(build, arrays, seed: int, what: str = "") -> None:
    """Every input's gradient of ``sum(build(...) * weights)`` (random weights, so the gradient
    reaches every output element) against central differences, in float64."""
    import numpy as np
    import memlab as ml
    from memlab.testing import central_difference

    xs = [ml.placeholder(f"x{i}", a.shape, np.float64) for i, a in enumerate(arrays)]
    y = build(*xs)
    weights = np.random.default_rng(seed + 1).standard_normal(y.shape)
    loss = ml.sum(y * ml.constant(weights))
    grads = ml.Executor(ml.gradients(loss, xs)).run(dict(zip(xs, arrays)))
    f = lambda arrs: float(ml.Executor(loss).run(dict(zip(xs, arrs)))[0])  # noqa: E731
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, central_difference(f, arrays, i), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{what}: input {i}")


MiB = 1 << 20


@st.composite
def alloc_traces(draw, max_ops: int = 40) -> list[tuple[str, int]]:
    """A random allocator trace: ("alloc", nbytes) or ("free", k) (free the k-th live block,
    modulo how many are live). Sizes mix the small pool (up to 1 MiB), the large pool under
    10 MiB and larger requests, so every pool, segment size and split rule is met."""
    size = st.one_of(st.integers(1, 4096), st.integers(1, MiB), st.integers(MiB + 1, 10 * MiB),
                     st.integers(10 * MiB, 40 * MiB))
    op = st.one_of(st.tuples(st.just("alloc"), size), st.tuples(st.just("free"),
                                                                st.integers(0, 1000)))
    return draw(st.lists(op, max_size=max_ops))
@_st.composite
def planning_graphs(draw, max_nodes: int = 12):
    """``(outputs, feed)`` of :func:`random_dags` with what the memory rule must handle beyond it:
    a constant read by some op (a given value, like the placeholders), ``x * x`` (a value read
    twice by one op), in-place ops (add, relu, reshape...) and workspaces on some op kinds
    (:func:`memlab.set_workspace`)."""
    outs, feed = draw(random_dags(max_nodes))
    nodes = _ml.topo_order(outs)
    if draw(_st.booleans()):
        x = draw(_st.sampled_from(nodes))
        c = _ml.constant(_np.ones(x.shape, _np.float32))
        outs = outs + [_ml.mul(_ml.mul(x, x), c)]
    if draw(_st.booleans()):
        present = {n.op.name for n in _ml.topo_order(outs) if not n.is_leaf}
        kinds = draw(_st.lists(_st.sampled_from(("add", "mul", "conv", "pool", "tanh", "sigmoid")),
                               max_size=3, unique=True))
        kinds = [k for k in kinds if k in present]     # set_workspace refuses ops no node has
        if kinds:
            _ml.graph.set_workspace(outs, {k: draw(_st.integers(1, 200)) for k in kinds})
    return outs, feed



"""Trees and task graphs as Dask graphs, Dask's static order, and the order Dask follows.

The pieces of :mod:`memlab.scheduling.dask` that need no cluster; its module doc says how Dask
follows priorities, which :func:`followed_order` replays.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Hashable, Sequence

from ..errors import MemlabError, TreeError, check_int
from .dasktasks import drop_meter, new_meter, node_task
from .taskgraph import TaskGraph, check_order
from .taskgraph import peak as graph_peak
from .treebase import Tree, check_traversal
from .treebase import peak as tree_peak

__all__ = ["DaskGraph", "to_dask", "dask_order", "followed_order", "require"]

def require() -> None:
    """Import dask and distributed, or say how to install them (:class:`MemlabError`)."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as e:  # pragma: no cover - the extra is installed by `make`
        raise MemlabError("memlab.scheduling.dask needs Dask: pip install 'memlab[dask]' "
                          f"(dask and distributed); {e}") from None


@dataclass
class _Spec:
    """A tree or task graph as numbered nodes: dependencies, outputs (consumer, size) and m."""

    names: list[Hashable]
    deps: list[list[int]]
    outs: list[list[tuple[int, float]]]
    m: list[float]
    obj: Tree | TaskGraph

    def peak(self, order: Sequence[int]) -> float:
        """The model's peak of a sequential order of node numbers."""
        if isinstance(self.obj, Tree):
            return tree_peak(self.obj, list(order))
        return graph_peak(self.obj, [self.names[i] for i in order])


def _spec(obj: object) -> _Spec:
    if isinstance(obj, Tree):
        outs = [[(p, obj.f[i])] if p >= 0 else [(-1, obj.f[i])] for i, p in enumerate(obj.parent)]
        return _Spec(list(range(obj.n)), [list(c) for c in obj.children], outs, list(obj.m), obj)
    if isinstance(obj, TaskGraph):
        obj.topological_order()  # raises on a cycle
        idx = {t: i for i, t in enumerate(obj.tasks)}
        return _Spec(list(obj.tasks), [[idx[u] for u in obj.pred[t]] for t in obj.tasks],
                     [[(idx[v], obj.size[(t, v)]) for v in obj.succ[t]] for t in obj.tasks],
                     [obj.memory[t] for t in obj.tasks], obj)
    raise TreeError(f"graph_or_tree must be a Tree or a TaskGraph, got {type(obj).__name__} "
                    f"{obj!r:.60}")


def _numbers(spec: _Spec, order: Sequence) -> list[int]:
    """``order`` (node names) checked as a traversal, as node numbers."""
    if isinstance(spec.obj, Tree):
        return check_traversal(spec.obj, order)
    idx = {t: i for i, t in enumerate(spec.names)}
    return [idx[t] for t in check_order(spec.obj, order)]


@dataclass
class DaskGraph:
    """A Dask graph of a tree or task graph (:func:`to_dask`): ``dsk`` (key -> Dask task),
    ``keys[i]`` the key of node ``i``, ``priority`` per key (empty: Dask's own), the ``meter``
    its tasks share."""

    dsk: dict
    keys: list[int]
    priority: dict[int, float]
    meter: str
    names: list[Hashable]
    workers: dict[int, list[str]] = field(default_factory=dict)

    def layer_graph(self) -> Any:
        """The graph as a ``HighLevelGraph`` whose layer carries the priorities (and worker
        restrictions) as Dask annotations, ready for ``Client.get``."""
        import dask
        from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

        notes: dict[str, Any] = {}
        if self.priority:
            notes["priority"] = self.priority.__getitem__
        if self.workers:
            notes["workers"] = self.workers.__getitem__
        with dask.annotate(**notes):
            layer = MaterializedLayer(dict(self.dsk))
        return HighLevelGraph({self.meter: layer}, {self.meter: set()})


def to_dask(graph_or_tree: Tree | TaskGraph, unit: int = 1024,
            order: Sequence | None = None, durations: Sequence[float] | None = None,
            placement: Sequence[str] | None = None,
            after: dict[int, list[int]] | None = None) -> DaskGraph:
    """The Dask graph of a tree (edge child -> parent) or task graph (its edges).

    Each task allocates ``unit`` bytes per unit of the model's sizes (``sizes`` in bytes: output
    files ``f`` and execution files ``m``, the latter held only while the task runs), sleeps
    ``durations[i]`` seconds, and frees its inputs. ``order`` gives the priorities (earlier, higher;
    None: no annotation, so Dask uses its own ``dask.order``);
    ``placement[i]`` a worker address node ``i`` is restricted to; ``after[i]`` extra nodes that
    must end before ``i`` starts (no data: the serializations of lesson 13's mappings).
    """
    require()
    from dask._task_spec import Task, TaskRef

    spec = _spec(graph_or_tree)
    n = len(spec.names)
    unit = check_int(unit, "to_dask: unit (bytes per unit of size)", 1, TreeError)
    rank = None if order is None else _rank(_numbers(spec, order))
    secs = [0.0] * n if durations is None else [float(x) for x in durations]
    if len(secs) != n or any(not x >= 0 for x in secs):
        raise TreeError(f"to_dask: durations must be {n} numbers >= 0 (seconds), "
                        f"got {durations!r:.60}")
    meter = new_meter().name
    # integer keys, a multiple of 2**32 apart: dask.order breaks ties by the order its sets and
    # dicts list keys in, which for strings changes with PYTHONHASHSEED and for integers with
    # their values modulo the table size; so every graph of one tree is ordered alike
    base = (int(meter.rsplit("-", 1)[1]) + 1) << 32
    keys = [base + i for i in range(n)]
    dsk = {}
    for i in range(n):
        outs = tuple((c, int(round(s * unit))) for c, s in spec.outs[i])
        refs = [TaskRef(keys[j]) for j in spec.deps[i] + list((after or {}).get(i, ()))]
        dsk[keys[i]] = Task(keys[i], node_task, meter, i, outs,
                            int(round(spec.m[i] * unit)), secs[i], *refs, _data_producer=True)
    workers = {} if placement is None else {keys[i]: [placement[i]] for i in range(n)}
    priority = {} if rank is None else {keys[i]: -float(rank[i]) for i in range(n)}
    return DaskGraph(dsk, keys, priority, meter, spec.names, workers)


def _rank(order: Sequence[int]) -> list[int]:
    rank = [0] * len(order)
    for k, v in enumerate(order):
        rank[v] = k
    return rank


def dask_order(graph_or_tree: Tree | TaskGraph) -> list:
    """The static order Dask computes for the graph (``dask.order.order``), as memlab nodes.

    Dask ranks tasks from the graph's shape alone: it does not know the sizes ``f`` and ``m``."""
    import dask.order

    g = to_dask(graph_or_tree)
    try:
        prio = dask.order.order(g.dsk)
    finally:
        drop_meter(g.meter)
    pos = {k: i for i, k in enumerate(g.keys)}
    return [g.names[pos[k]] for k in sorted(g.keys, key=prio.__getitem__)]


def followed_order(graph_or_tree: Tree | TaskGraph, order: Sequence) -> list:
    """The order a one-thread Dask worker runs when ``order`` is given as priorities.

    Dask's rule (module doc): the dependent made ready by the task that just ended runs next
    (the highest priority one if there are several); otherwise the ready task of highest priority.
    A post-order comes out unchanged; any order that leaves a ready node waiting does not.
    """
    spec = _spec(graph_or_tree)
    rank = _rank(_numbers(spec, order))
    n = len(spec.names)
    missing = [len(d) for d in spec.deps]
    users: list[list[int]] = [[] for _ in range(n)]
    for i, d in enumerate(spec.deps):
        for j in d:
            users[j].append(i)
    queue = [(rank[i], i) for i in range(n) if missing[i] == 0]
    heapq.heapify(queue)
    out: list[int] = []
    nxt: int | None = None
    while nxt is not None or queue:
        v = heapq.heappop(queue)[1] if nxt is None else nxt
        out.append(v)
        fresh = []
        for u in users[v]:
            missing[u] -= 1
            if missing[u] == 0:
                fresh.append(u)
        fresh.sort(key=rank.__getitem__)
        nxt = fresh[0] if fresh else None
        for u in fresh[1:]:
            heapq.heappush(queue, (rank[u], u))
    return [spec.names[i] for i in out]



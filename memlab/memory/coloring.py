"""Concurrency versus memory sharing (lecture 7, p.23-25).

Reusing a tag orders two ops that the data alone would not order: the op
that takes a tag must wait until every reader of the tag's previous value
has run. These **implicit dependencies** (p.23) can serialise branches that
could have run in parallel. The concurrency-aware heuristic (p.24) colours
the graph by repeatedly taking the **longest path** (reward 1 per op),
colouring it and resetting the rewards of its nodes to 0; the planner then
shares memory only within a colour. Schedulers either add the implicit
dependencies as **control dependencies** (TensorFlow) or let the two ops
declare that they **mutate** the same memory and order them by it (MXNet,
p.25). Everything here returns lists and dicts a lesson can draw.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from ..graph import Node, as_list, topo_order
from ..scheduling.listsched import run_list
from .liveness import distinct_inputs
from .longest_path import longest_path_coloring, node_colors  # noqa: F401  (ml.coloring names)
from .planner import TagPlan, plan_memory


def _ancestors(order: Sequence[Node]) -> dict[Node, int]:
    """Ancestor sets as bit masks over positions in ``order``."""
    pos = {n: i for i, n in enumerate(order)}
    anc: dict[Node, int] = {}
    for n in order:
        a = 0
        for x in n.inputs:
            a |= anc[x] | (1 << pos[x])
        anc[n] = a
    return anc


def storage_history(plan: TagPlan) -> dict[int, list[Node]]:
    """For each tag, the values that hold it, in execution order."""
    hist: dict[int, list[Node]] = {}
    for n in plan.order:
        if n in plan.storage:
            hist.setdefault(plan.storage[n], []).append(n)
    return hist


def implicit_dependencies(plan: TagPlan) -> list[tuple[Node, Node]]:
    """Edges ``(a, b)``: ``b`` must wait for ``a`` only because ``b`` reuses a tag ``a`` reads or writes (p.23).

    For each tag held by ``u`` then by ``v``, every reader of ``u`` and ``u``
    itself must run before ``v``; pairs already ordered by data
    dependencies (``a`` an ancestor of ``v``) are left out, and so are those
    implied by another listed edge (``a`` an ancestor of a listed ``a'``).
    """
    order = list(plan.order)
    pos = {n: i for i, n in enumerate(order)}
    anc = _ancestors(order)
    readers: dict[Node, list[Node]] = {n: [] for n in order}
    for n in order:
        for x in distinct_inputs(n):
            readers[x].append(n)
    edges: list[tuple[Node, Node]] = []
    for held in storage_history(plan).values():
        for u, v in zip(held, held[1:]):
            need = [a for a in dict.fromkeys([u, *readers[u]])
                    if a is not v and not (anc[v] >> pos[a]) & 1]
            # keep the latest ones: drop a when another needed op already waits for it
            edges.extend((a, v) for a in need
                         if not any((anc[b] >> pos[a]) & 1 for b in need if b is not a))
    return edges


def simulate_schedule(order: Sequence[Node], workers: int = 2,
                      extra: Iterable[tuple[Node, Node]] = (),
                      cost: Callable[[Node], float] | None = None) -> dict[str, Any]:
    """List-schedule the computed nodes on ``workers`` respecting data and ``extra`` dependencies.

    Each op takes ``cost(node)`` time (default 1); ready ops start in ``order``'s priority on the
    lowest free worker (the one list scheduler, :func:`memlab.scheduling.listsched.run_list`).
    Returns ``{"makespan": t, "slots": [(node, worker, start, end), ...]}`` in start order.
    """
    cost = cost or (lambda n: 1.0)
    ops = [n for n in order if n.op.computes]
    index = {n: i for i, n in enumerate(ops)}
    preds = [{index[x] for x in n.inputs if x in index} for n in ops]
    for a, b in extra:
        if a in index and b in index and a is not b:
            preds[index[b]].add(index[a])
    start, end, lanes = run_list(len(ops), [sorted(p) for p in preds], lambda i: cost(ops[i]),
                                 workers, list(range(len(ops))))
    slots = sorted(((ops[i], lanes[i][0], start[i], end[i]) for i in range(len(ops))),
                   key=lambda s: (s[2], index[s[0]]))
    return {"makespan": max(end, default=0.0), "slots": slots}


def concurrency_tradeoff(outputs: Node | Iterable[Node], colors: Sequence[int] = (1, 2, 4),
                         workers: int = 2, order: Sequence[Node] | None = None,
                         cost: Callable[[Node], float] | None = None) -> list[dict[str, Any]]:
    """The cost and the gain of colouring (p.24): memory and 2-worker makespan per number of colours.

    Each row: ``colors``, ``total_bytes``, ``storages``, ``implicit`` (the
    implicit dependencies) and ``makespan`` (data + implicit dependencies),
    next to ``makespan_data_only`` (no sharing constraint, the best case).
    """
    outs = as_list(outputs)
    rows = []
    for k in colors:
        plan = plan_memory(outs, colors=k, order=order, trace=False)
        imp = implicit_dependencies(plan)
        rows.append({"colors": k, "total_bytes": plan.total_bytes, "storages": plan.num_storages,
                     "implicit": imp,
                     "makespan": simulate_schedule(plan.order, workers, imp, cost)["makespan"],
                     "makespan_data_only": simulate_schedule(plan.order, workers, (), cost)["makespan"]})
    return rows


def mutation_dependencies(plan: TagPlan) -> dict[str, Any]:
    """MXNet's way (p.25): each tag is a variable that ops read or mutate, ordered as pushed.

    Returns ``{"accesses": {tag: [(node, "read" | "write"), ...]}, "deps": [(a, b), ...]}``
    where ``deps`` are what the engine derives: a write waits for the previous
    write and every read since it; a read waits for the previous write.
    """
    tag = plan.storage
    accesses: dict[int, list[tuple[Node, str]]] = {}
    for n in plan.order:
        if n not in tag:
            continue
        for x in distinct_inputs(n):
            if x in tag and tag[x] != tag[n]:
                accesses.setdefault(tag[x], []).append((n, "read"))
        accesses.setdefault(tag[n], []).append((n, "write"))
    deps: list[tuple[Node, Node]] = []
    for seq in accesses.values():
        last_write: Node | None = None
        reads: list[Node] = []
        for n, kind in seq:
            if kind == "read":
                if last_write is not None:
                    deps.append((last_write, n))
                reads.append(n)
            else:
                deps.extend((a, n) for a in ([last_write] if last_write is not None else []) + reads
                            if a is not n)
                last_write, reads = n, []
    return {"accesses": accesses, "deps": deps}


def control_vs_mutation(plan: TagPlan, workers: int = 2) -> dict[str, Any]:
    """Slide p.25: control dependencies (TensorFlow) next to mutation (MXNet) for one plan.

    Returns the control edges to add, the per-tag access lists, and the
    2-worker makespans of both; they agree, since both enforce the same
    order on each shared tag. ``data_only`` is the makespan without sharing.
    """
    control = implicit_dependencies(plan)
    mut = mutation_dependencies(plan)
    return {"control_deps": control, "accesses": mut["accesses"], "mutation_deps": mut["deps"],
            "makespan_control": simulate_schedule(plan.order, workers, control)["makespan"],
            "makespan_mutation": simulate_schedule(plan.order, workers, mut["deps"])["makespan"],
            "data_only": simulate_schedule(plan.order, workers)["makespan"]}

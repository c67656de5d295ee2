"""memlab's trees and task graphs run on Dask, with memlab's orders as task priorities.

Needs the extra ``memlab[dask]`` (``dask``, ``distributed``), imported only when a function here
is called. A node becomes one Dask task that really allocates numpy buffers of its modelled sizes
(:mod:`.dasktasks`): its outputs and, while it runs, its execution data. memlab's order reaches
Dask as priorities through Dask's own annotations (``dask.annotate(priority=...)``); the tasks log
when and where they ran, and a meter they share counts the bytes alive.

How Dask follows priorities (``distributed``'s scheduler, read from its source and measured here).
memlab marks every task a *data producer*, so Dask treats each one as root-ish and, with
``worker-saturation = 1``, keeps ready tasks in its queue and gives a one-thread worker one task at
a time, the queued task of highest priority. One rule overrides the priorities: when a task ends,
a dependent it has just made ready is sent to the freed thread at once, before anything queued
(Dask's docstring: "downstream tasks always run before new root tasks are started").
:func:`followed_order` replays that rule, so a one-worker run's order is predicted exactly: a
post-order is followed as given; Liu's optimal order, which may leave a ready parent waiting, is
not, and its measured peak is that of the order Dask followed (``ml.trees.peak`` of it). memlab
also holds the worker's thread until the whole graph is queued, or Dask would start with
whichever first task it happened to see. Handing out one task at a time costs a scheduler round
trip per task (Dask batches its messages every few milliseconds): about 6 ms a task here, a minute
for a tree of 10,000 nodes (``bench/dask_orders.py``).

Memory limits: memlab sets Dask's spill ``target`` to the whole ``memory_limit``, so a worker
spills results to disk once the results it stores exceed the limit, and reports how many
(``DaskRun.spilled``). Dask's other thresholds (spill, pause, terminate) watch the process's RSS,
which here is this whole Python process (workers are threads of it), so memlab turns them off.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import BudgetError, MemlabError, TreeError, check_int, check_number
from .dasktasks import drop_meter, hold_task, meter, register_sizeof
from .daskgraph import DaskGraph, _spec, _numbers, dask_order, followed_order, require, to_dask
from .liu import optimal_traversal
from .mapping import _mapping, all_to_all, memory_aware, proportional
from .postorder import best_postorder
from .taskgraph import MAX_EXACT_TASKS, TaskGraph, min_peak_order
from .treebase import Tree, check_tree
from .treesim import TreeSchedule, check_node_work, processor_peaks

__all__ = ["DaskGraph", "DaskRun", "LocalDask", "to_dask", "dask_order", "followed_order", "run",
           "run_mapping", "simulated_worker_peaks", "ORDERS", "MAPPINGS"]

#: the orders :func:`run` computes by name
ORDERS = ("dask", "liu", "best_postorder")
#: lesson 13's mappings :func:`run_mapping` runs
MAPPINGS = ("all-to-all", "proportional", "memory-aware")


class LocalDask:
    """A ``distributed.LocalCluster`` of ``workers`` one-thread workers, threads of this process,
    and its client; a context manager (``with LocalDask(2) as c: run(..., cluster=c)``).

    ``memory_limit`` (bytes per worker) makes workers spill stored results past it (module doc)."""

    def __init__(self, workers: int = 1, memory_limit: int | None = None) -> None:
        require()
        self.workers = check_int(workers, "LocalDask: workers", 1, TreeError)
        self.memory_limit = None if memory_limit is None else check_int(
            memory_limit, "LocalDask: memory_limit (bytes)", 1, BudgetError)
        self.cluster: Any = None
        self.client: Any = None

    def __enter__(self) -> "LocalDask":
        import logging

        import dask
        from distributed import Client, LocalCluster

        register_sizeof()
        config = {"distributed.scheduler.worker-saturation": 1.0,
                  "distributed.scheduler.work-stealing": False,
                  "distributed.worker.memory.target": 1.0 if self.memory_limit else False,
                  "distributed.worker.memory.spill": False,
                  "distributed.worker.memory.pause": False,
                  "distributed.worker.memory.terminate": False}
        try:
            with dask.config.set(config):
                self.cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1,
                                            processes=False, dashboard_address=":0",
                                            memory_limit=self.memory_limit or 0,
                                            silence_logs=logging.ERROR)
                self.client = Client(self.cluster)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client and the cluster (safe to call twice)."""
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    @property
    def addresses(self) -> list[str]:
        """The workers' addresses, worker 0 first."""
        ws = self.cluster.workers
        return [ws[k].address for k in sorted(ws)]

    def spilled(self) -> list[tuple[int, int]]:
        """``(results, bytes)`` each worker has written to disk so far."""
        ws = self.cluster.workers
        out = []
        for k in sorted(ws):
            metrics = getattr(ws[k].data, "cumulative_metrics", {})
            out.append((int(metrics.get(("disk-write", "count"), 0)),
                        int(metrics.get(("disk-write", "bytes"), 0))))
        return out



@dataclass
class DaskRun:
    """What one run on Dask measured (:func:`run`); sizes in the model's units, times in seconds.

    ``given`` the order passed as priorities (``dask.order``'s when none was); ``followed`` the
    order the tasks started in (their own log); ``peak`` the most bytes alive at once by the
    tasks' meter, ``model_peak`` the model's peak of ``followed``; ``resident_peak`` the most
    bytes really in RAM (spilled results leave it); ``start``/``end``/``worker`` per node;
    ``worker_peaks`` per worker; ``spilled`` ``(results, bytes)`` each worker wrote to disk;
    ``makespan`` first start to last end; ``times``/``memory`` the live bytes after each change."""

    given: list
    followed: list
    peak: float
    model_peak: float
    resident_peak: float
    makespan: float
    start: list[float]
    end: list[float]
    worker: list[int]
    worker_peaks: list[float]
    spilled: list[tuple[int, int]]
    wall: float
    times: list[float] = field(default_factory=list)
    memory: list[float] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    def schedule(self, label: str = "") -> TreeSchedule:
        """The run as a :class:`TreeSchedule` (one processor per worker), for Gantt charts."""
        return TreeSchedule(list(self.start), list(self.end), [(w, w + 1) for w in self.worker],
                            self.makespan, np.asarray(self.times), np.asarray(self.memory),
                            self.peak, len(self.worker_peaks), label)


def _given(spec: Any, order: object) -> list[int] | None:
    """Node numbers of the order to pass as priorities (a name of :data:`ORDERS` or a list);
    None for None (no priorities: Dask orders by itself)."""
    obj = spec.obj
    if order is None:
        return None
    if isinstance(order, str):
        if order == "dask":
            return _numbers(spec, dask_order(obj))
        if order not in ORDERS:
            raise TreeError(f"run: order must be None, one of {ORDERS} or a list of nodes, "
                            f"got {order!r}")
        if not isinstance(obj, Tree):
            raise TreeError(f"run: order {order!r} is for trees; give a TaskGraph a list of tasks "
                            "or 'dask'")
        return (optimal_traversal if order == "liu" else best_postorder)(obj)[0]
    if not isinstance(order, (list, tuple)):
        raise TreeError(f"run: order must be None, one of {ORDERS} or a list of nodes, got "
                        f"{type(order).__name__} {order!r:.60}")
    return _numbers(spec, order)


def _least_peak(spec: Any) -> float | None:
    """The least peak of any order (Liu's for trees, the exact search for small task graphs)."""
    if isinstance(spec.obj, Tree):
        return optimal_traversal(spec.obj)[1]
    if len(spec.names) <= MAX_EXACT_TASKS:
        return min_peak_order(spec.obj).peak
    return None


def _ready(dask_scheduler: Any, keys: list[int]) -> bool:
    """On the scheduler: every key has arrived and been made waiting, queued or processing."""
    tasks = dask_scheduler.tasks
    return all(k in tasks and tasks[k].state in ("waiting", "queued", "processing", "no-worker")
               for k in keys)


def _submit(c: LocalDask, g: DaskGraph, root_keys: list[int], timeout: float) -> list:
    """Hold every worker, submit the graph, open the gate once all of it is queued, gather."""
    m = meter(g.meter)
    holds = [c.client.submit(hold_task, g.meter, timeout, workers=[a], pure=False,
                             key=f"{g.meter}-hold-{k}") for k, a in enumerate(c.addresses)]
    try:
        futures = c.client.get(g.layer_graph(), root_keys, sync=False)
        deadline = time.monotonic() + timeout
        while not c.client.run_on_scheduler(_ready, keys=g.keys):
            if time.monotonic() > deadline:
                raise MemlabError(f"run: Dask did not take the graph within {timeout} s")
            time.sleep(0.005)
    finally:
        m.gate.set()
    c.client.gather(holds)
    return c.client.gather(futures)


def run(graph_or_tree: Tree | TaskGraph, order: object = None, workers: int = 1,
        memory_limit: float | None = None, unit: int = 1024,
        durations: Sequence[float] | None = None, cluster: LocalDask | None = None,
        placement: Sequence[int] | None = None, after: dict[int, list[int]] | None = None,
        timeout: float = 120.0) -> DaskRun:
    """Run a tree or task graph on a Dask ``LocalCluster`` with an order as task priorities.

    ``order``: None (no priorities: Dask's own ``dask.order``), ``"dask"`` (the same order,
    computed by :func:`dask_order` and passed as priorities), ``"liu"`` (Liu's
    optimum), ``"best_postorder"`` (trees), or a list of nodes (a traversal). ``workers`` one-thread
    workers; ``memory_limit`` per worker in the model's units (workers spill past it; it must admit
    some order: BudgetError otherwise). ``unit`` bytes per unit of size; ``durations`` seconds per
    node; ``placement[i]`` the worker node ``i`` is restricted to; ``after`` extra predecessors.
    ``cluster`` reuses a :class:`LocalDask` with as many workers; else one is made and closed.
    """
    require()
    spec = _spec(graph_or_tree)
    n = len(spec.names)
    given = _given(spec, order)
    workers = check_int(workers, "run: workers", 1, TreeError)
    limit = None
    if memory_limit is not None:
        memory_limit = check_number(memory_limit, "run: memory_limit (model units per worker)",
                                    error=BudgetError)
        least = _least_peak(spec)
        if memory_limit <= 0 or (least is not None and least > memory_limit):
            raise BudgetError(f"run: memory_limit={memory_limit:g} is below the least peak of any "
                              f"order ({least if least is not None else 'unknown'}): the graph is "
                              "too large for it at every order")
        limit = int(memory_limit * unit)
    if placement is not None:
        placement = [check_int(p, f"run: placement[{i}]", 0, TreeError) for i, p in
                     enumerate(placement)]
        if len(placement) != n or max(placement, default=0) >= workers:
            raise TreeError(f"run: placement must give each of the {n} nodes a worker in "
                            f"0..{workers - 1}, got {placement!r:.60}")
    if cluster is not None and (not isinstance(cluster, LocalDask) or cluster.client is None
                                or cluster.workers != workers or cluster.memory_limit != limit):
        raise TreeError(f"run: cluster must be an open LocalDask with {workers} workers and "
                        f"memory_limit {limit} bytes, got {cluster!r:.80}")
    if cluster is None:
        with LocalDask(workers, limit) as c:
            return _run(spec, given, c, unit, durations, placement, after, timeout)
    return _run(spec, given, cluster, unit, durations, placement, after, timeout)


def _run(spec: Any, given: list[int], c: LocalDask, unit: int, durations: Any,
         placement: list[int] | None, after: Any, timeout: float) -> DaskRun:
    addr = c.addresses
    names = None if given is None else [spec.names[i] for i in given]
    g = to_dask(spec.obj, unit, names, durations,
                None if placement is None else [addr[p] for p in placement], after)
    if given is None:  # what the scheduler computes on this very graph
        import dask.order

        prio = dask.order.order(g.dsk)
        given = sorted(range(len(spec.names)), key=lambda i: prio[g.keys[i]])
    sinks = [g.keys[i] for i in range(len(spec.names)) if any(u == -1 for u, _ in spec.outs[i])
             or not spec.outs[i]]
    spilled0 = c.spilled()
    t0 = time.perf_counter()
    try:
        results = _submit(c, g, sinks, timeout)
        wall = time.perf_counter() - t0
        m = meter(g.meter)
        peak, resident, wpeak = m.peak, m.resident_peak, dict(m.worker_peak)
        log = sorted(m.log, key=lambda e: e[2])
        trace = list(m.trace)
        for res in results:
            for buf in res.values():
                buf.release()
    finally:
        drop_meter(g.meter)
    if len(log) != len(spec.names):
        raise MemlabError(f"run: {len(log)} of {len(spec.names)} tasks logged a run")
    t_first = log[0][2]
    start, end, worker = [0.0] * len(log), [0.0] * len(log), [0] * len(log)
    for node, w, s, e in log:
        start[node], end[node], worker[node] = s - t_first, e - t_first, addr.index(w)
    followed = [e[0] for e in log]
    spilled = [(a - a0, b - b0) for (a, b), (a0, b0) in zip(c.spilled(), spilled0)]
    trace = [(t - t_first, x / unit) for t, x in trace if t >= t_first]
    return DaskRun([spec.names[i] for i in given], [spec.names[i] for i in followed],
                   peak / unit, spec.peak(followed), resident / unit, max(end), start, end, worker,
                   [wpeak.get(a, 0) / unit for a in addr], spilled, wall,
                   [0.0] + [t for t, _ in trace], [0.0] + [x for _, x in trace])


def simulated_worker_peaks(tree: Tree, sched: TreeSchedule) -> list[float]:
    """Each processor's peak in a simulated schedule, a node's data counted on the first processor
    of its range (where :func:`run_mapping` runs it): ``m + f`` from its start, ``m`` to its end,
    ``f`` to its parent's end."""
    check_tree(tree, "simulated_worker_peaks: tree")
    if not isinstance(sched, TreeSchedule) or len(sched.start) != tree.n:
        raise TreeError(f"simulated_worker_peaks: sched must be the TreeSchedule of a mapping of "
                        f"this tree (ml.mapping.proportional(tree, w, P)), got {sched!r:.60}")
    return processor_peaks(tree, sched, spread=False)


def run_mapping(tree: Tree, mapping: str = "proportional", P: int = 2,
                w: Sequence[float] | None = None, M_B: float | None = None,
                seconds: float = 0.02, alpha: float = 1.0, unit: int = 1024,
                cluster: LocalDask | None = None) -> tuple[DaskRun, TreeSchedule]:
    """Lesson 13's mapping run on ``P`` Dask workers, beside the simulator's schedule.

    Node ``i`` runs on the first worker of its processor range for ``w[i] / width**alpha`` work
    units of ``seconds`` each (node parallelism becomes a shorter task), with the mapping's
    priorities and its serializations as extra dependencies.
    Returns ``(run, simulated schedule)``."""
    check_tree(tree, "run_mapping: tree")
    if mapping not in MAPPINGS:
        raise TreeError(f"run_mapping: mapping must be one of {MAPPINGS}, got {mapping!r:.60}")
    P = check_int(P, "run_mapping: P", 1, TreeError)
    w = check_node_work(tree, w)
    seconds = check_number(seconds, "run_mapping: seconds (per unit of work)", error=TreeError)
    if not seconds >= 0:
        raise TreeError(f"run_mapping: seconds must be >= 0, got {seconds}")
    if M_B is not None and not check_number(M_B, "run_mapping: M_B (a memory bound, or None)",
                                            error=BudgetError) > 0:
        raise BudgetError(f"run_mapping: M_B must be a positive memory bound or None, got {M_B}")
    if mapping == "all-to-all":
        sched = all_to_all(tree, w, P, alpha=alpha)
        order, after = best_postorder(tree)[0], {}
    else:
        sched = (proportional(tree, w, P, alpha=alpha) if mapping == "proportional"
                 else memory_aware(tree, w, P, M_B, alpha=alpha))
        budget = None if mapping == "proportional" else sched.extra["bound"]
        _, rank, after, _ = _mapping(tree, w, P, budget)
        order = sorted(range(tree.n), key=rank.__getitem__)
    width = [hi - lo for lo, hi in sched.procs]
    durations = [w[i] / width[i] ** alpha * seconds for i in range(tree.n)]
    placement = [lo for lo, _ in sched.procs]
    r = run(tree, order, P, unit=unit, durations=durations, cluster=cluster,
            placement=placement, after=after)
    r.extra.update(mapping=mapping, seconds=seconds, simulated_worker_peaks=
                   simulated_worker_peaks(tree, sched), simulated_makespan=sched.makespan * seconds)
    return r, sched

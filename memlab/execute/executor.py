"""The executor students call: ``Executor(outputs, plan=..., memory=...).run(feed)``.

It picks one :class:`~memlab.execute.runner.Runner` -- naive (p.10-13), pool (p.14-16) or arena
(p.17-22) -- and runs the graph with it; all three share one run loop.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import MemlabError, PlanError
from ..graph import Node, as_list
from ..memory.order import resolve_order
from ..memory.plan import Plan
from ..memory.bfc import BFCAllocator
from ..memory.caching import CachingAllocator
from .arena import ArenaRunner
from .naive import NaiveRunner
from .pooled import PoolRunner
from .caching import CachingRunner
from .runner import Runner, RunStats

MEMORY = ("naive", "pool", "arena", "caching", "caching-expandable", "bfc")
DEVICES = ("cpu", "cuda")
ALLOCATORS = {"caching": CachingAllocator, "bfc": BFCAllocator,
              "caching-expandable": lambda: CachingAllocator(expandable_segments=True)}


class Executor:
    """Evaluate ``outputs`` given a feed of placeholder values.

    ``Executor(outputs).run(feed)`` is the naive executor: one fresh array per intermediate, never
    reused (p.10-13). ``Executor(outputs, memory="pool")`` allocates from a caching pool node by
    node and frees after last use (p.14-16). ``Executor(outputs, plan=plan)`` computes inside a
    static memory plan (tags or offsets, p.17-22): one arena, every op writing into its view
    (``memory="arena"`` is implied; asking for another memory with a plan is an error). After a
    run, ``stats`` is the runner's :class:`~memlab.execute.runner.RunStats` and ``runner`` the
    runner itself (``runner.pool``, ``runner.arena_bytes``).

    ``device="cuda"`` runs the same three memories on a CUDA GPU or in Numba's simulator
    (:mod:`memlab.execute.device`): one device allocation laid out by the plan (which must be made
    with ``alignment=256``), a device memory pool, or one allocation per value. Results come back
    as numpy arrays.

    ``order``: the execution order of the naive and pool runners: an explicit order, a method of
    :func:`~memlab.memory.order.memory_order` (``"dfs"``: depth-first) or None for its
    memory-aware default (the scheduling slides, part 1).

    Beyond the slides, ``memory="caching"`` allocates node by node from PyTorch's caching
    allocator (:class:`~memlab.memory.caching.CachingAllocator`; ``"caching-expandable"`` with
    expandable segments) and ``memory="bfc"`` from TensorFlow's
    (:class:`~memlab.memory.bfc.BFCAllocator`), every value a view into its block
    (``runner.allocator``); these run on the CPU. A plan runs in its own order, for its own outputs:
    ``Executor(plan=plan)`` takes both from the plan (outputs given too must be the plan's, in any
    order, else :class:`~memlab.errors.PlanError`).
    """

    def __init__(self, outputs: Node | Iterable[Node] | None = None, plan: Plan | None = None,
                 memory: str | None = None, device: str = "cpu",
                 order: Sequence[Node] | str | None = None) -> None:
        if outputs is None:
            if plan is None:
                raise MemlabError("Executor needs the outputs to compute, or a plan= made for them")
            outputs = getattr(plan, "outputs", None)
            if outputs is None:
                raise PlanError(f"plan= needs a memory plan (plan_memory or plan_offsets), "
                                f"got {type(plan).__name__}")
        self.outputs = as_list(outputs)
        if memory is None:
            memory = "naive" if plan is None else "arena"
        if memory not in MEMORY:
            raise MemlabError(f"memory must be one of {', '.join(map(repr, MEMORY))}, "
                              f"got {memory!r}")
        if (memory == "arena") != (plan is not None):
            raise MemlabError("memory='arena' needs plan=, and plan= runs only in an arena; "
                              f"got memory={memory!r} with plan={type(plan).__name__}")
        if device not in DEVICES:
            raise MemlabError(f"device must be one of {', '.join(map(repr, DEVICES))}, "
                              f"got {device!r}")
        if plan is not None and order is not None:
            raise MemlabError("a plan runs in its own order (plan.order): pass order= to the "
                              "planner, not to Executor(..., plan=...)")
        self.device = device
        self.runner: Runner
        steps = [] if plan is not None else resolve_order(self.outputs, order)  # a plan: its own
        if device == "cuda" and memory in ALLOCATORS:
            raise MemlabError(f"memory={memory!r} runs on the CPU only: use device='cpu'")
        if device == "cuda":
            from .device import device_runner  # imports numba: only when a device is asked for
            self.runner = device_runner(self.outputs, steps, plan, memory)
        elif plan is not None:
            self.runner = ArenaRunner(self.outputs, plan)
        elif memory == "pool":
            self.runner = PoolRunner(self.outputs, steps)
        elif memory in ALLOCATORS:
            self.runner = CachingRunner(self.outputs, steps, ALLOCATORS[memory])
        else:
            self.runner = NaiveRunner(self.outputs, steps)
        self.order = self.runner.order

    @property
    def stats(self) -> RunStats:
        """What the last run cost (see :class:`~memlab.execute.runner.RunStats`)."""
        return self.runner.stats

    def run(self, feed: Mapping[Any, Any] | None = None) -> list[np.ndarray]:
        """Compute every output; returns their values in order."""
        return self.runner.run(feed)

"""Running a graph (CSE599G1 lecture 7, p.10-22): one run loop behind several runners.

:mod:`.runner` holds the loop ("traverse by topological order", p.12) and :class:`Runner`;
:mod:`.naive` allocates a fresh array per value (p.10-13), :mod:`.pooled` draws from a memory pool
(p.14-16), :mod:`.caching` from PyTorch's caching allocator (beyond the slides), :mod:`.arena`
computes into one arena at a static plan's offsets (p.17-22);
:class:`Executor` picks one. :mod:`.compute` runs one op. Imports :mod:`memlab.graph` and
:mod:`memlab.memory`.
"""
from .compute import check_feed, compute_node
from .runner import Runner, RunStats, Step
from .naive import NaiveRunner
from .pooled import PoolRunner
from .caching import CachingRunner
from .arena import ArenaRunner, check_placement
from .executor import Executor

__all__ = ["check_feed", "compute_node", "Runner", "RunStats", "Step", "NaiveRunner",
           "PoolRunner", "CachingRunner", "ArenaRunner", "check_placement", "Executor"]

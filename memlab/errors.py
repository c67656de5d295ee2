"""Errors raised by memlab.

Every problem a user can cause (a bad graph, a bad feed, a bad plan, a bad
tree, a budget too small) raises a subclass of :class:`MemlabError` whose
message names the node, value or parameter at fault and says what is wrong.
"""
from __future__ import annotations


class MemlabError(Exception):
    """Base class of every error memlab raises on bad input."""


class GraphError(MemlabError):
    """A malformed computational graph (bad inputs, unknown op, ...)."""


class CycleError(GraphError):
    """The graph has a cycle, so no topological order exists."""


class ShapeError(GraphError):
    """The shapes of an op's inputs do not fit together."""


class UnknownOpError(GraphError):
    """A node's op is not a memlab :class:`~memlab.ops.Op`."""


class FeedError(MemlabError):
    """A placeholder is missing from the feed, or fed a value of the wrong shape or dtype."""


class PlanError(MemlabError):
    """A memory plan or execution order is invalid."""


class BudgetError(MemlabError):
    """A memory budget is too small; the message states the minimum."""


class ScheduleError(MemlabError):
    """A checkpointing schedule that cannot run: an action uses a value that is not held."""


class TreeError(MemlabError):
    """A malformed tree or task graph, or an order that is not a valid traversal."""


class GradingError(MemlabError):
    """A notebook cannot be assigned or graded (bad metadata, missing solution, ...)."""


class DeviceError(MemlabError):
    """The CUDA device cannot run this: no GPU and no simulator, a dtype other than float32,
    or an op without a kernel."""

"""Errors raised by memlab.

Every problem a user can cause (a bad graph, a bad feed, a bad plan, a bad
tree, a budget too small) raises a subclass of :class:`MemlabError` whose
message names the node, value or parameter at fault and says what is wrong. The ``check_*``
functions at the end validate one argument at a public boundary (a bool, an integer, a number, one
of some names, a list), so every layer says the same thing the same way.
"""
from __future__ import annotations

import math
import numbers
from typing import Callable, Iterable


class MemlabError(Exception):
    """Base class of every error memlab raises on bad input."""


class GraphError(MemlabError):
    """A malformed computational graph (bad inputs, unknown op, ...)."""


class CycleError(GraphError):
    """The graph has a cycle, so no topological order exists."""


class ShapeError(GraphError):
    """The shapes of an op's inputs do not fit together."""


class UnknownOpError(GraphError):
    """A node's op is not a memlab :class:`~memlab.graph.node.Op`."""


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


class OutOfMemoryError(MemlabError):
    """An allocator with a capacity cannot serve a request, even after releasing its cache; the
    message gives the request, the capacity, what is allocated and what is reserved but unused."""


class DeviceError(MemlabError):
    """The CUDA device cannot run this: no GPU and no simulator, a dtype other than float32,
    or an op without a kernel."""


# -- Checks at the public boundary ---------------------------------------------------------------
# Each checks one argument, returns it (normalised) and otherwise raises ``error`` with a message
# that names the argument (``what``, e.g. ``"plan_memory: colors"``), what is allowed and the value
# given. Public functions call them once, at entry, never per node.

def _bad(error: type[MemlabError], what: str, allowed: str, value: object) -> MemlabError:
    shown = repr(value)
    return error(f"{what} must be {allowed}, got {shown if len(shown) < 80 else shown[:77] + '...'}")


def check_bool(value: object, what: str, error: type[MemlabError] = MemlabError) -> bool:
    """``value`` as a bool if it is True or False (a numpy bool too); nothing else is taken for one."""
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):
        return bool(value)
    raise _bad(error, what, "True or False", value)


def check_int(value: object, what: str, low: int | None = None,
              error: type[MemlabError] = MemlabError) -> int:
    """``value`` as an int if it is an integer (numpy's too, not a bool) of at least ``low``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) \
            and (low is None or value >= low):
        return int(value)
    raise _bad(error, what, "an integer" + ("" if low is None else f" >= {low}"), value)


def check_number(value: object, what: str, low: float | None = None, above: float | None = None,
                 error: type[MemlabError] = MemlabError) -> float:
    """``value`` as a float if it is a finite real number (not a bool), ``>= low`` or
    ``> above`` when given."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) \
            and (low is None or value >= low) and (above is None or value > above):
        return float(value)
    bound = "" if low is None else f" >= {low}"
    bound += "" if above is None else f" > {above}"
    raise _bad(error, what, "a finite number" + bound, value)


def check_choice(value: object, what: str, choices: Iterable[str],
                 error: type[MemlabError] = MemlabError) -> str:
    """``value`` if it is one of the strings ``choices``."""
    choices = tuple(choices)
    if isinstance(value, str) and value in choices:
        return value
    raise _bad(error, what, "one of " + ", ".join(map(repr, choices)), value)


def check_callable(value: object, what: str, error: type[MemlabError] = MemlabError) -> Callable:
    """``value`` if it can be called."""
    if callable(value):
        return value
    raise _bad(error, what, "a function", value)


def check_list(value: object, what: str, error: type[MemlabError] = MemlabError,
               nonempty: bool = False) -> list:
    """``value`` as a list if it is a sequence or iterable of items (not a string, bytes or a
    mapping), with at least one item when ``nonempty``."""
    if not isinstance(value, (str, bytes, dict)) and isinstance(value, Iterable):
        items = list(value)
        if items or not nonempty:
            return items
    raise _bad(error, what, "a non-empty list" if nonempty else "a list", value)


def check_numbers(value: object, what: str, low: float | None = None,
                  error: type[MemlabError] = MemlabError, nonempty: bool = False) -> list[float]:
    """``value`` as a list of floats: a list of finite real numbers, each ``>= low``."""
    items = check_list(value, what, error, nonempty)
    return [check_number(v, f"{what}[{i}]", low, error=error) for i, v in enumerate(items)]

"""The chain model of backpropagation and the replay of a schedule (scheduling slides, "Backpropagation graphs").

A chain of ``l`` forward steps ``x_{i+1} = F_i(x_i)`` (i = 0..l-1) is followed by the backward steps
``y_i = B_i(x_i, y_{i+1})`` for i = l, l-1, ..., 0; ``y_{l+1}``, the loss seed, is implicit and
takes no memory. Every value ``x_i`` or ``y_i`` fills one **slot**. A schedule is a list of actions:

* ``Forward(i, keep)`` -- compute ``x_{i+1}`` from ``x_i``; with ``keep`` the new value takes a free
  slot and ``x_i`` stays (a checkpoint), without it ``x_{i+1}`` overwrites ``x_i``;
* ``Backward(i)`` -- consume ``x_i`` and ``y_{i+1}``, leave ``y_i`` in one slot;
* ``Free(value)`` -- drop a held value (``"x3"``, ``"y4"``).

:func:`simulate` replays a schedule against this model: the **peak** is the most values held at
once, the **recomputations** the forward steps executed beyond the first ``l``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from heapq import heappop, heappush
from typing import Iterable, NamedTuple, Sequence, Union

from ..plaindata import register as _register_plain
from ..errors import ScheduleError, check_bool, check_list


class Forward(NamedTuple):
    """``x_{i+1} = F_i(x_i)``; ``keep``: the input stays held (a checkpoint) instead of overwritten."""

    i: int
    keep: bool = False

    def __str__(self) -> str:
        return f"F{self.i}{'+keep' if self.keep else ''}"


class Backward(NamedTuple):
    """``y_i = B_i(x_i, y_{i+1})``: consumes both inputs, leaves ``y_i``."""

    i: int

    def __str__(self) -> str:
        return f"B{self.i}"


class Free(NamedTuple):
    """Drop a held value, named ``"x<i>"`` or ``"y<i>"``."""

    value: str

    def __str__(self) -> str:
        return f"free {self.value}"


Action = Union[Forward, Backward, Free]


def action_to_plain(a: Action) -> tuple:
    """A chain action as plain data: ``("F", i, keep)``, ``("B", i)`` or ``("free", value)``."""
    if isinstance(a, Forward):
        return ("F", int(a.i), bool(a.keep))
    if isinstance(a, Backward):
        return ("B", int(a.i))
    if isinstance(a, Free):
        return ("free", str(a.value))
    raise ScheduleError(f"not a chain action (Forward, Backward or Free): {a!r:.60}")


def action_from_plain(data: object) -> Action:
    """The action :func:`action_to_plain` wrote."""
    if isinstance(data, (tuple, list)) and data:
        kind, *rest = data
        if kind == "F" and len(rest) == 2 and isinstance(rest[0], int) and isinstance(rest[1], bool):
            return Forward(rest[0], rest[1])
        if kind == "B" and len(rest) == 1 and isinstance(rest[0], int):
            return Backward(rest[0])
        if kind == "free" and len(rest) == 1 and isinstance(rest[0], str):
            return Free(rest[0])
    raise ScheduleError(f"not a plain chain action: {str(data)[:60]}")


@dataclass
class Simulation:
    """What replaying a schedule found: ``peak`` slots, ``recomputations``, ``forwards`` executed,
    and ``slots[k]``: the slot contents after action k (``slots[0]`` is the start, ``x0`` alone)."""

    l: int
    peak: int
    recomputations: int
    forwards: int
    slots: list[tuple[str | None, ...]] = field(repr=False)


class _At:
    """Names an action in an error message ("action 7 (F2+keep)"), formatted only when raised."""

    __slots__ = ("k", "a")

    def __init__(self, k: int, a: object) -> None:
        self.k, self.a = k, a

    def __format__(self, spec: str) -> str:
        return f"action {self.k} ({self.a})"


def _value(name: object, l: int, where: object) -> tuple[str, int]:
    if not isinstance(name, str) or len(name) < 2 or name[0] not in "xy" or not name[1:].isdigit():
        raise ScheduleError(f"{where}: {name!r} is not a value name like 'x3' or 'y4'")
    if int(name[1:]) > l:
        raise ScheduleError(f"{where}: {name!r} is outside the chain (l = {l})")
    return name[0], int(name[1:])


def simulate(actions: Iterable[Action], l: int, record: bool = True) -> Simulation:
    """Replay ``actions`` on a chain of ``l`` steps, starting with ``x0`` held.

    Raises :class:`~memlab.errors.ScheduleError` naming the action (its position and text) and the
    value it lacks when an action's inputs are not held, and when the schedule ends without
    ``y0``. A new value takes the lowest free slot; an overwrite keeps the slot; ``y_i`` takes the
    slot of ``y_{i+1}`` (of ``x_l`` for i = l). ``record=False`` skips the slot history.
    """
    check_length(l)
    actions = check_list(actions, "simulate: actions", ScheduleError)
    record = check_bool(record, "simulate: record", ScheduleError)
    slot_of: dict[tuple[str, int], int] = {("x", 0): 0}   # held value -> its slot
    free: list[int] = []                                 # free slots below the top, a heap
    top = 1                                              # slots ever used
    contents: list[tuple[str, int] | None] = [("x", 0)]
    history = [("x0",)] if record else []
    peak, forwards, next_b = 1, 0, l

    def take(value: tuple[str, int], slot: int | None) -> None:
        nonlocal top
        if slot is None:
            if free:
                slot = heappop(free)
            else:
                slot, top = top, top + 1
                contents.append(None)
        slot_of[value] = slot
        contents[slot] = value

    for k, a in enumerate(actions):
        kind = type(a)
        if kind is Forward:
            i = a.i
            if not isinstance(i, int) or not 0 <= i < l:
                raise ScheduleError(f"{_At(k, a)}: forward step {i!r} is outside 0..{l - 1}")
            if ("x", i) not in slot_of:
                raise ScheduleError(f"{_At(k, a)}: needs x{i}, which is not held")
            if ("x", i + 1) in slot_of:
                raise ScheduleError(f"{_At(k, a)}: x{i + 1} is already held")
            take(("x", i + 1), None if a.keep else slot_of.pop(("x", i)))
            forwards += 1
        elif kind is Backward:
            i = a.i
            if i != next_b:
                raise ScheduleError(f"{_At(k, a)}: the next backward step is B{next_b}, not B{i}")
            need = [("x", i)] + ([("y", i + 1)] if i < l else [])
            missing = [f"{v}{j}" for v, j in need if (v, j) not in slot_of]
            if missing:
                raise ScheduleError(f"{_At(k, a)}: needs {' and '.join(missing)}, not held")
            slots = [slot_of.pop(v) for v in need]
            for extra in slots[:-1]:
                contents[extra] = None
                heappush(free, extra)
            take(("y", i), slots[-1])
            next_b -= 1
        elif kind is Free:
            value = _value(a.value, l, _At(k, a))
            slot = slot_of.pop(value, None)
            if slot is None:
                raise ScheduleError(f"{_At(k, a)}: {a.value} is not held")
            contents[slot] = None
            heappush(free, slot)
        else:
            raise ScheduleError(f"{_At(k, a)}: not a Forward, Backward or Free action")
        if len(slot_of) > peak:
            peak = len(slot_of)
        if record:
            history.append(tuple(None if v is None else f"{v[0]}{v[1]}" for v in contents))
    if next_b >= 0:
        raise ScheduleError(f"the schedule ends before B{next_b}: y0 is never computed")
    return Simulation(l, peak, forwards - l, forwards, history)


@dataclass
class Schedule:
    """A schedule for a chain of ``l`` steps: its ``actions``, and the ``peak`` (slots) and
    ``recomputations`` that :func:`simulate` finds for it; ``name`` says which strategy made it."""

    name: str
    l: int
    actions: list[Action]
    peak: int = 0
    recomputations: int = 0

    def __post_init__(self) -> None:
        sim = simulate(self.actions, self.l, record=False)
        self.peak, self.recomputations = sim.peak, sim.recomputations

    @property
    def forwards(self) -> int:
        """Forward steps executed (``l`` plus the recomputations)."""
        return self.l + self.recomputations

    def simulate(self) -> Simulation:
        """Replay this schedule (for the slot contents after every action)."""
        return simulate(self.actions, self.l)

    def __str__(self) -> str:
        return " ".join(map(str, self.actions))


def check_length(l: object) -> int:
    """``l`` as a chain length, or a :class:`ScheduleError`."""
    if not isinstance(l, int) or isinstance(l, bool) or l < 1:
        raise ScheduleError(f"the chain length l must be an integer >= 1, got {l!r}")
    return l


def describe(actions: Sequence[Action]) -> list[str]:
    """The actions as short strings (``F2+keep``, ``B4``, ``free x3``), for tables and steppers."""
    return [str(a) for a in actions]


_register_plain("action", (Forward, Backward, Free), action_to_plain, action_from_plain)

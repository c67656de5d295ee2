"""Several memories: checkpoints in a hierarchy of storage levels (scheduling slides, "heterogeneous model + K
memories"; the disk model of Aupy, Herrmann, Hovland and Robert 2016; H-Revolve, Aupy and Herrmann
2020).

Level 0 is the working memory of the slot model (``slots[0]`` slots; every forward and backward step
runs there). Each further level ``k`` holds ``slots[k]`` checkpoints (``None``: unbounded, a disk);
writing a value there costs ``write[k]``, reading it back into level 0 costs ``read[k]``, and its
copy stays until its segment is reversed. A forward step costs ``forward_cost``. We minimise the
total time of forward steps, writes and reads (backward steps cost the same in every schedule).

The dynamic program reverses a segment from a checkpoint ``x_s`` held at some level: run ``B_s`` if
the segment is one step, else advance ``j`` steps from ``x_s`` (reading it first if it lives on a
slower level and is not already in level 0), store ``x_{s+j}`` at a level with room, reverse the
right part, then the left part. With no level besides 0 it is :func:`~memlab.checkpoint.optimal`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import inf
from typing import Mapping, Sequence

from ..errors import BudgetError, ScheduleError, check_int, check_list, check_number, check_numbers
from .chain import check_length


@dataclass(frozen=True)
class Event:
    """One step of a multi-level schedule: ``kind`` is ``"F"``, ``"B"``, ``"write"`` or ``"read"``,
    ``i`` the step or value index, ``level`` where a checkpoint is written or read from; a forward
    step with ``keep`` leaves its input in level 0 (a level-0 checkpoint)."""

    kind: str
    i: int
    level: int = 0
    keep: bool = False


@dataclass
class LevelSchedule:
    """The optimum: ``events`` in order, ``time`` (forward steps, writes and reads), and counts."""

    l: int
    slots: tuple[int | None, ...]
    events: list[Event]
    time: float
    forwards: int
    writes: int
    reads: int


def _levels(slots: Sequence[int | None], write: Sequence[float], read: Sequence[float]) -> None:
    if not slots or slots[0] is None or slots[0] < 1:
        raise BudgetError(f"level 0 needs a whole number of slots >= 1, got {list(slots)!r}")
    if len(write) != len(slots) or len(read) != len(slots):
        raise ScheduleError(f"write and read need one cost per level ({len(slots)} levels), "
                            f"got {len(write)} and {len(read)}")
    for k, (c, w, r) in enumerate(zip(slots, write, read)):
        if (c is not None and c < 0) or w < 0 or r < 0:
            raise ScheduleError(f"level {k}: slots, write and read costs must be >= 0")


def multilevel_optimal(l: int, slots: Sequence[int | None], write: Sequence[float] = (),
                       read: Sequence[float] = (), forward_cost: float = 1.0) -> LevelSchedule:
    """The least-time schedule of an ``l``-step chain over storage levels ``slots`` (level 0 first).

    ``write[k]`` and ``read[k]`` are the costs of level ``k`` (entry 0 is ignored: level 0 is where
    computing happens). Raises :class:`~memlab.errors.BudgetError` with the minimum when level 0 is
    too small.
    """
    check_length(l)
    slots = check_list(slots, "multilevel_optimal: slots", BudgetError, nonempty=True)
    for k, c in enumerate(slots):
        if c is not None:
            check_int(c, f"multilevel_optimal: slots[{k}] (or None: unlimited)", 0, BudgetError)
    write = check_numbers(write, "multilevel_optimal: write", 0, ScheduleError) or [0.0] * len(slots)
    read = check_numbers(read, "multilevel_optimal: read", 0, ScheduleError) or [0.0] * len(slots)
    forward_cost = check_number(forward_cost, "multilevel_optimal: forward_cost", 0,
                                error=ScheduleError)
    _levels(slots, write, read)
    if slots[0] < (2 if l == 1 else 3):
        raise BudgetError(f"level 0 has {slots[0]} slot(s), too few for l = {l}: "
                          f"the minimum is {2 if l == 1 else 3}")
    K = len(slots)

    @lru_cache(maxsize=None)
    def best(n: int, m: int, lvl: int, fresh: bool, caps: tuple[int, ...], adj: bool):
        """Least time to reverse n + 1 steps from x_s at level ``lvl`` with ``m`` level-0 slots for
        this segment; ``fresh``: a copy of x_s is in level 0; ``adj``: y_{s+n+1} is held there."""
        here = 1 if (lvl == 0 or fresh) else 0
        if here + adj > m:
            return inf, None
        get = 0.0 if here else read[lvl]  # a copy of x_s in level 0 for the next step
        if n == 0:
            return (get, ("B",)) if 1 + adj <= m else (inf, None)
        options = [(inf, None)]
        if lvl and not fresh and 2 + adj <= m:  # promote: read x_s once and keep it in level 0
            t, _ = best(n, m, 0, False, caps, adj)
            options.append((read[lvl] + t, ("promote",)))
        if lvl == 0:  # demote: write x_s to a slower level and free its level-0 slot
            for k in range(1, K):
                if caps[k] != 0:
                    t, _ = best(n, m, k, True, _less(caps, k), adj)
                    options.append((write[k] + t, ("demote", k)))
        work = (2 if lvl == 0 else 1) + adj  # during the advance: x_s (if in level 0), working, y
        if work <= m:
            outer = 1 if lvl == 0 else 0      # x_s keeps its level-0 slot during the right part
            for j in range(1, n + 1):
                left, _ = best(j - 1, m, lvl, False, caps, True)
                if left == inf:
                    continue
                base = get + j * forward_cost + left
                right, _ = best(n - j, m - outer, 0, False, caps, adj)
                options.append((base + right, ("adv", j, 0)))
                for k in range(1, K):
                    if caps[k] == 0:
                        continue
                    right, _ = best(n - j, m - outer, k, True, _less(caps, k), adj)
                    options.append((base + write[k] + right, ("adv", j, k)))
        return min(options, key=lambda o: o[0])

    caps0 = tuple(UNBOUNDED if c is None else int(c) for c in slots)
    total, _ = best(l, slots[0], 0, False, caps0, False)
    if total == inf:  # pragma: no cover - excluded by the minimum check above
        raise BudgetError(f"no schedule fits level 0's {slots[0]} slots")
    events: list[Event] = []
    _emit(best, events, 0, l, slots[0], 0, False, caps0, False)
    f = sum(e.kind == "F" for e in events)
    return LevelSchedule(l, tuple(slots), events, total, f,
                         sum(e.kind == "write" for e in events), sum(e.kind == "read" for e in events))


UNBOUNDED = -1  #: the capacity of a level without a limit (a disk); it never runs out


def _less(caps: tuple[int, ...], k: int) -> tuple[int, ...]:
    """Capacities after one more checkpoint is stored at level ``k``."""
    return caps if caps[k] == UNBOUNDED else caps[:k] + (caps[k] - 1,) + caps[k + 1:]


def _emit(best, events: list[Event], s: int, n: int, m: int, lvl: int, fresh: bool,
          caps: tuple[int, ...], adj: bool) -> None:
    """Replay the choices of ``best`` as events (iteratively: deep chains recurse deeply)."""
    stack = [(s, n, m, lvl, fresh, caps, adj)]
    while stack:
        s, n, m, lvl, fresh, caps, adj = stack.pop()
        here = lvl == 0 or fresh
        _, choice = best(n, m, lvl, fresh, caps, adj)
        if choice[0] == "B":
            if not here:
                events.append(Event("read", s, lvl))
            events.append(Event("B", s))
            continue
        if choice[0] == "promote":
            events.append(Event("read", s, lvl))
            stack.append((s, n, m, 0, False, caps, adj))
            continue
        if choice[0] == "demote":
            k = choice[1]
            events.append(Event("write", s, k))
            stack.append((s, n, m, k, True, _less(caps, k), adj))
            continue
        _, j, k = choice
        if not here:
            events.append(Event("read", s, lvl))
        events.append(Event("F", s, keep=lvl == 0))  # a level-0 checkpoint stays; a copy does not
        events.extend(Event("F", q) for q in range(s + 1, s + j))
        outer = 1 if lvl == 0 else 0
        c2 = caps
        if k:
            events.append(Event("write", s + j, k))
            c2 = _less(caps, k)
        stack.append((s, j - 1, m, lvl, False, caps, True))        # left part, after the right
        stack.append((s + j, n - j, m - outer, k, bool(k), c2, adj))


def time_against_memory(l: int, level0: Sequence[int], slots_rest: Sequence[int | None],
                        write: Sequence[float], read: Sequence[float]) -> list[dict[str, float]]:
    """Total time for each size of level 0 (the curve of the seed's several-memories slide)."""
    rows = []
    for m in level0:
        s = multilevel_optimal(l, [m, *slots_rest], [0.0, *write], [0.0, *read])
        rows.append({"level0": m, "time": s.time, "forwards": s.forwards, "writes": s.writes,
                     "reads": s.reads})
    return rows


def disk_curves(l: int, level0: Sequence[int], disks: Mapping[str, float | None]
                ) -> list[dict[str, object]]:
    """:func:`time_against_memory` for one two-level memory per entry of ``disks`` (lesson 08,
    the several-memories slide): ``disks`` maps a label to the cost of writing and of reading a
    checkpoint on an unbounded disk, or to ``None`` for level 0 alone. Each row gets its
    ``label``."""
    if not isinstance(disks, Mapping) or not disks:
        raise BudgetError(f"disk_curves: disks must be a non-empty mapping label -> cost or None, "
                          f"got {disks!r}")
    level0 = [check_int(m, "disk_curves: a size of level 0 (slots)", 1, BudgetError)
              for m in check_list(level0, "disk_curves: level0 (sizes of level 0)", BudgetError,
                                  nonempty=True)]
    rows: list[dict[str, object]] = []
    for label, cost in disks.items():
        if cost is None:
            rest, w = [0], [0.0]
        else:
            w = [check_number(cost, f"disk_curves: cost of disk {label!r}", 0, error=BudgetError)]
            rest = [None]
        rows += [dict(r, label=label) for r in time_against_memory(l, level0, rest, w, w)]
    return rows



def replay_levels(schedule: LevelSchedule, write: Sequence[float], read: Sequence[float],
                  forward_cost: float = 1.0) -> tuple[float, list[int]]:
    """Replay ``schedule.events`` independently: raise :class:`ScheduleError` at the first event whose
    input is missing; return the total time and the most values each level held (level 0 counts
    the ``y`` values too)."""
    levels: list[set] = [{("x", 0)}] + [set() for _ in schedule.slots[1:]]
    peak, time, nb = [1] + [0] * (len(levels) - 1), 0.0, schedule.l
    for k, e in enumerate(schedule.events):
        work = levels[0]
        if e.kind == "F":
            if ("x", e.i) not in work or ("x", e.i + 1) in work:
                raise ScheduleError(f"event {k} (F{e.i}): x{e.i} missing or x{e.i + 1} held")
            work.add(("x", e.i + 1))
            if not e.keep:
                work.discard(("x", e.i))
            time += forward_cost
        elif e.kind == "B":
            need = {("x", e.i)} | ({("y", e.i + 1)} if e.i < schedule.l else set())
            if e.i != nb or not need <= work:
                raise ScheduleError(f"event {k} (B{e.i}): its inputs are not in level 0")
            work -= need
            work.add(("y", e.i))
            for lv in levels[1:]:
                lv.discard(("x", e.i))
            nb -= 1
        elif e.kind == "write":
            if ("x", e.i) not in work:
                raise ScheduleError(f"event {k} (write x{e.i}): x{e.i} is not in level 0")
            levels[e.level].add(("x", e.i))
            time += write[e.level]
        elif e.kind == "read":
            if ("x", e.i) not in levels[e.level] or ("x", e.i) in work:
                raise ScheduleError(f"event {k} (read x{e.i}): not at level {e.level}, or in level 0")
            work.add(("x", e.i))
            time += read[e.level]
        for j, lv in enumerate(levels):
            peak[j] = max(peak[j], len(lv))
    if nb >= 0:
        raise ScheduleError(f"the schedule ends before B{nb}")
    return time, peak

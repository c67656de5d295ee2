"""Checkpointing strategies for a chain, each returned as an explicit schedule (scheduling slides; Chen et al. 2016;
Griewank and Walther 2000).

Every strategy is the same two-phase recipe with its own choice of checkpoints: advance through the
chain once, keeping the values at chosen positions (the **segments** start there), run the first
backward step, then reverse the segments last to first, each by the same recipe from its own
checkpoint. :func:`_schedule` writes that recipe once; a strategy only says how to split.

* :func:`store_all` keeps everything (peak ``l + 1``, no recomputation);
* :func:`recompute_all` keeps only ``x0`` (peak 3, ``l(l-1)/2`` recomputations);
* :func:`store_some` keeps the given values; :func:`periodic` every ``k``-th;
  :func:`sqrt_schedule` every ``sqrt(l)``-th (CSE599G1 lecture 7, p.33); :func:`recursive` splits
  each segment again (p.34);
* :func:`optimal` is the fewest recomputations within a budget of slots (:mod:`.binomial`);
* :func:`revolve` is Griewank and Walther's binomial schedule for ``snaps`` snapshots.
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

from ..errors import BudgetError, ScheduleError
from .binomial import allocate, minimum_budget, optimal_forwards, revolve_advances, slot_snaps, sqrt_period
from .chain import Action, Backward, Forward, Schedule, check_length

#: How a segment is split: (advances n, context) -> [(length, context of that segment), ...]
Split = Callable[[int, object], Sequence[tuple[int, object]]]


def _schedule(name: str, l: int, top: Sequence[tuple[int, object]], inner: Split,
              cls: type[Schedule] = Schedule) -> Schedule:
    """The two-phase recipe: advance through ``top``'s segments, B_l, then reverse each segment."""
    actions: list[Action] = []

    def advance(start: int, segments: Sequence[tuple[int, object]]) -> list[tuple[int, int, object]]:
        pos, todo = start, []
        for length, ctx in segments:
            todo.append((pos, length, ctx))
            actions.append(Forward(pos, True))
            actions.extend([Forward(q, False) for q in range(pos + 1, pos + length)])
            pos += length
        actions.append(Backward(pos))
        return todo

    stack = advance(0, top)
    while stack:  # reverse segments last to first; each may leave segments of its own
        start, length, ctx = stack.pop()
        stack.extend(advance(start, inner(length - 1, ctx)) if length > 1 else [])
        if length == 1:
            actions.append(Backward(start))
    return cls(name, l, actions)


def _recompute_from_checkpoint(n: int, ctx: object) -> list[tuple[int, object]]:
    """Inside a segment, keep nothing but its checkpoint: advance all ``n`` steps from it."""
    return [(n, ctx)]


def store_all(l: int) -> Schedule:
    """Keep every ``x_i`` (scheduling slides, l = 5: peak 6, no recomputation)."""
    check_length(l)
    return _schedule("store all", l, [(1, None)] * l, _recompute_from_checkpoint)


def recompute_all(l: int) -> Schedule:
    """Keep only ``x0``; recompute each ``x_i`` from it (scheduling slides, l = 5: peak 3, 10 recomputations)."""
    check_length(l)
    return _schedule("recompute all", l, [(l, None)], _recompute_from_checkpoint)


def _store_segment(n: int, ctx: object) -> list[tuple[int, object]]:
    """Inside a segment, keep everything: one more forward pass over it, then its backward."""
    return [(1, ctx)] * n


def store_some(l: int, keep: Iterable[int], segments: str = "recompute") -> Schedule:
    """Keep ``x0`` and the ``x_i`` for ``i`` in ``keep``, then per backward step recompute what is
    missing from the nearest kept value below (scheduling slides, l = 5, keep x2: peak 4, 4 recomputations).

    ``segments="store"`` instead re-runs each segment's forward pass once, keeping all its values
    (Chen et al. 2016: one extra forward pass in all).
    """
    check_length(l)
    if segments not in ("recompute", "store"):
        raise ScheduleError(f"segments must be 'recompute' or 'store', got {segments!r}")
    try:
        points = sorted({int(i) for i in keep} | {0})
    except (TypeError, ValueError):
        raise ScheduleError(f"keep must be step indices (integers), got {keep!r}") from None
    bad = [i for i in points if not 0 <= i < l]
    if bad:
        raise ScheduleError(f"keep names x{bad[0]}, but checkpoints are x0..x{l - 1} for l = {l}")
    lengths = [b - a for a, b in zip(points, points[1:] + [l])]
    name = "store " + ", ".join(f"x{i}" for i in points)
    inner = _recompute_from_checkpoint if segments == "recompute" else _store_segment
    return _schedule(name, l, [(n, None) for n in lengths], inner)


def periodic(l: int, k: int) -> Schedule:
    """A checkpoint every ``k`` steps (``x0, x_k, x_2k, ...``), each segment's forward pass re-run once
    with all its values kept for its backward pass (lecture 7, p.31-32; Chen et al. 2016)."""
    check_length(l)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ScheduleError(f"the period k must be an integer >= 1, got {k!r}")
    s = store_some(l, range(0, l, k), segments="store")
    s.name = f"every {k}"
    return s


def sqrt_schedule(l: int) -> Schedule:
    """A checkpoint every ``round(sqrt(l))`` steps: O(sqrt l) memory, one extra forward pass (p.33)."""
    check_length(l)
    s = periodic(l, sqrt_period(l))
    s.name = f"sqrt(l): every {sqrt_period(l)}"
    return s


def _equal_parts(n: int, k: int) -> list[int]:
    parts = min(k, n)
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def recursive(l: int, k: int) -> Schedule:
    """Chen et al. 2016's recursion (p.34): ``k`` checkpoints split the chain into ``k`` near-equal
    segments, and each segment is reversed the same way, down to single steps; memory grows like
    ``k log_k l`` and recomputation like ``l log_k l``."""
    check_length(l)
    if not isinstance(k, int) or k < 2:
        raise ScheduleError(f"the fan-out k must be an integer >= 2, got {k!r}")

    def split(n: int, _ctx: object) -> list[tuple[int, object]]:
        return [(m, None) for m in _equal_parts(n, k)]

    return _schedule(f"recursive (k = {k})", l, split(l, None), split)


def _slot_split(n: int, m: object, with_adjoint: bool = True) -> list[tuple[int, object]]:
    """The optimal split of ``n`` advances with ``m`` slots: segment i keeps ``m - i`` slots."""
    snaps = slot_snaps(int(m), with_adjoint)  # type: ignore[arg-type]
    return [(length, int(m) - i) for i, length in enumerate(allocate(n, snaps))]  # type: ignore[arg-type]


def check_slot_budget(l: int, budget: object) -> int:
    """``budget`` as a slot count, or a :class:`~memlab.errors.BudgetError` stating the minimum."""
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise BudgetError(f"budget must be a whole number of slots, got {budget!r}")
    need = minimum_budget(l)
    if budget < need:
        raise BudgetError(f"a budget of {budget} slot(s) is too small for l = {l}: "
                          f"the minimum is {need}")
    return budget


def optimal(l: int, budget: int) -> Schedule:
    """The fewest recomputations for a chain of ``l`` steps within ``budget`` slots (scheduling slides, "the
    scheduling problem"; l = 5: budget 3 -> 6, 4 -> 2, 5 -> 1, 6 -> 0).

    The split comes from :func:`~memlab.checkpoint.binomial.allocate` in closed form; ``.cost`` is
    the predicted number of forward steps, which :func:`~memlab.checkpoint.chain.simulate` confirms.
    """
    check_length(l)
    check_slot_budget(l, budget)
    top = _slot_split(l, budget, with_adjoint=False)
    s = _schedule(f"optimal (M = {budget})", l, top, _slot_split)
    s.cost = optimal_forwards(l, budget)  # type: ignore[attr-defined]
    return s


class RevolveSchedule(Schedule):
    """A Revolve schedule: ``snaps`` snapshots, ``advances`` counted like Revolve's ``numforw``."""

    snaps: int = 0
    advances: int = 0


def revolve(l: int, snaps: int) -> RevolveSchedule:
    """Griewank and Walther's binomial checkpointing (Revolve) with ``snaps`` snapshots, ``x0``'s included.

    In Revolve's own convention the chain has ``l + 1`` steps (the last is the first backward step)
    and ``advances = t(l + 1, snaps) = r (l + 1) - C(snaps + r, snaps + 1)``. In the slot model the
    schedule holds the snapshots, the value being advanced and the adjoint, so its peak is at most
    ``snaps + 2`` slots, and its recomputations are ``R(l, snaps) = t(l + 1, snaps) - l``.
    ``optimal(l, snaps + 2)`` is never worse: before the first backward step no adjoint is held,
    and the optimum uses that slot for one more checkpoint.

    Against pyrevolve (and the C++ revolve): its ``numforw(steps, snaps)`` is ``t(steps, snaps)``
    (:func:`~memlab.checkpoint.binomial.revolve_advances`), so ``numforw(l, snaps)``, called with
    the chain's ``l`` forward steps, is ``t(l, snaps)``; this schedule's ``advances`` is
    ``numforw(l + 1, snaps)``.
    """
    check_length(l)
    if not isinstance(snaps, int) or isinstance(snaps, bool) or snaps < 1:
        raise BudgetError(f"revolve needs at least 1 snapshot (x0's), got {snaps!r}")
    top = [(n, snaps - i + 2) for i, n in enumerate(allocate(l, list(range(snaps, 0, -1))))]
    s = _schedule(f"revolve (c = {snaps})", l, top, _slot_split, RevolveSchedule)
    assert isinstance(s, RevolveSchedule)
    s.snaps = snaps
    s.advances = int(revolve_advances(l + 1, snaps))
    return s

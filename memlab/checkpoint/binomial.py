"""The binomial arithmetic of optimal checkpointing (Griewank 1992; Griewank and Walther 2000, Revolve).

With ``c`` snapshots, a chain of ``L`` steps can be reversed with each step advanced at most ``r``
times while ``L <= beta(c, r) = C(c + r, c)``; the fewest advances are Revolve's closed form
``t(L, c) = r L - C(c + r, c + 1)`` with the smallest such ``r`` (:func:`revolve_advances`).

The same numbers solve the slot model of :mod:`.chain`. Unrolled, an optimal schedule advances
through the whole chain once, leaving checkpoints that split it into **segments**; segment ``i`` is
then reversed with ``c_i`` snapshots, ``c_0 > c_1 > ...`` (the deeper checkpoints are still held).
Reversing a segment of ``L`` steps costs ``t(L, c_i)`` extra advances, whose increments
``t(L) - t(L - 1)`` are the repetition numbers ``r(L, c_i)``: non-decreasing, so the cheapest split
takes the ``n`` smallest increments over all segments (:func:`allocate`). This gives the optimum and
its split in closed form, without the O(l^2) search of the plain dynamic program.
"""
from __future__ import annotations

from math import comb, inf, isqrt
from typing import Sequence


def beta(c: int, r: int) -> int:
    """``C(c + r, c)``: the longest chain ``c`` snapshots reverse with at most ``r`` advances per step."""
    return comb(c + r, c) if c >= 0 and r >= 0 else 0


def repetitions(L: int, c: int) -> float:
    """The smallest ``r`` with ``beta(c, r) >= L`` (0 for ``L <= 1``; infinite if ``c = 0 < L - 1``)."""
    if L <= 1:
        return 0
    if c <= 0:
        return inf
    if c == 1:
        return L - 1
    r = max(0, int((L * _factorial_ratio(c)) ** (1 / c)) - c)  # a lower start; exact search below
    while r > 0 and beta(c, r - 1) >= L:
        r -= 1
    while beta(c, r) < L:
        r += 1
    return r


def _factorial_ratio(c: int) -> float:
    """``c!`` as a float (for a starting guess of r; capped to stay finite)."""
    f = 1.0
    for k in range(2, min(c, 150) + 1):
        f *= k
    return f


def revolve_advances(L: int, c: int) -> float:
    """Revolve's fewest advances to reverse ``L`` steps with ``c`` snapshots: ``r L - C(c + r, c + 1)``."""
    if L <= 1:
        return 0
    r = repetitions(L, c)
    if r == inf:
        return inf
    return r * L - comb(c + int(r), c + 1)


def _covered(rho: int, snaps: Sequence[int]) -> int:
    """Steps whose increment is at most ``rho`` over all segments (``snaps`` contiguous, decreasing)."""
    hi, lo = snaps[0], snaps[-1]
    # sum_{c=lo}^{hi} C(c + rho, rho) by the hockey-stick identity
    return comb(hi + rho + 1, rho + 1) - (comb(lo + rho, rho + 1) if lo > 0 else 0)


def allocate(n: int, snaps: Sequence[int]) -> list[int]:
    """Split ``n`` advances into segments reversed with ``snaps[0] > snaps[1] > ...`` snapshots.

    Returns the segment lengths (each >= 1, summing to ``n``; unused segments dropped) whose total
    reversal cost ``sum t(L_i, snaps[i])`` is least. ``snaps`` must be consecutive integers,
    decreasing, >= 0. Raises ``ValueError`` when no split exists (all segments have 0 snapshots and
    ``n > len(snaps)``).
    """
    if n <= 0:
        return []
    if n <= len(snaps):  # every step is a checkpoint: all increments are 0
        return [1] * n
    if snaps[0] <= 0:
        raise ValueError(f"{n} steps cannot be split into {len(snaps)} segments without snapshots")
    lo, hi = 0, 1
    while _covered(hi, snaps) < n:  # gallop, then bisect for the smallest rho covering n
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if _covered(mid, snaps) >= n:
            hi = mid
        else:
            lo = mid + 1
    rho = lo
    lengths, left = [], n
    for c in snaps:  # every increment below rho, for every segment
        take = beta(c, rho - 1) if c > 0 else 1
        lengths.append(take)
        left -= take
    for i, c in enumerate(snaps):  # then increments equal to rho, deepest checkpoints first
        if left == 0:
            break
        extra = min(left, (beta(c, rho) if c > 0 else 1) - lengths[i])
        lengths[i] += extra
        left -= extra
    return [L for L in lengths if L > 0]


def allocation_cost(lengths: Sequence[int], snaps: Sequence[int]) -> float:
    """``sum t(L_i, snaps[i])``: extra advances to reverse segments of these lengths."""
    return sum(revolve_advances(L, c) for L, c in zip(lengths, snaps))


def slot_snaps(m: int, with_adjoint: bool) -> list[int]:
    """Snapshots of each segment when ``m`` slots reverse a chain: ``m-2, m-3, ...`` down to 1, or to 0
    at the top of the chain, where no adjoint is held yet (its slot serves one more checkpoint)."""
    return list(range(m - 2, 0 if with_adjoint else -1, -1))


def optimal_forwards(l: int, budget: int) -> float:
    """Fewest forward steps for a chain of ``l`` steps in ``budget`` slots (infinite if impossible)."""
    snaps = slot_snaps(budget, with_adjoint=False)
    if not snaps:
        return inf
    try:
        lengths = allocate(l, snaps)
    except ValueError:
        return inf
    return l + allocation_cost(lengths, snaps)


def minimum_budget(l: int) -> int:
    """The fewest slots any schedule needs: 2 for one step (x0, x1), else 3 (a checkpoint, the value
    being advanced and the adjoint)."""
    return 2 if l == 1 else 3


def sqrt_period(l: int) -> int:
    """A checkpoint every ``round(sqrt(l))`` steps (Chen et al. 2016, p.33), at least 1."""
    k = isqrt(l)
    return max(1, k + (1 if (k + 1) * (k + 1) - l < l - k * k else 0))

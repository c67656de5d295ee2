"""OpenNMT's techniques measured (OpenNMT's notes): memory of one training step of :func:`seq2seq`
against the target length, and the longest target that fits a budget, technique by technique.

Each technique of :data:`LADDER` adds one to the ones before it, in the seed's order; the last
two rows are the lecture's general planners on the same graph and order (tags with best-fit
reuse, p.22; offsets, which here reach the lower bound of the bytes alive at once). A step's
memory counts the parameters and the token ids (given values) plus the plan's arena.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable

from ..errors import BudgetError, MemlabError
from ..memory import plan_memory
from ..memory.offsets import live_bytes_lower_bound, plan_offsets
from ..memory.plan import Plan
from ..memory.sharing import plan_sharing
from .encoder_decoder import seq2seq

#: (name, graph switches of seq2seq, planning rules or the name of a general planner)
LADDER: list[tuple[str, dict, Any]] = [
    ("no sharing", dict(share_params=False, connect=False), {}),
    ("+ shared parameters", dict(connect=False), {}),
    ("+ connected inputs", {}, {}),
    ("+ local tricks", {}, dict(local=True)),
    ("+ vertical sharing", {}, dict(local=True, vertical=True)),
    ("+ horizontal sharing", {}, dict(local=True, vertical=True, horizontal=True)),
    ("general planner (tags)", {}, "tags"),
    ("general planner (offsets)", {}, "offsets"),
]
#: OpenNMT Lua up to v0.7: horizontal sharing without vertical sharing
LUA_V07 = ("horizontal only (Lua v0.7)", {}, dict(local=True, horizontal=True))
TECHNIQUES = [name for name, _, _ in LADDER]


def _plan(outputs: list, order: list, rules: Any) -> Plan:
    if rules == "tags":
        return plan_memory(outputs, order=order, trace=False)
    if rules == "offsets":
        return plan_offsets(outputs, order=order)
    return plan_sharing(outputs, order, **rules)


@lru_cache(maxsize=16)
def _training_step(tgt_len: int, src_len: int, sizes: tuple, switches: tuple) -> tuple:
    """The outputs and order of one training step, kept for the techniques that plan the same
    graph (a few recent ones: the graphs are big)."""
    m = seq2seq(src_len, tgt_len, **dict(sizes), **dict(switches))
    outputs = [m.loss, *m.grads()]
    return tuple(outputs), tuple(m.order(outputs))


def step_bytes(tgt_len: int, technique: str = "no sharing", src_len: int = 10,
               **sizes: Any) -> dict[str, int]:
    """Bytes of one training step with a technique of :data:`LADDER` (or :data:`LUA_V07`):
    ``given`` (parameters and ids), ``arena`` (the plan), ``total`` and ``lower_bound`` (given
    plus the most bytes alive at once in that graph and order, which no plan can beat)."""
    entry = {name: (g, r) for name, g, r in [*LADDER, LUA_V07]}.get(technique)
    if entry is None:
        raise MemlabError(f"unknown technique {technique!r}; choose from "
                          f"{', '.join(map(repr, TECHNIQUES + [LUA_V07[0]]))}")
    switches, rules = entry
    outputs, order = _training_step(tgt_len, src_len, tuple(sorted(sizes.items())),
                                    tuple(sorted(switches.items())))
    plan = _plan(list(outputs), list(order), rules)
    given = sum(n.nbytes for n in order if not n.op.computes)
    return {"given": given, "arena": plan.total_bytes, "total": given + plan.total_bytes,
            "lower_bound": given + live_bytes_lower_bound(plan)}


def memory_curves(lengths: Iterable[int], techniques: Iterable[str] | None = None,
                  src_len: int = 10, **sizes: Any) -> dict[str, list[int]]:
    """Total bytes of a training step for each technique at each target length."""
    techniques = TECHNIQUES if techniques is None else list(techniques)
    lengths = list(lengths)
    return {t: [step_bytes(n, t, src_len, **sizes)["total"] for n in lengths]
            for t in techniques}


def longest_fitting(budget: int, technique: str, src_len: int = 10, limit: int = 2000,
                    **sizes: Any) -> int:
    """The longest target length (at most ``limit``) whose training step fits ``budget`` bytes.

    Memory grows about linearly with the length, so two measurements give a guess, and the
    line through lengths 1 and the guess a second one; a bracket around it (widened by doubling)
    is then bisected, assuming only that longer targets never need less memory. Raises
    :class:`BudgetError` with the minimum when length 1 does not fit.
    """
    measured: dict[int, int] = {}

    def total(n: int) -> int:
        if n not in measured:
            measured[n] = step_bytes(n, technique, src_len, **sizes)["total"]
        return measured[n]

    def fits(n: int) -> bool:
        return total(n) <= budget
    least = total(1)
    if least > budget:
        raise BudgetError(f"budget {budget} bytes is too small for {technique!r}: a target of "
                          f"length 1 needs {least} bytes")
    slope = total(2) - least
    guess = limit if slope <= 0 else max(1, min(limit, 1 + (budget - least) // slope))
    if guess > 2 and total(guess) > least:   # the line through lengths 1 and guess
        guess = max(1, min(limit, 1 + (budget - least) * (guess - 1) // (total(guess) - least)))
    lo, hi, width = 1, limit + 1, 1                      # fits(lo); hi does not (or is past)
    if fits(guess):
        lo = guess
        while lo < limit and fits(min(limit, lo + width)):
            lo, width = min(limit, lo + width), 2 * width
        hi = min(limit + 1, lo + width)
    else:
        hi = guess
        while hi - width > 1 and not fits(hi - width):
            hi, width = hi - width, 2 * width
        lo = max(1, hi - width)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def fitted_longest(budget: float, lengths: list[int], totals: list[int]) -> int:
    """The longest target that fits ``budget`` on the straight line through the first and last
    of measured ``(lengths, totals)``: :func:`longest_fitting` without building a graph (for
    sliders); 0 when not even length 1 fits on that line."""
    (n0, b0), (n1, b1) = (lengths[0], totals[0]), (lengths[-1], totals[-1])
    slope = (b1 - b0) / (n1 - n0)
    if slope <= 0:
        return 10 ** 9 if b0 <= budget else 0
    return max(0, int(n0 + (budget - b0) // slope))

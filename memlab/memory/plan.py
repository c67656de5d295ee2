"""What every memory plan is: an execution order and a byte offset for each computed value.

The tag planner (:mod:`.planner`, p.22) and the offset planner (:mod:`.offsets`) both produce a
:class:`Plan`; the verifier (:func:`~memlab.memory.checkplan.check_plan`), the lower bound and the
arena runner accept any :class:`Plan`. Offsets are aligned to :data:`ALIGN` bytes.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Protocol, Sequence, runtime_checkable

from ..errors import PlanError
from ..graph import Node

ALIGN = 64          #: every storage (and offset) is aligned to 64 bytes, a cache line


def align(nbytes: int, alignment: int = ALIGN) -> int:
    """``nbytes`` rounded up to a multiple of ``alignment`` (default :data:`ALIGN`; a plan for a
    GPU asks for 256, what ``cudaMalloc`` guarantees)."""
    return -(-nbytes // alignment) * alignment


def check_alignment(alignment: int) -> int:
    """``alignment`` if it is a positive integer, else :class:`~memlab.errors.PlanError`."""
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment < 1:
        raise PlanError(f"alignment must be a positive number of bytes, got {alignment!r}")
    return alignment


def check_alignment_of(alignment: int, values: Sequence[Node], who: str) -> None:
    """:class:`~memlab.errors.PlanError` unless ``alignment`` is a multiple of the itemsize of
    every value to place (else a value could start at an offset its dtype cannot be read from,
    and :func:`~memlab.memory.check_plan` would refuse the plan)."""
    top = max([d.itemsize for d in set(map(attrgetter("dtype"), values))], default=0)
    if top and alignment % top:
        big = next(n for n in values if n.dtype.itemsize == top)
        raise PlanError(f"{who}: alignment={alignment} is not a multiple of "
                        f"{big.dtype.itemsize} bytes, the itemsize of {big.name!r} "
                        f"({big.dtype}): its offset could be misaligned; use a multiple of "
                        f"{big.dtype.itemsize}, e.g. {ALIGN} (the default) or 256 for a GPU")


@runtime_checkable
class Plan(Protocol):
    """A static memory plan (p.17): ``outputs``, an execution ``order``, ``offset[node]`` (bytes
    into one arena) for every computed value, and the arena's ``total_bytes``.

    Planners' plans also say ``kind`` (``"tags"`` or ``"offsets"``) and ``inplace`` (whether
    in-place pairs, p.19-20, may share memory; taken as True when absent).
    """

    outputs: Sequence[Node]
    order: Sequence[Node]

    @property
    def offset(self) -> dict[Node, int]: ...

    @property
    def total_bytes(self) -> int: ...


def check_is_plan(plan: object, what: str) -> Plan:
    """``plan`` if it is a :class:`Plan`, else :class:`~memlab.errors.PlanError` naming ``what``."""
    if not isinstance(plan, Plan):
        raise PlanError(f"{what} must be a memory plan (outputs, order, offset, total_bytes: "
                        f"from plan_memory or plan_offsets), got {type(plan).__name__} {plan!r:.60}")
    return plan


@runtime_checkable
class PlanWithTags(Plan, Protocol):
    """A plan by tags (p.22): ``storage[node]`` is a value's tag, ``storage_bytes[tag]`` its size."""

    storage: dict[Node, int]
    storage_bytes: dict[int, int]

"""Static memory planning with tags: the lecture's allocation algorithm (p.17-22).

The planner walks the graph once in execution order, before anything runs
(p.17 "plan for reuse ahead of time", like register allocation). It keeps

* a **reference count** per value: how many of its consumers have yet to run;
* a **box of free tags**: storage ids no live value holds, a free list keyed
  by size (one box per colour, p.24);
* the **tag** (storage id) of every computed value.

For each op it first tries **in-place** (p.19-20): take the tag of an input
the op may overwrite (``node.op.inplace(node)`` lists the positions) if this
op is that input's last consumer (its reference count is 1). Otherwise it
takes a tag from the box (**normal sharing**, p.21), else a new tag. Only
then does it decrement its inputs' counts and put the tags of inputs that
reached zero into the box, so an op never writes into an input it did not
take in place (p.22 step 3: "allocate tag for F, release space of B").

Match rule for the box (``match="best"``, our NNVM-like choice): the smallest
free tag of at least the value's size; if none, the largest smaller tag,
grown to the size (growing costs less than a new tag); tags more than
``MATCH_RANGE`` times larger or smaller than the value are not considered, so
a tiny value does not squat a huge tag. ``match="exact"`` only takes a tag
of exactly the value's size. Placeholders and constants live outside the
plan (they are given, never reused) and graph outputs are never released.
"""
from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterable, Sequence

from ..errors import PlanError
from ..graph import Node
from .liveness import prepare, reference_counts
from .longest_path import node_colors
from .plan import ALIGN, align, check_alignment  # noqa: F401  (ALIGN: documented here)

MATCH_RANGE = 16    #: a free tag is a candidate if its size is within this factor of the value's

@dataclass
class PlanStep:
    """One step of the algorithm (p.22): the op, the tag it got and the state after it.

    ``action`` is ``"new"`` (a new tag), ``"reuse"`` (a tag from the box) or
    ``"inplace"`` (the tag of input ``source``). ``released`` lists the tags
    put into the box after the op; ``refcount`` holds every pending count
    (values whose count reached 0 are left out) and ``box`` the free tags as
    ``(tag, bytes)``. ``note`` says in words why, e.g. why not in-place.
    """

    index: int
    node: Node
    action: str
    tag: int
    source: Node | None
    released: tuple[int, ...]
    refcount: dict[Node, int]
    box: tuple[tuple[int, int], ...]
    note: str = ""


@dataclass
class MemoryPlan:
    """A tag plan: which storage id each computed value lives in (p.17, p.22 "final memory plan").

    ``order`` is the execution order, ``storage[node]`` the tag of each computed
    node, ``storage_bytes[sid]`` the size of each storage, ``steps`` one
    :class:`PlanStep` per computed node when planned with ``trace=True`` (else empty, and
    ``traced`` is False). Storages are
    laid out one after another, each aligned to ``alignment`` bytes (:data:`ALIGN` unless the
    planner was asked for more, e.g. 256 for a GPU), which gives ``offset[node]`` and
    ``total_bytes``.
    """

    outputs: list[Node]
    order: list[Node]
    storage: dict[Node, int]
    storage_bytes: dict[int, int]
    steps: list[PlanStep] = field(default_factory=list)
    inplace: bool = True
    share: bool = True
    colors: int = 1
    color: dict[Node, int] = field(default_factory=dict)
    initial_refcount: dict[Node, int] = field(default_factory=dict)
    inplace_pairs: list[tuple[Node, Node]] = field(default_factory=list)
    alignment: int = ALIGN
    traced: bool = False
    kind = "tags"

    def require_trace(self, who: str) -> list[PlanStep]:
        """``steps``, or a :class:`~memlab.errors.PlanError` naming ``who`` if the plan was made
        without ``trace=True`` (the trace of p.22's steps is recorded only when asked)."""
        if not self.traced:
            raise PlanError(f"{who} needs the planner's step trace: plan with "
                            f"plan_memory(..., trace=True)")
        return self.steps

    @property
    def storage_offset(self) -> dict[int, int]:
        """Byte offset of each storage when laid out consecutively, in tag order."""
        out, pos = {}, 0
        for sid in sorted(self.storage_bytes):
            out[sid] = pos
            pos += align(self.storage_bytes[sid], self.alignment)
        return out

    @property
    def offset(self) -> dict[Node, int]:
        """Byte offset of each computed node: its storage's offset."""
        so = self.storage_offset
        return {n: so[s] for n, s in self.storage.items()}

    @property
    def total_bytes(self) -> int:
        """Bytes of the arena: the aligned sizes of all storages."""
        return sum(align(b, self.alignment) for b in self.storage_bytes.values())

    @property
    def num_storages(self) -> int:
        """How many distinct tags the plan uses."""
        return len(self.storage_bytes)

    def __repr__(self) -> str:
        return (f"<MemoryPlan {len(self.storage)} values in {self.num_storages} storages, "
                f"{self.total_bytes} bytes>")


class Box:
    """The box of free tags (p.22), one free list per colour (p.24), each sorted by size.

    :meth:`take` applies the match rule of the module docstring; :meth:`put` returns a tag.
    """

    def __init__(self, match: str = "best") -> None:
        self.match = match
        self.free: dict[int, list[tuple[int, int]]] = {}  # colour -> sorted (bytes, tag)

    def put(self, tag: int, nbytes: int, color: int = 0) -> None:
        """Release ``tag`` (of ``nbytes``) into the box of ``color``."""
        insort(self.free.setdefault(color, []), (nbytes, tag))

    def take(self, nbytes: int, color: int = 0) -> int | None:
        """Remove and return the tag the match rule picks for ``nbytes``, or None."""
        box = self.free.get(color, [])
        i = bisect_left(box, (nbytes, -1))
        if self.match == "exact":
            return box.pop(i)[1] if i < len(box) and box[i][0] == nbytes else None
        if i < len(box) and box[i][0] <= nbytes * MATCH_RANGE:
            return box.pop(i)[1]           # the smallest tag that is big enough
        if i > 0 and box[i - 1][0] * MATCH_RANGE >= nbytes:
            return box.pop(i - 1)[1]       # else the biggest smaller one, grown
        return None

    def contents(self) -> tuple[tuple[int, int], ...]:
        """Every free tag as ``(tag, bytes)``, sorted by tag (for the steppers)."""
        return tuple(sorted((t, b) for box in self.free.values() for b, t in box))


def plan_memory(outputs: Node | Iterable[Node], inplace: bool | Callable[[Node], bool] = True,
                share: bool = True, colors: int = 1, order: Sequence[Node] | None = None, *,
                trace: bool = False, match: str = "best",
                group: Callable[[Node], Hashable] | None = None,
                alignment: int = ALIGN) -> MemoryPlan:
    """Plan tags for every computed value of the graph (the algorithm of p.22).

    ``inplace``: allow in-place (p.19-20), for every op or for the ops a predicate accepts;
    ``share``: allow reuse of released tags (p.21); ``colors``: longest-path colouring, sharing
    only within a colour (p.24); ``group``: instead of colours, share (and work in place) only
    between values with equal ``group(node)`` (OpenNMT's vertical and horizontal sharing,
    :mod:`.sharing`); ``order``: an execution order (default: depth-first topological order);
    ``trace``: record one :class:`PlanStep` per op in ``plan.steps`` (off by default: the
    steppers of lessons 03 and 05 ask for it; planning without it costs about a topological sort);
    ``match``: ``"best"`` or ``"exact"`` (see the module docstring); ``alignment``: bytes every
    storage is aligned to (256 for a GPU).
    """
    check_alignment(alignment)
    if match not in ("best", "exact"):
        raise PlanError(f"match must be 'best' or 'exact', got {match!r}")
    if not isinstance(colors, int) or colors < 1:
        raise PlanError(f"colors must be a positive integer, got {colors!r}")
    if group is not None and colors > 1:
        raise PlanError("plan_memory takes colors or group, not both")
    outs, order, sizes = prepare(outputs, order)
    color = node_colors(order, colors) if colors > 1 else {}
    if group is not None:
        color = {n: group(n) for n in sizes}
    may_inplace = inplace if callable(inplace) else None    # None: ``inplace`` says for all
    is_output = set(outs)
    ref = reference_counts(order)                      # p.22: the initial reference counts
    plan = MemoryPlan(outs, order, {}, {}, inplace=callable(inplace) or inplace, share=share,
                      colors=colors, color=color, initial_refcount=dict(ref),
                      alignment=alignment, traced=bool(trace))
    tag, tag_bytes, tag_color = plan.storage, plan.storage_bytes, {}
    box = Box(match)
    for n, nbytes in sizes.items():                    # computed values, in order (placeholders
        c = color.get(n, 0) if color else 0            # and constants are given, not planned)
        # 1. in-place: take the tag of an input this op may overwrite and is the last to read
        # (untraced, ops with no input that could qualify skip asking the op: same plan, faster)
        source, note = None, ""
        if inplace if may_inplace is None else may_inplace(n):
            for x in n.inputs:
                if trace or (ref[x] == 1 and x in tag and sizes[x] == nbytes):
                    positions = n.op.inplace(n)
                    if positions:
                        source, note = _inplace_source(n, positions, ref, tag, sizes,
                                                       tag_color, c, is_output)
                    break
        if source is not None:
            t, action = tag[source], "inplace"
            plan.inplace_pairs.append((source, n))
        # 2. normal sharing: a free tag from the box
        elif share and (t := box.take(nbytes, c)) is not None:
            action, note = "reuse", note or f"reused tag {t} from the box"
            if tag_bytes[t] < nbytes:
                tag_bytes[t] = nbytes
        # 3. else a new tag
        else:
            t, action = len(tag_bytes), "new"
            tag_bytes[t], tag_color[t] = nbytes, c
        tag[n] = t
        # 4. the op has read its inputs: count down, release the tags of those now dead
        released = []
        inputs = n.inputs
        for x in (inputs if len(inputs) < 2 else dict.fromkeys(inputs)):  # x * x: one read
            left = ref[x] - 1
            if left:
                ref[x] = left
                continue
            del ref[x]
            tx = tag.get(x)
            if tx is not None and tx != t and x not in is_output:
                box.put(tx, tag_bytes[tx], tag_color[tx])
                released.append(tx)
        if trace:
            plan.steps.append(PlanStep(len(plan.steps), n, action, t, source, tuple(released),
                                       dict(ref), box.contents(), note))
    return plan


def _inplace_source(n: Node, positions: Sequence[int], ref: dict[Node, int], tag: dict[Node, int],
                    sizes: dict[Node, int], tag_color: dict[int, int], c: int,
                    is_output: set[Node]) -> tuple[Node | None, str]:
    """The input at one of ``positions`` whose tag ``n`` may take in place (p.19-20), and a note
    saying why or why not."""
    note = ""
    for i in positions:
        x = n.inputs[i]
        if x not in tag:
            continue                                   # a placeholder or constant: not ours
        if ref[x] != 1 or x in is_output:
            why = "it is a graph output" if x in is_output else f"reference count {ref[x]}"
            note = note or f"cannot do in-place on {x.name}: still alive ({why})"
            continue
        if sizes[x] == sizes[n] and tag_color[tag[x]] == c:
            return x, f"in-place on {x.name}: this op is its last consumer"
    return None, note

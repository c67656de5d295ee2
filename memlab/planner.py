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

import math
from bisect import bisect_left, insort
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .errors import PlanError
from .graph import Node, _as_list, check_order, topo_order

ALIGN = 64          #: every storage (and offset) is aligned to 64 bytes, a cache line
MATCH_RANGE = 16    #: a free tag is a candidate if its size is within this factor of the value's


def align(nbytes: int) -> int:
    """``nbytes`` rounded up to a multiple of :data:`ALIGN`."""
    return -(-nbytes // ALIGN) * ALIGN


def node_bytes(node: Node) -> int:
    """Bytes of a node's value (``math.prod``: cheaper than ``Node.nbytes`` in the planner's loop)."""
    return math.prod(node.shape) * node.dtype.itemsize


def prepare(outputs: Node | Iterable[Node], order: Sequence[Node] | None) -> tuple[list[Node], list[Node], dict[Node, int]]:
    """Outputs, a validated execution order and the bytes of every computed node.

    Raises :class:`~memlab.errors.CycleError` or :class:`PlanError` naming the
    node when the graph has a cycle, the order is not topological, or a
    computed value has a size of zero or less (nothing to plan for).
    """
    outs = _as_list(outputs)
    order = topo_order(outs) if order is None else check_order(outs, order)
    sizes: dict[Node, int] = {}
    for n in order:
        if n.op.computes:
            b = node_bytes(n)
            if b <= 0:
                raise PlanError(f"node {n.name!r} has size {b} bytes (shape {list(n.shape)}); "
                                f"a planned value needs a positive size")
            sizes[n] = b
    return outs, order, sizes


def consumer_counts(order: Sequence[Node]) -> dict[Node, int]:
    """Reference counts before the first step: distinct consumers of every value (p.22 initial state)."""
    ref: dict[Node, int] = {}
    get = ref.get
    for n in order:
        ins = n.inputs
        if len(ins) == 1:
            x = ins[0]
            ref[x] = get(x, 0) + 1
        elif ins and n.op.computes:
            for x in (ins if len(ins) == 2 and ins[0] is not ins[1] else dict.fromkeys(ins)):
                ref[x] = get(x, 0) + 1
    return ref


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
    :class:`PlanStep` per computed node (empty when traced off). Storages are
    laid out one after another, each aligned to :data:`ALIGN` bytes, which
    gives ``offset[node]`` and ``total_bytes``.
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
    kind = "tags"

    @property
    def storage_offset(self) -> dict[int, int]:
        """Byte offset of each storage when laid out consecutively, in tag order."""
        out, pos = {}, 0
        for sid in sorted(self.storage_bytes):
            out[sid] = pos
            pos += align(self.storage_bytes[sid])
        return out

    @property
    def offset(self) -> dict[Node, int]:
        """Byte offset of each computed node: its storage's offset."""
        so = self.storage_offset
        return {n: so[s] for n, s in self.storage.items()}

    @property
    def total_bytes(self) -> int:
        """Bytes of the arena: the aligned sizes of all storages."""
        return sum(align(b) for b in self.storage_bytes.values())

    @property
    def num_storages(self) -> int:
        """How many distinct tags the plan uses."""
        return len(self.storage_bytes)

    def __repr__(self) -> str:
        return (f"<MemoryPlan {len(self.storage)} values in {self.num_storages} storages, "
                f"{self.total_bytes} bytes>")


def _take_from_box(box: list[tuple[int, int]], nb: int, match: str) -> tuple[int, int] | None:
    """Pop the free tag the match rule picks for ``nb`` bytes, or None."""
    if not box:
        return None
    i = bisect_left(box, (nb, -1))
    if match == "exact":
        return box.pop(i) if i < len(box) and box[i][0] == nb else None
    if i < len(box) and box[i][0] <= nb * MATCH_RANGE:
        return box.pop(i)
    if i > 0 and box[i - 1][0] * MATCH_RANGE >= nb:
        return box.pop(i - 1)
    return None


def plan_memory(outputs: Node | Iterable[Node], inplace: bool = True, share: bool = True,
                colors: int = 1, order: Sequence[Node] | None = None, *,
                trace: bool | None = None, match: str = "best") -> MemoryPlan:
    """Plan tags for every computed value of the graph (the algorithm of p.22).

    ``inplace``: allow in-place (p.19-20); ``share``: allow reuse of released
    tags (p.21); ``colors``: longest-path colouring, sharing only within a
    colour (p.24); ``order``: an execution order (default: depth-first
    topological order); ``trace``: record :class:`PlanStep` s (default: when the
    order has at most 5000 nodes); ``match``: ``"best"`` or ``"exact"`` (see
    the module docstring).
    """
    if match not in ("best", "exact"):
        raise PlanError(f"match must be 'best' or 'exact', got {match!r}")
    if not isinstance(colors, int) or colors < 1:
        raise PlanError(f"colors must be a positive integer, got {colors!r}")
    outs, order, sizes = prepare(outputs, order)
    if trace is None:
        trace = len(order) <= 5000
    color: dict[Node, int] = {}
    if colors > 1:
        from .coloring import node_colors
        color = node_colors(order, colors)
    out_set = set(outs)
    ref = consumer_counts(order)
    plan = MemoryPlan(outs, order, {}, {}, inplace=inplace, share=share, colors=colors,
                      color=color, initial_refcount=dict(ref))
    storage, sbytes, pairs = plan.storage, plan.storage_bytes, plan.inplace_pairs
    scolor: dict[int, int] = {}
    boxes: dict[int, list[tuple[int, int]]] = {}
    steps = plan.steps
    for n in order:
        nb = sizes.get(n)
        if nb is None:  # a placeholder or constant: given, not planned
            continue
        c = color.get(n, 0)
        sid, source, action, note = -1, None, "new", ""
        if inplace:
            for i in n.op.inplace(n):
                x = n.inputs[i]
                if x not in storage:
                    continue
                if ref[x] != 1 or x in out_set:
                    if trace and not note:
                        why = "it is a graph output" if x in out_set else f"reference count {ref[x]}"
                        note = f"cannot do in-place on {x.name}: still alive ({why})"
                    continue
                if sizes[x] != nb or scolor[storage[x]] != c:
                    continue
                sid, source, action = storage[x], x, "inplace"
                pairs.append((x, n))
                note = f"in-place on {x.name}: this op is its last consumer"
                break
        if sid < 0 and share:
            got = _take_from_box(boxes.get(c, []), nb, match)
            if got is not None:
                sid, action = got[1], "reuse"
                if sbytes[sid] < nb:
                    sbytes[sid] = nb
                note = note or f"reused tag {sid} from the box"
        if sid < 0:
            sid = len(sbytes)
            sbytes[sid] = nb
            scolor[sid] = c
        storage[n] = sid
        released = []
        ins = n.inputs
        for x in (ins if len(ins) == 1 or (len(ins) == 2 and ins[0] is not ins[1]) else dict.fromkeys(ins)):
            r = ref[x] - 1
            if r:
                ref[x] = r
                continue
            del ref[x]
            s = storage.get(x)
            if s is not None and s != sid and x not in out_set:
                insort(boxes.setdefault(scolor[s], []), (sbytes[s], s))
                released.append(s)
        if trace:
            box = tuple(sorted((s, b) for bx in boxes.values() for b, s in bx))
            steps.append(PlanStep(len(steps), n, action, sid, source, tuple(released),
                                  dict(ref), box, note))
    return plan

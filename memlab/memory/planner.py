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

A count reaches zero exactly at its value's **last reader**, found in one pass
over the order (:func:`~memlab.graph.last_readers`). So the planner tests "is
this op the last reader of x?" where the slide counts down, and keeps the
counts themselves only for the trace (``trace=True``), where the steppers show
them; both give the same plan (tested). The default order is the memory-aware
one (:func:`~memlab.memory.order.memory_order`, the scheduling slides, part 1), which builds four
whole orders and measures each (1.2-1.8 times a topological sort with :mod:`graphlib` of the
same training graph, planning included about 2 times); with ``order="dfs"`` the depth-first walk
that finds the order also finds the last readers, and planning costs 1.0-1.2 such sorts
(``bench/planning.py``).

An op with a **workspace** (:mod:`memlab.graph.workspace`, scratch held while it runs) takes a
tag for it after its output's, by the same rules (from the box, else a new one), and puts it back
into the box as soon as the op has run, after its dying inputs: so the workspace never shares
memory with the op's inputs or output, and the next ops may reuse it.

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
from functools import cached_property
from itertools import compress
from typing import Callable, Hashable, Iterable, Sequence

from ..errors import PlanError, check_bool, check_callable, check_int
from ..graph import Node
from .liveness import Liveness, distinct_inputs, kept_liveness, reference_counts
from .order import plan_liveness
from .longest_path import node_colors
from .plan import ALIGN, align, check_alignment, check_alignment_of  # noqa: F401  (ALIGN: doc)

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
class TagPlan:
    """A tag plan: which storage id each computed value lives in (p.17, p.22 "final memory plan").

    ``order`` is the execution order, ``storage[node]`` the tag of each computed
    node, ``storage_bytes[sid]`` the size of each storage, ``steps`` one
    :class:`PlanStep` per computed node when planned with ``trace=True`` (else empty, and
    ``traced`` is False). Storages are
    laid out one after another, each aligned to ``alignment`` bytes (:data:`ALIGN` unless the
    planner was asked for more, e.g. 256 for a GPU), which gives ``offset[node]`` and
    ``total_bytes``. ``liveness`` is the :class:`~memlab.memory.liveness.Liveness` the plan was
    made from (order, last readers, sizes), kept so that the lower bound and the runner need not
    work it out again. ``workspace_storage[node]``: the tag of op ``node``'s workspace, held
    during its step only (ops with a workspace only); ``workspace_offset`` its byte offset.
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
    inplace_pairs: list[tuple[Node, Node]] = field(default_factory=list)
    alignment: int = ALIGN
    traced: bool = False
    liveness: Liveness | None = field(default=None, repr=False, compare=False)
    workspace_storage: dict[Node, int] = field(default_factory=dict)
    kind = "tags"

    @cached_property
    def initial_refcount(self) -> dict[Node, int]:
        """The reference counts before the first step (p.22), computed when first asked (once
        for the plan and its runner: :attr:`Liveness.refcounts <memlab.memory.liveness.Liveness>`)."""
        live = kept_liveness(self)
        return live.refcounts if live is not None else reference_counts(self.order)

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
    def workspace_offset(self) -> dict[Node, int]:
        """Byte offset of each op's workspace: its storage's offset."""
        so = self.storage_offset
        return {n: so[s] for n, s in self.workspace_storage.items()}

    @property
    def total_bytes(self) -> int:
        """Bytes of the arena: the aligned sizes of all storages."""
        return sum(align(b, self.alignment) for b in self.storage_bytes.values())

    @property
    def num_storages(self) -> int:
        """How many distinct tags the plan uses."""
        return len(self.storage_bytes)

    def __repr__(self) -> str:
        return (f"<TagPlan {len(self.storage)} values in {self.num_storages} storages, "
                f"{self.total_bytes} bytes>")


class Box:
    """The box of free tags (p.22): a free list keyed by size, one per colour (p.24).

    For each colour, ``free[colour][nbytes]`` lists the free tags of that size, negated and
    sorted (so the smallest tag is popped from the end), and
    ``sizes[colour]`` the sorted sizes that have one, so a value of a size already in the box
    finds its tag with one lookup. :meth:`take` applies the match rule of the module
    docstring (ties: the smallest tag of the chosen size, or the largest tag when a smaller
    size is grown); :meth:`put` returns a tag.
    """

    def __init__(self, match: str = "best") -> None:
        self.match = match
        self.free: dict[Hashable, dict[int, list[int]]] = {}   # colour -> bytes -> sorted -tags
        self.sizes: dict[Hashable, list[int]] = {}             # colour -> sorted sizes in free

    def put(self, tag: int, nbytes: int, color: Hashable = 0) -> None:
        """Release ``tag`` (of ``nbytes``) into the box of ``color``."""
        free = self.free.get(color)
        if free is None:
            free = self.free[color] = {}
            self.sizes[color] = []
        tags = free.get(nbytes)
        if tags:
            insort(tags, -tag)
        else:
            free[nbytes] = [-tag]
            insort(self.sizes[color], nbytes)

    def take(self, nbytes: int, color: Hashable = 0) -> int | None:
        """Remove and return the tag the match rule picks for ``nbytes``, or None."""
        free = self.free.get(color)
        if not free:
            return None
        size, tags = nbytes, free.get(nbytes)
        if tags:                                   # a free tag of exactly this size
            tag = -tags.pop()
        elif self.match == "exact":
            return None
        else:
            sizes = self.sizes[color]
            i = bisect_left(sizes, nbytes)
            if i < len(sizes) and sizes[i] <= nbytes * MATCH_RANGE:
                size = sizes[i]                    # the smallest tag that is big enough
                tags = free[size]
                tag = -tags.pop()
            elif i > 0 and sizes[i - 1] * MATCH_RANGE >= nbytes:
                size = sizes[i - 1]                # else the biggest smaller one, grown
                tag = -free[size].pop(0)
                tags = free[size]
            else:
                return None
        if not tags:
            del free[size]
            self.sizes[color].remove(size)
        return tag

    def contents(self) -> tuple[tuple[int, int], ...]:
        """Every free tag as ``(tag, bytes)``, sorted by tag (for the steppers)."""
        return tuple(sorted((-t, b) for free in self.free.values()
                            for b, tags in free.items() for t in tags))


def plan_memory(outputs: Node | Iterable[Node], inplace: bool | Callable[[Node], bool] = True,
                share: bool = True, colors: int = 1, order: Sequence[Node] | str | None = None, *,
                trace: bool = False, match: str = "best",
                group: Callable[[Node], Hashable] | None = None,
                alignment: int = ALIGN) -> TagPlan:
    """Plan tags for every computed value of the graph (the algorithm of p.22).

    ``inplace``: allow in-place (p.19-20), for every op or for the ops a predicate accepts;
    ``share``: allow reuse of released tags (p.21); ``colors``: longest-path colouring, sharing
    only within a colour (p.24); ``group``: instead of colours, share (and work in place) only
    between values with equal ``group(node)`` (OpenNMT's vertical and horizontal sharing,
    :mod:`.sharing`); ``order``: an execution order, or a method of
    :func:`~memlab.memory.order.memory_order` (``"dfs"``: the depth-first order), default its
    memory-aware order;
    ``trace``: record one :class:`PlanStep` per op in ``plan.steps`` (off by default: the
    steppers of lessons 03 and 05 ask for it; untraced, planning in the depth-first order costs
    about one topological sort);
    ``match``: ``"best"`` or ``"exact"`` (see the module docstring); ``alignment``: bytes every
    storage is aligned to (256 for a GPU).
    """
    check_alignment(alignment)
    if match not in ("best", "exact"):
        raise PlanError(f"match must be 'best' or 'exact', got {match!r}")
    if not callable(inplace):
        check_bool(inplace, "plan_memory: inplace (or a function of a node)", PlanError)
    check_bool(share, "plan_memory: share", PlanError)
    check_bool(trace, "plan_memory: trace", PlanError)
    check_int(colors, "plan_memory: colors", 1, PlanError)
    if group is not None:
        check_callable(group, "plan_memory: group", PlanError)
    if group is not None and colors > 1:
        raise PlanError("plan_memory takes colors or group, not both")
    liveness = plan_liveness(outputs, order)
    outs, order = liveness.outputs, liveness.order
    liveness.check_sizes()
    check_alignment_of(alignment, liveness.computed, "plan_memory")
    graph = liveness.graph
    nodes, ins, size, work = graph.nodes, graph.ins, graph.size, graph.work
    last = liveness.last_step          # the step where each count reaches 0 (p.22)
    color = node_colors(order, colors) if colors > 1 else {}
    if group is not None:
        color = {n: group(n) for n in order if n.op.computes}
    may_inplace = inplace if callable(inplace) else None    # None: ``inplace`` says for all
    is_output = set(outs)
    ref = dict(liveness.refcounts) if trace else None   # the counts themselves, for the trace
    plan = TagPlan(outs, order, {}, {}, inplace=callable(inplace) or inplace, share=share,
                      colors=colors, color=color, alignment=alignment, traced=bool(trace),
                      liveness=liveness)
    tag_of = [-1] * len(nodes)                         # the tag of each computed value
    tag_color: list[Hashable] = []
    colour = [color.get(n, 0) for n in nodes] if color else None
    # a value's tag has the value's colour (tags are taken from boxes of one colour)
    same_color = (lambda i, x: colour[i] == colour[x]) if colour else None
    box = Box(match)
    take, put, partner = box.take, box.put, graph.partner
    # in place everywhere: every step's partner in one pass (the rule of IndexedGraph.partners)
    sources = graph.partners(liveness.indices, last, same_color) if inplace is True else None
    pairs = plan.inplace_pairs
    stored: list[int] = []                             # bytes of each tag (a list while planning)
    indices = liveness.indices
    # the steps of computed values (placeholders and constants are given: 0 bytes)
    for step, i in compress(enumerate(indices), map(size.__getitem__, indices)):
        nbytes = size[i]
        c = colour[i] if colour else 0
        # 1. in-place: take the tag of an input this op may overwrite, by the one rule of
        # :meth:`~.liveness.IndexedGraph.partners` (this op is its last reader, same size)
        allowed = inplace if may_inplace is None else may_inplace(nodes[i])
        if sources is not None:
            source = sources[step]
        else:
            source = partner(i, step, last, same_color) if allowed else -1
        if source >= 0:
            t, action = tag_of[source], "inplace"
            pairs.append((nodes[source], nodes[i]))
        # 2. normal sharing: a free tag from the box
        elif share and (t := take(nbytes, c)) is not None:
            action = "reuse"
            if stored[t] < nbytes:
                stored[t] = nbytes
        # 3. else a new tag
        else:
            t, action = len(stored), "new"
            stored.append(nbytes)
            tag_color.append(c)
        tag_of[i] = t
        # the workspace, held while the op runs: a tag from the box, else a new one
        w = work[i]
        if w:
            wt = take(w, c) if share else None
            if wt is None:
                wt = len(stored)
                stored.append(w)
                tag_color.append(c)
            elif stored[wt] < w:
                stored[wt] = w
            plan.workspace_storage[nodes[i]] = wt
        # 4. the op has read its inputs: release the tags of those it was the last to read
        released = [] if trace else None
        for x in ins[i]:
            if last[x] == step:
                tx = tag_of[x]
                if tx >= 0 and tx != t:
                    put(tx, stored[tx], tag_color[tx])
                    if trace:
                        released.append(tx)
        if w:                                          # the op has run: its workspace is free
            put(wt, stored[wt], tag_color[wt])
            if trace:
                released.append(wt)
        if trace:
            n = nodes[i]
            note = _note(n, action, t, None if source < 0 else nodes[source], allowed,
                         plan.storage, ref, is_output)
            for x in distinct_inputs(n):
                ref[x] -= 1
                if not ref[x]:
                    del ref[x]
            plan.storage[n] = t
            plan.steps.append(PlanStep(len(plan.steps), n, action, t,
                                       None if source < 0 else nodes[source], tuple(released),
                                       dict(ref), box.contents(), note))
    if not trace:
        computed = [i for i in liveness.indices if size[i]]
        plan.storage.update(zip(map(nodes.__getitem__, computed), map(tag_of.__getitem__, computed)))
    plan.storage_bytes.update(enumerate(stored))
    return plan


def _note(n: Node, action: str, t: int, source: Node | None, allowed: bool,
          tag: dict[Node, int], ref: dict[Node, int], is_output: set[Node]) -> str:
    """Why step ``n`` (traced) went as it did, in words: in place on which input, or why an input
    it may overwrite was still alive (its reference count ``ref``, before this step's reads)."""
    if source is not None:
        return f"in-place on {source.name}: this op is its last consumer"
    if allowed:
        for i in n.op.inplace(n):
            x = n.inputs[i]
            if x in tag and (x in is_output or ref[x] != 1):
                why = "it is a graph output" if x in is_output else f"reference count {ref[x]}"
                return f"cannot do in-place on {x.name}: still alive ({why})"
    return f"reused tag {t} from the box" if action == "reuse" else ""

"""Which forward values to keep on an op graph (CSE599G1 lecture 7, p.31-34; Chen et al. 2016).

Every strategy keeps **cuts** (:func:`cuts`): the forward values computed up to a point of the run
order that a later forward op still reads. Keeping a whole cut lets the backward pass recompute
the segment after it from kept values alone; keeping one value inside a residual branch, or
``h_t`` without ``c_t``, does not, and on a ResNet or an LSTM it saved little. A cut is kept only
where it is the smallest within :data:`WINDOW` positions (a ResNet's trunk between blocks, an
LSTM's state between steps; on a chain, each value).

* :func:`every_k` keeps a cut every k forward nodes (p.31 "checkpoint every K"): the backward pass
  then recomputes each segment once, so memory is O(k) for the segment plus O(N / k) checkpoints;
* :func:`sqrt_checkpoints` takes ``k = sqrt(N)`` (p.33: O(sqrt N) memory for one extra forward pass);
* :func:`memonger` is Chen et al.'s budget search: walk the forward nodes in run order, keep a cut
  when the bytes since the last kept one exceed a threshold, try thresholds around
  ``sqrt(total bytes x largest value)`` and thresholds cutting about sqrt(N) segments of equal
  bytes, and keep the best plan by planned bytes;
* :func:`recursive_checkpoints` nests every-k levels (p.34);
* :func:`drop_cheap` keeps every forward value but the outputs of cheap ops (batch norm and ReLU
  by default): p.35 (a)'s line "drop bn, relu", Chen et al.'s memory-sharing plan that recomputes
  those outputs in the backward pass, a constant saving rather than a sublinear one.

The forward nodes are walked in the order the step runs in, the memory-aware
:func:`~memlab.memory.order.memory_order` of the planners (the scheduling slides, part 1), and planned bytes are
those of the offset planner in that order. On full training steps (every weight gradient too)
this is what makes checkpointing pay: in the depth-first order it saves nothing (lesson 06).

Each returns the set of nodes to keep; :func:`~memlab.checkpoint.rewrite.recompute_graph` builds the
graph that recomputes the others.
"""
from __future__ import annotations

import math
import operator
from typing import Sequence

from ..errors import BudgetError, PlanError, check_int, check_list, check_number
from ..graph import Node, as_list, topo_order, workspace_of
from ..memory import memory_order, plan_offsets
from .rewrite import forward_nodes, recompute_graph, recomputed_nodes, training_outputs


def _candidates(outputs: Sequence[Node]) -> list[Node]:
    """Forward nodes that may be dropped: computed, not the loss, in the order the step runs them."""
    forward = set(forward_nodes(outputs))
    return [n for n in memory_order(outputs) if n in forward and n is not outputs[0]]


def every_k(outputs: Sequence[Node], k: int) -> set[Node]:
    """Keep a cut (:func:`cuts`) every ``k`` forward nodes of the order the step runs them (p.31):
    on a chain, every ``k``-th node; elsewhere the next small cut once ``k`` nodes have passed."""
    outputs = training_outputs(outputs, "every_k")
    check_int(k, "every_k: k", 1, PlanError)
    return by_threshold(outputs, k - 1, count=True)


def sqrt_checkpoints(outputs: Sequence[Node]) -> set[Node]:
    """Keep a cut every ``round(sqrt(N))`` of the ``N`` forward nodes (p.33)."""
    outputs = training_outputs(outputs, "sqrt_checkpoints")
    n = len(_candidates(outputs))
    return every_k(outputs, max(1, round(math.sqrt(n)))) if n else set()


def cuts(outputs: Sequence[Node]) -> list[tuple[Node, frozenset[Node]]]:
    """Each forward node in run order with the **cut** after it: the forward values computed so far
    that a later forward op still reads (keep them, and the rest of the forward pass can be
    recomputed from them alone). On a chain a cut is one value; on a ResNet it is the trunk ``h``
    between blocks (``h`` and a branch value inside one); on an LSTM the pair ``(h_t, c_t)``.
    Values computed from placeholders alone (an LSTM's input projections, which the run order may
    compute early) are in no cut: they are recomputed from the placeholders where they are read."""
    outputs = as_list(outputs)
    cands = _candidates(outputs)
    pos = {n: i for i, n in enumerate(cands)}
    last = {n: i for i, n in enumerate(cands)}
    for i, n in enumerate(cands):
        for x in n.inputs:
            if x in pos:
                last[x] = max(last[x], i)
    live: set[Node] = set()
    out = []
    for i, n in enumerate(cands):
        live.discard(n)
        for x in n.inputs:
            if x in live and last[x] <= i:
                live.discard(x)
        if last[n] > i and any(x.op.computes for x in n.inputs):
            live.add(n)
        out.append((n, frozenset(live)))
    return out


#: how many positions either side a cut must be the smallest of, to be kept (a few layers)
WINDOW = 16


def by_threshold(outputs: Sequence[Node], threshold: float, count: bool = False,
                 walk: list[tuple[Node, frozenset[Node]]] | None = None) -> set[Node]:
    """Memonger's walk over the cuts (:func:`cuts`) in run order: when the bytes (``count=True``:
    the forward nodes) since the last kept cut exceed ``threshold``, keep the next cut that holds no
    more values than any cut within :data:`WINDOW` positions (Chen et al. keep the outputs of whole
    stages: a ResNet's trunk, an LSTM's state, never a value inside a residual branch). ``walk``:
    :func:`cuts` of ``outputs`` when the caller has them already."""
    walk = cuts(outputs) if walk is None else walk
    sizes = [len(c) or len(walk) for _, c in walk]  # an empty cut is no cut
    keep: set[Node] = set()
    since = 0
    for i, (n, cut) in enumerate(walk):
        since += 1 if count else n.nbytes
        if since > threshold and cut and sizes[i] <= min(sizes[max(0, i - WINDOW):i + WINDOW + 1]):
            keep |= cut
            since = 0
    return keep


def planned_bytes(outputs: Sequence[Node], keep: set[Node]) -> int:
    """Arena bytes of the recomputing graph under the offset planner."""
    return plan_offsets(recompute_graph(outputs, keep)).total_bytes


#: memonger's trials on the last graphs it searched: (outputs, fingerprint, trials)
_TRIALS: list[tuple[list[Node], tuple, list[tuple[int, int, set[Node]]]]] = []
_TRIALS_KEPT = 4


def _fingerprint(outputs: Sequence[Node]) -> tuple:
    """What memonger's trials depend on, node by node: identity, bytes, workspace and inputs (a
    graph changed in place, e.g. by :func:`~memlab.graph.set_workspace`, differs)."""
    return tuple((id(n), n.nbytes, workspace_of(n), tuple(map(id, n.inputs)))
                 for n in topo_order(outputs))


def _memonger_trials(outputs: list[Node]) -> list[tuple[int, int, set[Node]]]:
    """The kept sets memonger tries on ``outputs``, each with its planned bytes and recomputed
    ops (keeping everything last); none when nothing can be dropped. Remembered for the last
    :data:`_TRIALS_KEPT` graphs (which it keeps alive, so their nodes' identities stay theirs): a
    budget search asks the same graph again and again."""
    mark = _fingerprint(outputs)
    for outs, fp, tried in _TRIALS:
        if fp == mark and len(outs) == len(outputs) and all(map(operator.is_, outs, outputs)):
            return tried
    cands = _candidates(outputs)
    tried: list[tuple[int, int, set[Node]]] = []
    if cands:
        total, largest = sum(n.nbytes for n in cands), max(n.nbytes for n in cands)
        base = math.sqrt(total * largest)
        seen: set[frozenset[Node]] = set()  # thresholds often keep the same set: plan it once
        walk = cuts(outputs)
        root = math.sqrt(len(cands))  # and thresholds cutting ~sqrt(N) segments of equal bytes
        for threshold in [base * f for f in (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)] + \
                [total / (root * f) for f in (0.5, 0.75, 1.0, 1.5, 2.0)]:
            keep = by_threshold(outputs, threshold, walk=walk)
            if frozenset(keep) in seen:
                continue
            seen.add(frozenset(keep))
            rewritten = recompute_graph(outputs, keep)
            tried.append((plan_offsets(rewritten).total_bytes, len(recomputed_nodes(rewritten)),
                          keep))
        tried.append((planned_bytes(outputs, set(cands)), 0, set(cands)))  # keep everything
    _TRIALS.append((list(outputs), mark, tried))
    del _TRIALS[:-_TRIALS_KEPT]
    return tried


def memonger(outputs: Sequence[Node], budget: int | None = None) -> set[Node]:
    """Chen et al.'s search: thresholds around ``sqrt(total x largest)``; the kept set whose plan
    takes the fewest bytes, or, with ``budget``, the one that recomputes least within it."""
    outputs = training_outputs(outputs, "memonger")
    if budget is not None:
        check_number(budget, "memonger: budget (bytes, or None)", low=0, error=BudgetError)
    tried = _memonger_trials(outputs)
    if not tried:
        return set()
    if budget is None:
        return set(min(tried, key=lambda t: (t[0], t[1]))[2])   # a copy: the trials are kept
    fits = [t for t in tried if t[0] <= budget]
    if not fits:
        least = min(t[0] for t in tried)
        raise BudgetError(f"no kept set memonger tried fits {budget} bytes: the minimum it found "
                          f"is {least} bytes")
    return set(min(fits, key=lambda t: (t[1], t[0]))[2])


def recursive_checkpoints(outputs: Sequence[Node], levels: int = 2) -> list[set[Node]]:
    """Chen et al.'s recursion (p.34) as nested kept sets for :func:`recompute_graph`: level ``l``
    of ``levels`` keeps every ``N^((levels + 1 - l) / (levels + 1))``-th forward value, so each
    group is cut again, down to groups of about ``N^(1 / (levels + 1))`` values (one level is
    sqrt(N); more levels hold less and recompute more)."""
    outputs = training_outputs(outputs, "recursive_checkpoints")
    check_int(levels, "recursive_checkpoints: levels", 1, PlanError)
    n = len(_candidates(outputs))
    out: list[set[Node]] = []
    taken: set[Node] = set()
    for lv in range(1, levels + 1):
        k = max(1, round(n ** ((levels + 1 - lv) / (levels + 1)))) if n else 1
        ks = every_k(outputs, k) - taken
        out.append(ks)
        taken |= ks
    return out


#: the ops whose outputs :func:`drop_cheap` drops by default: p.35 (a)'s "drop bn, relu"
CHEAP_OPS = ("batchnorm", "relu")


def drop_cheap(outputs: Sequence[Node], ops: Sequence[str] = CHEAP_OPS) -> set[Node]:
    """Keep every forward value except the outputs of the ops named in ``ops`` (p.35 (a), "drop
    bn, relu"): a batch norm or a ReLU costs little next to a convolution, so the backward pass
    recomputes it from the kept value it reads instead of holding its output. Memory stays linear
    in depth; the constant falls by what those outputs held."""
    outputs = training_outputs(outputs, "drop_cheap")
    ops = check_list(ops, "drop_cheap: ops (op names, e.g. 'batchnorm')", PlanError, nonempty=True)
    if not all(isinstance(o, str) for o in ops):
        raise PlanError(f"drop_cheap: ops must be op names (strings), got {ops!r:.80}")
    return {n for n in _candidates(outputs) if n.op.name not in set(ops)}

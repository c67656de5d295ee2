"""The exact minimum-peak order by search over sets of processed tasks (scheduling slides,
"Sequential problem", "Research problems": NP-complete in general, so exact search is for small graphs only).

Tasks are ``0..n-1``; ``needs[i]`` is the bit mask of the tasks that must run before ``i``. Running
``i`` when the processed set is ``S`` needs ``held(S) + cost[i]``, and afterwards the memory held is
``held(S) + delta[i]``; the memory held depends on ``S`` only, never on the order inside it. So the
best peak to reach ``S`` is a dynamic program over the down-closed sets, layer by layer (sets of
size k). Task graphs (:func:`~memlab.scheduling.taskgraph.min_peak_order`) and trees
(:func:`~memlab.scheduling.trees.brute_force`) both use this one search.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence


@dataclass
class ExactResult:
    """An optimal ``order``, its ``peak`` and the number of ``states`` (processed sets) explored.

    Unpacks as ``order, peak = result``.
    """

    order: list
    peak: float
    states: int

    def __iter__(self) -> Iterator:
        return iter((self.order, self.peak))

    def __getitem__(self, k: int):
        return (self.order, self.peak)[k]


def min_peak_search(needs: Sequence[int], cost: Sequence[float], delta: Sequence[float]) -> ExactResult:
    """The least peak over every order respecting ``needs``, with an order reaching it (task ids)."""
    n = len(needs)
    layer: dict[int, tuple[float, float]] = {0: (0.0, 0.0)}  # set -> (best peak, memory held)
    back: list[dict[int, tuple[int, int]]] = []                # set -> (previous set, last task)
    states = 1
    for _ in range(n):
        nxt: dict[int, tuple[float, float]] = {}
        links: dict[int, tuple[int, int]] = {}
        for mask, (pk, held) in layer.items():
            for i in range(n):
                bit = 1 << i
                if mask & bit or (needs[i] & mask) != needs[i]:
                    continue
                cand = max(pk, held + cost[i])
                new = mask | bit
                old = nxt.get(new)
                if old is None or cand < old[0]:
                    nxt[new] = (cand, held + delta[i])
                    links[new] = (mask, i)
        states += len(nxt)
        back.append(links)
        layer = nxt
    mask = (1 << n) - 1
    best = layer[mask][0] if n else 0.0
    order: list[int] = []
    for links in reversed(back):
        mask, i = links[mask]
        order.append(i)
    order.reverse()
    return ExactResult(order, best, states)

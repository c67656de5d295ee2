"""Best post-order vs optimal traversal, recomputed (scheduling slides, "Post-order is not optimal").

The slides' table (from Jacquelin, Marchal, Robert and Uçar, 2011) reports,
for actual assembly trees and for random trees: the share of trees whose
best post-order is not optimal (4.2% / 61%), the maximum increase of its
peak over the optimal one (18% / 22%) and the average increase (1% / 12%).
:func:`postorder_table` recomputes these three numbers on trees we generate:

* ``assembly``: assembly trees of 2-D and 3-D grid Laplacians of random
  sizes, ordered by nested dissection or minimum degree (random ties),
  half of them amalgamated into fundamental supernodes (:mod:`memlab.scheduling.assembly`);
* ``irregular``: assembly trees of unstructured 2-D meshes (Delaunay or
  random geometric graphs) ordered by nested dissection or minimum degree
  (:mod:`memlab.scheduling.meshes`): closer to the paper's real matrices;
* ``random``: random recursive trees with random integer sizes f and m.

The average increase is taken over the non-optimal trees (as the paper's
figures suggest: averaging 18% max over 4.2% of trees cannot give 1%); the
average over all trees is reported too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from .assembly import grid_assembly_tree
from .liu import optimal_traversal
from .meshes import irregular_family
from .postorder import best_postorder
from .treebase import Tree
from .treegen import random_tree

__all__ = ["TableRow", "compare_postorder", "assembly_family", "random_family",
           "postorder_table", "PAPER_TABLE"]

#: the slides' figures: family -> (non-optimal share, max increase, average increase)
PAPER_TABLE = {"assembly": (0.042, 0.18, 0.01), "random": (0.61, 0.22, 0.12)}


@dataclass
class TableRow:
    """One column of the slides' table: share of trees where the best post-order
    is not optimal, max and mean relative increase of its peak (mean over the
    non-optimal trees; ``mean_increase_all`` over all trees), and the count."""

    nonoptimal_share: float
    max_increase: float
    mean_increase: float
    mean_increase_all: float
    count: int

    def as_tuple(self) -> tuple[float, float, float]:
        """The three numbers of the slides' table (share, max, average)."""
        return self.nonoptimal_share, self.max_increase, self.mean_increase


def compare_postorder(trees: Iterable[Tree], rtol: float = 1e-9,
                      progress: Callable[[int], None] | None = None) -> TableRow:
    """Best post-order (Liu 1986) vs optimal traversal (Liu 1987) over ``trees``.

    ``progress(k)`` is called as the k-th tree is compared (for a progress bar)."""
    inc = []
    for k, t in enumerate(trees, 1):
        if progress is not None:
            progress(k)
        _, bpo = best_postorder(t)
        _, opt = optimal_traversal(t)
        inc.append(bpo / opt - 1.0 if opt > 0 else 0.0)
    a = np.asarray(inc)
    bad = a > rtol
    return TableRow(float(bad.mean()) if len(a) else 0.0,
                    float(a.max()) if len(a) else 0.0,
                    float(a[bad].mean()) if bad.any() else 0.0,
                    float(a.mean()) if len(a) else 0.0, len(a))


def assembly_family(count: int = 40, seed: int = 0, max_nodes: int = 2500,
                    amalgamate: bool | None = None) -> list[Tree]:
    """``count`` assembly trees of grid Laplacians (2-D sides 6..40, 3-D sides
    4..10, nested dissection or minimum degree), at most ``max_nodes`` grid
    points; amalgamated into supernodes or not (``None``: each tree at random)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        if rng.random() < 0.6:
            dims = tuple(int(x) for x in rng.integers(6, 41, size=2))
        else:
            dims = tuple(int(x) for x in rng.integers(4, 11, size=3))
        if int(np.prod(dims)) > max_nodes:
            continue
        ordering = "nd" if rng.random() < 0.5 else "md"
        amal = bool(rng.random() < 0.5) if amalgamate is None else amalgamate
        out.append(grid_assembly_tree(dims, ordering, amalgamate=amal,
                                      seed=int(rng.integers(1 << 30))))
    return out


def random_family(count: int = 200, seed: int = 0, n_range: tuple[int, int] = (20, 300),
                  f_range: tuple[int, int] = (1, 100), m_range: tuple[int, int] = (0, 100),
                  shape: str = "recursive") -> list[Tree]:
    """``count`` random trees (random recursive by default) with integer sizes."""
    rng = np.random.default_rng(seed)
    return [random_tree(int(rng.integers(n_range[0], n_range[1] + 1)), shape,
                        seed=int(rng.integers(1 << 30)), f_range=f_range, m_range=m_range)
            for _ in range(count)]


def postorder_table(n_assembly: int = 40, n_random: int = 200, seed: int = 0,
                    progress: Callable[[int, int], None] | None = None,
                    n_irregular: int = 0,
                    irregular_sizes: tuple[int, int] = (300, 1500)) -> dict[str, TableRow]:
    """The slides' table recomputed: family -> :class:`TableRow` (a few seconds
    with the default counts). ``progress(done, total)`` reports the trees
    compared. With ``n_irregular`` > 0 an ``"irregular"`` row is added: that
    many unstructured-mesh assembly trees of ``irregular_sizes`` unknowns."""
    total = n_assembly + n_random + n_irregular
    report = (lambda offset: None if progress is None else (lambda k: progress(offset + k, total)))
    out = {"assembly": compare_postorder(assembly_family(n_assembly, seed), progress=report(0))}
    if n_irregular > 0:
        fam = irregular_family(n_irregular, seed, irregular_sizes)
        out["irregular"] = compare_postorder(fam, progress=report(n_assembly))
    out["random"] = compare_postorder(random_family(n_random, seed),
                                      progress=report(n_assembly + n_irregular))
    return out

"""Tree generators: random trees and the post-order counterexample (scheduling slides,
"Post-order is not optimal").

* :func:`random_tree` — random recursive trees (each node's parent uniform
  among the earlier nodes), deep trees (parent among the 3 nodes before) and
  bushy trees (parent among the first ~sqrt(i) nodes), with random sizes.
* :func:`postorder_counterexample` — the family ``T_K`` of scheduling slides, "Post-order
  is not optimal", on which the best post-order needs
  ``M + eps + K (b-1) M/b`` while the best traversal needs
  ``M + eps + K (b-1) eps``.
"""
from __future__ import annotations

import numpy as np

from ..errors import TreeError, check_int, check_number
from .treebase import Tree

__all__ = ["random_parents", "random_tree", "postorder_counterexample", "counterexample_peaks",
           "SHAPES"]

#: shapes understood by :func:`random_tree`
SHAPES = ("recursive", "deep", "bushy")


def random_parents(n: int, shape: str = "recursive", seed: int | None = None) -> list[int]:
    """A random parent array with root 0 (node i's parent is an earlier node).

    ``recursive``: parent uniform in 0..i-1 (random recursive tree, depth ~ log n);
    ``deep``: parent uniform among i-3..i-1 (depth ~ n/2);
    ``bushy``: parent uniform among the first ceil(sqrt(i)) nodes (wide, shallow).
    """
    if n < 1:
        raise TreeError(f"random tree: n must be >= 1, got {n}")
    if shape not in SHAPES:
        raise TreeError(f"random tree: unknown shape {shape!r}; expected one of {SHAPES}")
    rng = np.random.default_rng(seed)
    i = np.arange(1, n)
    u = rng.random(n - 1)
    if shape == "recursive":
        par = np.floor(u * i)
    elif shape == "deep":
        lo = np.maximum(i - 3, 0)
        par = lo + np.floor(u * (i - lo))
    else:
        width = np.ceil(np.sqrt(i))
        par = np.floor(u * width)
    return [-1] + par.astype(np.int64).tolist()


def random_tree(n: int, shape: str = "recursive", seed: int | None = None,
                f_range: tuple[float, float] = (1, 10), m_range: tuple[float, float] = (0, 0),
                integer: bool = True) -> Tree:
    """A random in-tree of ``n`` nodes with sizes drawn uniformly in the ranges
    (integers when ``integer``); see :func:`random_parents` for the shapes.
    Used for the scheduling slides' table "best post-order vs optimal on random trees"."""
    par = random_parents(n, shape, seed)
    rng = np.random.default_rng(None if seed is None else seed + 7919)

    def draw(lo: float, hi: float) -> list[float]:
        if integer:
            return rng.integers(int(lo), int(hi) + 1, size=n).astype(float).tolist()
        return rng.uniform(lo, hi, size=n).tolist()

    return Tree(par, draw(*f_range), draw(*m_range))


def _check_family(b: int, K: int, M: float, eps: float) -> None:
    check_int(b, "postorder_counterexample: b", 2, TreeError)
    check_int(K, "postorder_counterexample: K", 1, TreeError)
    check_number(M, "postorder_counterexample: M", error=TreeError)
    check_number(eps, "postorder_counterexample: eps", error=TreeError)
    if not (M > eps > 0):
        raise TreeError(f"postorder_counterexample: need M > eps > 0, got M={M}, eps={eps}")
    if b * eps > M:
        raise TreeError(f"postorder_counterexample: need b*eps <= M (eps <= M/b), got "
                        f"b*eps={b * eps} > M={M}; otherwise the 'optimal' formula "
                        "would exceed the post-order one, which no tree can do")


def counterexample_peaks(b: int, K: int, M: float, eps: float) -> tuple[float, float]:
    """``(BPO_K, BT_K)`` = (M + eps + K(b-1)M/b, M + eps + K(b-1)eps), the best
    post-order and best traversal peaks of ``T_K`` (scheduling slides, "Post-order is not optimal")."""
    _check_family(b, K, M, eps)
    return M + eps + K * (b - 1) * M / b, M + eps + K * (b - 1) * eps


def postorder_counterexample(b: int, K: int, M: float, eps: float) -> Tree:
    """The tree ``T_K`` on which the best post-order is K times worse than optimal
    (scheduling slides, "Post-order is not optimal"); all execution data m are 0.

    Construction (ours; the slide's figure is not reproduced): ``T_0`` is a
    chain leaf L (f = M) -> X (f = eps): peak M + eps, residual eps.
    ``T_K`` is a root R (f = eps) with b children Y_1..Y_b (f = M/b), each Y_j
    having a copy of ``T_{K-1}`` as its only child.

    * Post-order: a branch Y_j has peak BPO_{K-1} and residual M/b, all
      branches are equal, so the last one starts with (b-1)M/b held:
      BPO_K = BPO_{K-1} + (b-1)M/b.
    * Best traversal: first bring every copy of ``T_{K-1}`` down to its valley
      eps (the j-th copy runs with (j-1) eps held), then run the Y's and R:
      BT_K = BT_{K-1} + (b-1) eps; it cannot do better, since when the last
      copy reaches its own peak, each other branch holds at least eps.

    Needs b >= 2, K >= 1, M > eps > 0 and b*eps <= M: if eps > M/b the
    "optimal" formula would exceed the post-order one, which is impossible
    (the best traversal is never worse than the best post-order).
    The tree has N_K = 1 + b(1 + N_{K-1}) nodes, N_0 = 2 (b^K growth). As
    eps -> 0 the ratio BPO_K / BT_K tends to 1 + K(b-1)/b, above K once b > K.
    """
    _check_family(b, K, M, eps)
    parent: list[int] = []
    f: list[float] = []

    def add(p: int, size: float) -> int:
        parent.append(p)
        f.append(size)
        return len(parent) - 1

    # iterative build: a work list of (level, attach-to-parent)
    work = [(int(K), -1)]
    while work:
        level, p = work.pop()
        if level == 0:
            x = add(p, eps)
            add(x, M)
            continue
        r = add(p, eps)
        for _ in range(int(b)):
            y = add(r, M / b)
            work.append((level - 1, y))
    return Tree(parent, f)

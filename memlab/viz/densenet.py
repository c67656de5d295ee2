"""Pictures of lesson 16 (real networks, DenseNet's memory): the three implementations of Pleiss
et al. 2017 as bars, and their memory against the layers per block. Numbers come from
:mod:`memlab.models.densenets`."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .palette import color
from .plots import finish

VARIANTS = ("naive", "shared", "shared + recomputed")


def variant_bars(rows: Mapping[str, Mapping[str, float]], title: str) -> Figure:
    """Planned GB of each implementation (:func:`~memlab.models.densenets.pleiss_variants`), the
    weight gradients (held to the step's end) hatched at the bottom of each bar."""
    fig, ax = plt.subplots(figsize=(5.4, 2.6))
    xs = range(len(VARIANTS))
    grads = [rows[v]["gradients"] for v in VARIANTS]
    ax.bar(xs, [rows[v]["total"] - g for v, g in zip(VARIANTS, grads)], bottom=grads,
           color=[color(k) for k in xs], edgecolor="#333333", label="feature maps")
    ax.bar(xs, grads, color="white", edgecolor="#333333", hatch="//", label="weight gradients")
    for x, v in zip(xs, VARIANTS):
        ax.text(x, rows[v]["total"], f"{rows[v]['total']:.1f}", ha="center", va="bottom",
                fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(VARIANTS)
    ax.set_ylabel("GB planned")
    ax.set_ylim(0, max(rows[v]["total"] for v in VARIANTS) * 1.15)
    return finish(fig, ax, title, legend=True)


def depth_figure(curve: Sequence[Mapping[str, Any]], layers: int) -> Figure:
    """Planned GB of the three implementations and the concatenations and batch-norm outputs a
    naive implementation stores, against the layers per block (rows of
    :func:`~memlab.models.densenets.depth_curve`), ``layers`` marked."""
    fig, ax = plt.subplots(figsize=(5.8, 2.9))
    xs = [r["layers"] for r in curve]
    for k, v in enumerate(VARIANTS):
        ax.plot(xs, [r[f"{v} total"] for r in curve], "o-", color=color(k), lw=2, mec="#333333",
                label=v)
    ax.plot(xs, [r["naive concat+bn"] for r in curve], "s--", color="#555555", lw=1,
            label="concat + BN outputs (naive)")
    ax.axvline(layers, color="#c0392b", ls="--", lw=1)
    ax.set_xlabel("layers per dense block (four blocks)")
    ax.set_ylabel("GB")
    row = next(r for r in curve if r["layers"] == layers)
    title = (f"{layers} layers a block: naive {row['naive total']:.1f} GB, shared "
             f"{row['shared total']:.1f}, recomputed {row['shared + recomputed total']:.1f}")
    return finish(fig, ax, title, legend=True)

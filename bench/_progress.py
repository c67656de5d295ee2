"""Shared by the benches: each row appears as soon as it is computed, and a bar shows each sweep.

``make bench | tee log`` keeps the rows (stdout, line-buffered); the bars go to stderr and vanish
when their sweep ends.
"""
from __future__ import annotations

import sys
from typing import Iterable, TypeVar

from tqdm import tqdm

T = TypeVar("T")

sys.stdout.reconfigure(line_buffering=True)


def sweep(items: Iterable[T], desc: str) -> Iterable[T]:
    """``items`` with a progress bar on stderr (none when stderr is not a terminal)."""
    items = list(items)
    return tqdm(items, desc=desc, leave=False, file=sys.stderr, disable=None)


def row(text: str = "") -> None:
    """Print one row of a table now, above any bar in progress."""
    tqdm.write(text, file=sys.stdout)
    sys.stdout.flush()

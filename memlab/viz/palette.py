"""The one palette of storages: same colour = same piece of memory."""
from __future__ import annotations

# Soft, distinguishable fills (colour-blind friendly order first), then more.
PALETTE: tuple[str, ...] = (
    "#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5",
    "#ffed6f", "#bc80bd", "#ccebc5", "#d9d9d9", "#e5c494", "#a6cee3", "#fdbf6f",
)
NEUTRAL = "#ffffff"
LEAF = "#eeeeee"


def color(storage_id: int | None) -> str:
    """The fill colour of storage ``storage_id`` (white when it has none)."""
    if storage_id is None or storage_id < 0:
        return NEUTRAL
    return PALETTE[storage_id % len(PALETTE)]

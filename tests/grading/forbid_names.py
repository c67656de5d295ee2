"""Public API names for the functions a solution's ``forbid`` refuses (docs/grading.md, ``forbid``)."""
from __future__ import annotations

import importlib
import types


def _exported(owner: object) -> list[str]:
    names = getattr(owner, "__all__", None)
    return list(names) if names is not None else [n for n in vars(owner) if not n.startswith("_")]


def public_names(obj: object, depth: int = 3) -> list[str]:
    """Every dotted name of *obj* reached from ``memlab`` through what each package exports
    (``__all__``), shortest first."""
    out, frontier = [], [("memlab", importlib.import_module("memlab"))]
    for _ in range(depth):
        nxt = []
        for name, owner in frontier:
            for n in _exported(owner):
                v = getattr(owner, n, None)
                if v is obj:
                    out.append(f"{name}.{n}")
                elif isinstance(v, types.ModuleType) and v.__name__.startswith("memlab."):
                    nxt.append((f"{name}.{n}", v))
        frontier = nxt
    return out


def public_name(target: str) -> str:
    """The public name of *target* (a dotted name, maybe ``Class.method``): its shortest exported
    name, else *target* itself."""
    from memlab.testing import _resolve
    parts = target.split(".")
    for k in range(len(parts), 1, -1):
        try:
            obj = _resolve(".".join(parts[:k]))[2]
        except ValueError:
            continue
        if isinstance(obj, (types.FunctionType, type)):
            names = public_names(obj)
            if names:
                return ".".join([names[0]] + parts[k:])
    return target

"""What the kernel side reports as tampering (plain data; :mod:`.policy` is what it costs).

Before the first student cell :func:`baseline` records every function of ``memlab.testing`` and the
call server's own: identity, code, defaults, keyword defaults, closure contents (a refusal in force,
whose code :func:`memlab.testing.forbid` swapped, is not an edit).  :func:`tampering` names those
replaced or edited since.  Runs in the student's kernel, so it can be fooled: it only ever costs
the submission points.
"""
from __future__ import annotations

from typing import Any

import memlab.testing as _testing

_own_code = _testing.own_code     # taken as this module loads, before any student cell
_BASELINE: dict = {}
_OWN: dict[str, Any] = {}          # the call server's own functions, by name (see :func:`baseline`)


def _state(f: Any) -> tuple:
    """What a function is made of: identity, code, defaults, keyword defaults, closure contents."""
    cells = []
    for c in getattr(f, "__closure__", None) or ():
        try:
            cells.append(id(c.cell_contents))
        except ValueError:
            cells.append(None)
    kw = getattr(f, "__kwdefaults__", None)
    code = getattr(f, "__code__", None)
    if code is not None and code.co_filename == "<memlab.testing.forbid>":    # refused right now
        code = _own_code(f)
    return (id(f), code, getattr(f, "__defaults__", None),
            None if kw is None else tuple(sorted((k, id(v)) for k, v in kw.items())), tuple(cells))


def _watched() -> dict:
    """The state of every function watched: memlab.testing's and the call server's own."""
    out = {}
    named = [(f"memlab.testing.{n}", getattr(_testing, n, None)) for n in vars(_testing)
             if not n.startswith("_")] + [(f"memlab.testing.{n}", getattr(_testing, n, None))
                                          for n in ("_refusing_code", "_functions", "_resolve")]
    for name, f in named + list(_OWN.items()):
        if callable(f) and not isinstance(f, type):
            out[name] = _state(f)
            if hasattr(f, "__wrapped__"):
                out[name + " (its generator)"] = _state(f.__wrapped__)
    return out


def baseline(own: dict[str, Any]) -> None:
    """Record what :func:`tampering` compares with (before any student cell); *own*: the call
    server's functions, by name."""
    _OWN.clear()
    _OWN.update(own)
    _BASELINE.clear()
    _BASELINE.update(_watched())


def tampering() -> list[str]:
    """What was replaced since :func:`start` among the functions grading relies on here: plain data
    for the judge's policy (:mod:`memlab.grading.policy`), which this process cannot be trusted on."""
    try:
        now = _watched()
        return sorted(k for k, v in _BASELINE.items() if now.get(k) != v)[:20]
    except Exception as e:  # noqa: BLE001  (a broken memlab.testing is itself tampering)
        return [f"memlab.testing ({type(e).__name__})"]



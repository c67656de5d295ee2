"""Plain data across the boundary between the student's kernel and the judge.

Only plain data crosses: ``None``, booleans, integers, floats, strings, lists, tuples, dicts (any
plain, hashable keys), sets, numpy arrays and scalars of a numeric dtype (bool, int, uint, float).
The wire format is JSON text in which everything JSON cannot say is a one-key object whose key
starts with ``$``:

* ``{"$t": [...]}`` a tuple, ``{"$set": [...]}`` a set, ``{"$d": [[key, value], ...]}`` a dict
  (every dict, so keys keep their type and order);
* ``{"$a": [dtype, shape, base64 bytes]}`` a numpy array, ``{"$s": [dtype, base64]}`` a numpy scalar;
* ``{"$f": "nan" | "inf" | "-inf"}`` a float that is not finite.  **NaN and infinities are
  allowed** and round-trip exactly: a NaN answer is a wrong answer, which the comparison decides,
  not a reason to refuse the message;
* ``{"$x": [kind, payload]}`` an extension the caller defines (graph nodes, handles to objects that
  stay in the kernel, memlab's structures by the codecs they register in :mod:`memlab.plaindata`),
  encoded and decoded by hooks.

:func:`decode` is strict: no pickle, no object is ever built from a name in the message, every
container is checked, and the text (``max_bytes``), nesting (``max_depth``) and item count
(``max_items``) are capped; anything else raises :class:`CodecError`.  Imports only the standard
library and numpy.
"""
from __future__ import annotations

import base64
import json
import math
from typing import Any, Callable

import numpy as np

from memlab.errors import MemlabError   # absolute: also loaded as a file in the kernel

#: The largest message: the largest honest call of the 15 solutions is 474,700 bytes (a request of
#: exercise 01; the largest reply 293,115 bytes, exercise 02), so 8 MB leaves a factor of 17.
MAX_BYTES = 8 << 20
MAX_DEPTH = 64
MAX_ITEMS = 4_000_000
NUMERIC = "biuf"
_TAGS = ("$t", "$set", "$d", "$a", "$s", "$f", "$x")


class CodecError(MemlabError, ValueError):
    """A message that is not plain data, or over a limit."""


def _dtype(name: object) -> np.dtype:
    if not isinstance(name, str) or len(name) > 16:
        raise CodecError(f"a dtype must be a short string, not {name!r:.60}")
    try:
        dt = np.dtype(name)
    except TypeError:
        raise CodecError(f"unknown dtype {name!r}") from None
    if dt.kind not in NUMERIC or dt.hasobject or dt.fields is not None or dt.subdtype is not None:
        raise CodecError(f"only numeric dtypes cross (bool, int, uint, float), not {name!r}")
    return dt


def to_wire(obj: Any, ext: Callable[[Any], tuple[str, Any] | None] | None = None, *,
            max_depth: int = MAX_DEPTH) -> Any:
    """*obj* as JSON-able data in the wire format; *ext(obj)* returns ``(kind, payload)`` for an
    object that is not plain (then the payload is encoded), or None (then :class:`CodecError`)."""

    def enc(x: Any, depth: int) -> Any:
        if depth > max_depth:
            raise CodecError(f"nested deeper than {max_depth} levels")
        t = type(x)
        if x is None or t is bool or t is str:
            return x
        if t is int:
            return x
        if t is float:
            return x if math.isfinite(x) else {"$f": "nan" if x != x else ("inf" if x > 0 else "-inf")}
        if t is list:
            return [enc(v, depth + 1) for v in x]
        if t is tuple:
            return {"$t": [enc(v, depth + 1) for v in x]}
        if t is dict:
            return {"$d": [[enc(k, depth + 1), enc(v, depth + 1)] for k, v in x.items()]}
        if t in (set, frozenset):
            return {"$set": [enc(v, depth + 1) for v in x]}
        if t is np.ndarray and x.dtype.kind in NUMERIC and x.dtype.fields is None:
            data = base64.b64encode(x.tobytes(order="C")).decode("ascii")
            return {"$a": [x.dtype.str, list(x.shape), data]}
        if isinstance(x, np.generic) and x.dtype.kind in NUMERIC:
            return {"$s": [x.dtype.str, base64.b64encode(x.tobytes()).decode("ascii")]}
        if ext is not None:
            got = ext(x)
            if got is not None:
                kind, payload = got
                return {"$x": [str(kind), enc(payload, depth + 1)]}
        raise CodecError(f"not plain data: {t.__name__}")

    return enc(obj, 0)


def encode(obj: Any, ext: Callable[[Any], tuple[str, Any] | None] | None = None, *,
           max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> str:
    """*obj* as wire-format JSON text (see the module docstring)."""
    text = json.dumps(to_wire(obj, ext, max_depth=max_depth), separators=(",", ":"), allow_nan=False)
    if len(text) > max_bytes:
        raise CodecError(f"the message is {len(text):,} bytes, over the limit of {max_bytes:,}")
    return text


def from_wire(data: Any, ext: Callable[[str, Any], Any] | None = None, *, max_depth: int = MAX_DEPTH,
              max_items: int = MAX_ITEMS) -> Any:
    """Rebuild plain data from parsed wire-format JSON; *ext(kind, payload)* rebuilds extensions
    (without it, an extension is a :class:`CodecError`)."""
    count = [0]

    def dec(x: Any, depth: int) -> Any:
        if depth > max_depth:
            raise CodecError(f"nested deeper than {max_depth} levels")
        count[0] += 1
        if count[0] > max_items:
            raise CodecError(f"more than {max_items:,} items")
        t = type(x)
        if x is None or t in (bool, int, str):
            return x
        if t is float:
            if not math.isfinite(x):
                raise CodecError("a float that is not finite must be written {\"$f\": ...}")
            return x
        if t is list:
            return [dec(v, depth + 1) for v in x]
        if t is not dict or len(x) != 1:
            raise CodecError(f"not wire-format data: {t.__name__} {str(x)[:60]}")
        (tag, v), = x.items()
        if tag == "$t" and type(v) is list:
            return tuple(dec(i, depth + 1) for i in v)
        if tag == "$set" and type(v) is list:
            return set(_hashable(dec(i, depth + 1)) for i in v)
        if tag == "$d" and type(v) is list:
            out = {}
            for pair in v:
                if type(pair) is not list or len(pair) != 2:
                    raise CodecError("a dict's items must be [key, value] pairs")
                out[_hashable(dec(pair[0], depth + 1))] = dec(pair[1], depth + 1)
            return out
        if tag == "$f" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "$a" and type(v) is list and len(v) == 3:
            dt = _dtype(v[0])
            shape = v[1]
            if type(shape) is not list or len(shape) > 32 or \
                    not all(type(n) is int and 0 <= n for n in shape):
                raise CodecError(f"an array's shape must be a list of integers >= 0, not {shape!r:.60}")
            raw = _b64(v[2])
            size = math.prod(shape)
            count[0] += size // 64
            if count[0] > max_items or size * dt.itemsize != len(raw):
                raise CodecError(f"an array of shape {tuple(shape)} and dtype {dt} does not match its "
                                 f"{len(raw)} bytes (or is over the limit)")
            return np.frombuffer(raw, dtype=dt).reshape(tuple(shape)).copy()
        if tag == "$s" and type(v) is list and len(v) == 2:
            dt = _dtype(v[0])
            raw = _b64(v[1])
            if len(raw) != dt.itemsize:
                raise CodecError(f"a {dt} scalar takes {dt.itemsize} bytes, not {len(raw)}")
            return np.frombuffer(raw, dtype=dt)[0]
        if tag == "$x" and type(v) is list and len(v) == 2 and type(v[0]) is str:
            if ext is None:
                raise CodecError(f"an extension {v[0][:40]!r} where none is expected")
            return ext(v[0], dec(v[1], depth + 1))
        raise CodecError(f"unknown or malformed tag {str(tag)[:20]!r}")

    return dec(data, 0)


def decode(text: str | bytes, ext: Callable[[str, Any], Any] | None = None, *,
           max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH, max_items: int = MAX_ITEMS) -> Any:
    """Parse wire-format JSON text strictly (see the module docstring); :class:`CodecError` on
    anything else, never another exception."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise CodecError(f"a message is text, not {type(text).__name__}")
    if len(text) > max_bytes:
        raise CodecError(f"the message is {len(text):,} bytes, over the limit of {max_bytes:,}")
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise CodecError(f"the message is not UTF-8: {e}") from None
    def no_constants(name: str) -> Any:
        raise CodecError(f"{name} is not plain JSON (write {{\"$f\": ...}})")

    try:
        data = json.loads(text, parse_constant=no_constants)
    except CodecError:
        raise
    except (ValueError, RecursionError) as e:
        raise CodecError(f"not valid JSON: {str(e)[:200]}") from None
    try:
        return from_wire(data, ext, max_depth=max_depth, max_items=max_items)
    except CodecError:
        raise
    except (TypeError, ValueError, OverflowError, MemoryError, RecursionError) as e:
        raise CodecError(f"malformed message: {type(e).__name__}: {str(e)[:200]}") from None


def _b64(s: object) -> bytes:
    if not isinstance(s, str):
        raise CodecError("binary data must be a base64 string")
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise CodecError("binary data is not valid base64") from None


def _hashable(k: Any) -> Any:
    try:
        hash(k)
    except TypeError:
        raise CodecError(f"a dict key or set item must be hashable, not {type(k).__name__}") from None
    return k

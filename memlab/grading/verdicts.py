"""What an answer's call gave the judge besides a result, and the one writer of hidden feedback.

:class:`AnswerRaised` (subclassed per exception class and built-in base, so ``except ValueError``
in a test catches an answer's ``ValueError``), :class:`CallFailed` (no result: a time limit, a dead
kernel, a result that is not plain data) and :func:`feedback`, the text a student may see of a
failed hidden check: the author's message, what the answer raised with the student's own frames,
never a line of the hidden test.
"""
from __future__ import annotations

import builtins
import traceback

from .text import clean

FEEDBACK_LIMIT = 2_000


class AnswerRaised(Exception):
    """The student's answer raised (in their kernel); ``kind`` is its class name, ``trace`` the
    student's own frames."""

    def __init__(self, kind: str, message: str, trace: list[str]) -> None:
        super().__init__(message)
        self.kind, self.message, self.trace = kind, message, trace

    def __str__(self) -> str:
        return self.message


class CallFailed(Exception):
    """A call of the student's answer that gave no result: over its time limit, a dead kernel, a
    result that is not plain data."""


_RAISED: dict[tuple[str, str], type] = {}


def _raised_class(kind: str, base: str) -> type:
    """A class for what the answer raised: named like it, and a subclass of the built-in exception it
    derives from, so ``except ValueError`` in a test catches an answer's ``ValueError``."""
    b = getattr(builtins, base, None)
    if not (isinstance(b, type) and issubclass(b, Exception)) or b is Exception:
        b = None
    key = (kind, b.__name__ if b else "")
    if key not in _RAISED:
        bases = (AnswerRaised, b) if b is not None else (AnswerRaised,)
        _RAISED[key] = type(kind if kind.isidentifier() else "Error", bases,
                            {"__init__": AnswerRaised.__init__, "__str__": AnswerRaised.__str__})
    return _RAISED[key]



def feedback(e: BaseException) -> str:
    """What a student may see of a failed hidden check: the author's message, what the answer
    raised (with the student's own frames), never a line of the hidden test."""
    if isinstance(e, AnswerRaised):
        what = f"your answer raised {e.kind}" + (f": {e.message}" if e.message else "")
        if e.trace:
            what += "\n  in your code:\n    " + "\n    ".join(e.trace)
    elif isinstance(e, CallFailed):
        what = str(e)
    else:
        try:
            what = "".join(traceback.format_exception_only(type(e), e)).strip()
        except Exception:  # noqa: BLE001
            what = type(e).__name__
    what = clean(what)
    if len(what) > FEEDBACK_LIMIT:
        what = what[:FEEDBACK_LIMIT] + " ... [clipped]"
    return "a hidden test failed: " + what



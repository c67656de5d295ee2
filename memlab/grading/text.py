"""Text that reaches results.json, the gradebook or a terminal: printable, whatever a submission sent.

:func:`clean` writes lone surrogates (``"\\ud800"``: no encoder accepts them) and control characters
(escape sequences that move a terminal's cursor, a carriage return that overwrites a line) as
visible escapes such as ``\\x1b`` and ``\\ud800``; newlines and tabs stay.  Every text of a result
goes through it (:func:`memlab.grading.results.clip`), so no submission can break the file's
encoding or forge what a reader sees.
"""
from __future__ import annotations

import re

#: C0 controls but tab and newline, DEL, C1 controls, lone surrogates, and the bidirectional
#: overrides that reorder what a terminal shows.
_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def clean(text: object) -> str:
    """*text* (made a string) with every character that is not printable text escaped."""
    s = text if isinstance(text, str) else str(text)
    return _BAD.sub(_escape, s)

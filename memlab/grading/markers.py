"""The markers of memlab notebooks: ``### BEGIN/END SOLUTION`` and ``### BEGIN/END HIDDEN TESTS``."""
from __future__ import annotations

import re
import textwrap

from ..errors import GradingError

YOUR_CODE = "# YOUR CODE HERE"
NOT_IMPLEMENTED = "raise NotImplementedError()"
YOUR_ANSWER = "YOUR ANSWER HERE"
# A marker is a line holding only the marker (any indentation, any number of leading '#').
_MARKER = re.compile(r"^(?P<indent>\s*)#+\s*(?P<what>BEGIN|END)\s+(?P<kind>SOLUTION|HIDDEN TESTS)\s*$")


def find_regions(source: str, kind: str, where: str) -> list[tuple[int, int, str]]:
    """The marked regions of *kind* (``"SOLUTION"`` or ``"HIDDEN TESTS"``) in *source*.

    Returns ``(begin line, end line, indentation of the begin line)`` triples, 0-based line numbers
    of the marker lines themselves.  Raises :class:`GradingError` on unbalanced or nested markers.
    """
    regions, start = [], None
    for i, line in enumerate(source.split("\n")):
        m = _MARKER.match(line)
        if not m or m["kind"] != kind:
            continue
        if m["what"] == "BEGIN":
            if start is not None:
                raise GradingError(f"{where}, line {i + 1}: '### BEGIN {kind}' inside another one "
                                   f"(opened on line {start[0] + 1}); close it with '### END {kind}' first")
            start = (i, m["indent"])
        else:
            if start is None:
                raise GradingError(f"{where}, line {i + 1}: '### END {kind}' without a '### BEGIN {kind}' "
                                   "before it")
            regions.append((start[0], i, start[1]))
            start = None
    if start is not None:
        raise GradingError(f"{where}, line {start[0] + 1}: '### BEGIN {kind}' is never closed by "
                           f"'### END {kind}'")
    return regions


def has_marker(source: str, kind: str) -> bool:
    """Whether *source* has a marker line of *kind*."""
    return any((m := _MARKER.match(line)) and m["kind"] == kind for line in source.split("\n"))


def hidden_lines(source: str, where: str = "<cell>") -> set[int]:
    """1-based numbers of the lines of *source* inside (or on) hidden-test markers."""
    out: set[int] = set()
    for b, e, _ in find_regions(source, "HIDDEN TESTS", where):
        out.update(range(b + 1, e + 2))
    return out


def strip_solution(source: str, where: str, markdown: bool = False) -> str:
    """*source* with each solution region replaced by the placeholder (the whole cell if unmarked)."""
    regions = find_regions(source, "SOLUTION", where)
    if not regions:
        return YOUR_ANSWER if markdown else f"{YOUR_CODE}\n{NOT_IMPLEMENTED}"
    lines = source.split("\n")
    out, pos = [], 0
    for b, e, indent in regions:
        out.extend(lines[pos:b])
        out.extend([indent + YOUR_ANSWER] if markdown else [indent + YOUR_CODE, indent + NOT_IMPLEMENTED])
        pos = e + 1
    out.extend(lines[pos:])
    return "\n".join(out)


def judge_code(source: str) -> str:
    """The judge's part of a tests cell: its hidden region(s), markers left out."""
    lines = source.split("\n")
    out: list[str] = []
    for b, e, _ in find_regions(source, "HIDDEN TESTS", "<tests cell>"):
        out.extend(lines[b + 1:e])
    return textwrap.dedent("\n".join(out))


def strip_hidden(source: str, where: str) -> str:
    """*source* without its hidden-test regions (markers included)."""
    regions = find_regions(source, "HIDDEN TESTS", where)
    lines = source.split("\n")
    out, pos = [], 0
    for b, e, _ in regions:
        out.extend(lines[pos:b])
        pos = e + 1
    out.extend(lines[pos:])
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)



"""What the judge does with the tampering the student's kernel reports: the one policy.

The kernel side (:func:`memlab.grading.callserver.tampering`) reports, as plain data, the functions
grading relies on in the kernel (every function of ``memlab.testing``, ``forbid``'s insides, the
call server's own) that were replaced or edited since before the first student cell: once when the
call server connects (a note on the grade) and with every reply after it.  The report comes from
the student's process: it can be forged or hidden, so it can never give points (no verdict depends
on the kernel: the judge computes them from the plain values the answers return).  It can only take
them away, and only the submission's own: **a tests cell during which a reply reported tampering
scores 0**, every check failing with a message naming what was replaced.  Cells judged before the
report keep their points (the judge computed them before), and a report is sticky (the kernel
compares with what it recorded before the first student cell), so every later cell scores 0 too.
A forged report harms only the submission that forges it.
"""
from __future__ import annotations

from .text import clean


def _names(report) -> str:
    return ", ".join(clean(str(x))[:200] for x in sorted(report)[:12])


def apply(checks: list, error: str | None, report) -> tuple[list, str | None]:
    """A tests cell's ``(checks, error)`` after the policy: unchanged without a *report*, else every
    check failed and the error saying why."""
    if not report:
        return checks, error
    why = ("0 points: your code replaced what grading relies on in your kernel (" + _names(report)
           + "), so the calls of these tests cannot be trusted")
    return [[name, points, False, why] for name, points, _, _ in checks], why


def tampering_notes(report: list) -> list[str]:
    """The grade's note for the tampering the call server reported when it connected."""
    if not report:
        return []
    return ["the graded code replaced what grading relies on in its kernel (" + _names(set(report))
            + "); the tests cells judged from then on score 0 (memlab.grading.policy)"]

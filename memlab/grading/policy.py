"""What the judge does with the tampering the student's kernel reports: the one policy.

The kernel side (:func:`memlab.grading.callserver.tampering`) reports, as plain data, the
functions grading relies on in the kernel (``memlab.testing.check``, ``forbid``, the call server's
own) that were replaced since before the first student cell.  That report comes from the student's
process, so it can be forged or hidden: it can neither take points away (a forged report would
zero an honest question) nor give them (the verdicts never depend on the kernel).  The policy is
therefore: **a report changes no score; it is a note on the grade**, naming what was replaced, for
the instructor (who may treat it as an academic-integrity matter).  The verdicts are the judge's,
computed from the plain values the answers return.
"""
from __future__ import annotations

from .text import clean


def tampering_notes(report: list) -> list[str]:
    """The grade's notes for the kernel's tampering *report* (names of what was replaced)."""
    names = [clean(str(x))[:200] for x in list(report)[:20]]
    if not names:
        return []
    return ["the graded code replaced what grading relies on in its kernel (" + ", ".join(names)
            + "); this changes no score (the judge decides on the answers' values alone) and is "
              "reported for the instructor"]

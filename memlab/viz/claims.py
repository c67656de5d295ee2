"""Sentences about computed numbers, asserted by the cell that prints them.

A lesson that says "the planner's peak is below the naive one" or "about a third of the bytes are
activations" states a fact about numbers it computes. Typed into Markdown, such a sentence drifts
when a re-execution moves the numbers; printed by :func:`claim`, it is checked each time the cell
runs, so nbval fails on the cell whose sentence no longer holds.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MemlabError


class ClaimError(MemlabError):
    """A sentence a lesson states about its own numbers is false for the numbers computed."""


def _truth(holds: Any, sentence: str) -> bool:
    if isinstance(holds, (bool, np.bool_)):
        return bool(holds)
    raise ClaimError(f"claim: holds must be True or False (a comparison of the numbers the sentence "
                     f"states), got {type(holds).__name__} {holds!r:.60} for the sentence "
                     f"{sentence!r:.200}")


def claim(holds: Any, sentence: str, *, display: bool = True) -> str | None:
    """Show ``sentence`` (Markdown) when ``holds`` is true; raise :class:`ClaimError` naming it
    otherwise.

    ``holds`` is the comparison the sentence states, computed from the same values the sentence
    prints, for example ``claim(peak < naive, f"The plan's peak, {peak} B, is below {naive} B.")``.
    With ``display=False`` nothing is shown and the checked sentence is returned; otherwise nothing
    is returned, so a claim on a cell's last line shows once. Several claims that make one paragraph
    go through :func:`claims`.
    """
    if not isinstance(sentence, str) or not sentence.strip():
        raise ClaimError(f"claim: sentence must be a non-empty string, got {sentence!r:.60}")
    if not _truth(holds, sentence):
        raise ClaimError(f"this sentence no longer holds for the numbers computed: {sentence}")
    if not display:
        return sentence
    _show(sentence)
    return None


def claims(*pairs: tuple[Any, str], joiner: str = " ") -> None:
    """Check several ``(holds, sentence)`` pairs and show them as one paragraph; the first false
    one raises :class:`ClaimError` naming it."""
    if not pairs or not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
        raise ClaimError("claims: each argument must be a pair (holds, sentence), "
                         f"got {pairs!r:.80}")
    _show(joiner.join(claim(h, s, display=False) for h, s in pairs))


def _show(text: str) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:  # pragma: no cover - IPython is a dependency of the lessons
        print(text)
        return
    if get_ipython() is None:
        print(text)
    else:
        display(Markdown(text))

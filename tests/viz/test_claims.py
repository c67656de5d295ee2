"""The lessons' claims helper: a true sentence is shown, a false one stops the cell naming it."""
import numpy as np
import pytest

import memlab as ml
from memlab.viz import ClaimError, claim, claims


@pytest.fixture(autouse=True)
def _outside_ipython(monkeypatch):
    """Outside IPython a claim prints its sentence (another test may have started a shell)."""
    import IPython
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)


def test_true_claim_returns_and_prints_the_sentence(capsys):
    peak, naive = 6, 9
    shown = claim(peak < naive, f"The plan's peak, {peak} slots, is below the naive {naive}.")
    assert shown is None    # a claim on a cell's last line is shown once, not echoed again
    assert capsys.readouterr().out == "The plan's peak, 6 slots, is below the naive 9.\n"
    assert claim(True, "kept", display=False) == "kept" and capsys.readouterr().out == ""


def test_false_claim_raises_naming_the_sentence():
    with pytest.raises(ClaimError, match="below the naive 5"):
        claim(7 < 5, "The plan's peak, 7 slots, is below the naive 5.")


def test_claim_error_is_a_memlab_error():
    assert issubclass(ClaimError, ml.MemlabError)


def test_numpy_bools_are_taken():
    assert claim(np.float64(1.0) < np.float64(2.0), "one is below two", display=False)


@pytest.mark.parametrize("holds", [np.array([True, False]), 1, None, "yes"])
def test_a_non_bool_condition_is_refused(holds):
    with pytest.raises(ClaimError, match="holds must be True or False"):
        claim(holds, "an ambiguous claim")


def test_an_empty_sentence_is_refused():
    with pytest.raises(ClaimError, match="sentence must be"):
        claim(True, "  ")


def test_claims_join_and_the_first_false_one_names_itself(capsys):
    assert claims((1 < 2, "One is below two."), (3 > 2, "Three is above two.")) is None
    assert capsys.readouterr().out == "One is below two. Three is above two.\n"
    with pytest.raises(ClaimError, match="Four is below two"):
        claims((1 < 2, "One is below two."), (4 < 2, "Four is below two."))
    with pytest.raises(ClaimError, match="pair"):
        claims("not a pair")


def test_in_ipython_the_sentence_is_markdown(monkeypatch):
    shown = []
    import IPython
    import IPython.display
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    claim(True, "**bold** claim")
    assert isinstance(shown[0], IPython.display.Markdown) and shown[0].data == "**bold** claim"

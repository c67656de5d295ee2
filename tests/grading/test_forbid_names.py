"""Solutions refuse library functions by their public API names (docs/grading.md, ``forbid``).

A name that resolves only through a module a function happens to live in breaks silently when the
library is reorganised; the public name (what ``memlab`` and its packages export in ``__all__``) is
the one the library keeps.  The refusal itself follows the function object, however it is reached.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from forbid_names import public_name, public_names
from memlab.testing import _resolve

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
#: Refused functions no package exports (the library should export them; until then they are named
#: by their module). The test fails when one becomes exported, so this list only shrinks.
NOT_EXPORTED = {"memlab.checkpoint.binomial.allocate", "memlab.checkpoint.hetero.HeteroPlanner",
                "memlab.checkpoint.hetero.compare_with_homogeneous"}


def _forbid(path: Path) -> list[str]:
    return json.loads(path.read_text())["metadata"]["memlab"].get("forbid", [])


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_forbid_names_are_public(path):
    for name in _forbid(path):
        _resolve(name)                       # it names something that exists
        assert not any(p.startswith("_") for p in name.split(".")), f"{path.name}: {name} is private"
        if name in NOT_EXPORTED:
            assert public_name(name) == name, f"{name} is exported now: name it {public_name(name)}"
            continue
        assert public_name(name) == name, f"{path.name}: name {name} by its public name {public_name(name)}"


def test_the_rule_catches_a_module_path():
    """The check is live: a function named through its defining module has a shorter public name."""
    import memlab.checkpoint as ck
    assert public_name("memlab.checkpoint.chain_strategies.optimal") == "memlab.checkpoint.optimal"
    assert "memlab.checkpoint.optimal" in public_names(ck.optimal)

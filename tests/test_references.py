"""Docstrings name modules and objects that exist (stale ``memlab.planner``,
``memlab.treegen`` and ``memlab.ops.Op`` references outlived their modules)."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOTTED = re.compile(r"(?<![\w.])(memlab(?:\.[A-Za-z_]\w*)+)")
#: dotted names that are not Python objects (a notebook metadata key)
NOT_OBJECTS = {"memlab.generated_sha256"}


def resolves(ref: str) -> bool:
    parts = ref.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for name in parts[k:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def test_every_dotted_memlab_name_in_the_package_exists():
    bad = sorted({f"{p.relative_to(ROOT)}: {m}" for p in (ROOT / "memlab").rglob("*.py")
                  for m in DOTTED.findall(p.read_text())
                  if m not in NOT_OBJECTS and not resolves(m)})
    assert not bad, "stale references:\n" + "\n".join(bad)


def test_the_check_catches_a_stale_name():
    assert resolves("memlab.memory.planner.TagPlan") and resolves("memlab.graph.node.Op")
    assert not resolves("memlab.planner.TagPlan") and not resolves("memlab.treesim.TreeSchedule")
    assert DOTTED.findall(":class:`~memlab.treegen` x.memlab.y") == ["memlab.treegen"]

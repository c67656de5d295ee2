"""docs/modules.md lists every module of the library with its docstring's first sentence."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("module_map", ROOT / "scripts" / "module_map.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_what_the_script_writes():
    assert _script().main(["--check"]) == 0, "run python scripts/module_map.py"


def test_every_module_file_is_a_row():
    text = (ROOT / "docs" / "modules.md").read_text(encoding="utf-8")
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "memlab").rglob("*.py")
                   if "__pycache__" not in p.parts)
    assert files and all(f"| `{f}` |" in text for f in files)


def test_first_sentence_stops_at_the_sentence_not_at_an_abbreviation():
    first = _script().first_sentence
    assert first("Chen et al. 2016 keep cuts. Then more.") == "Chen et al. 2016 keep cuts."
    assert first("Pages p.17-22 of the lecture, e.g. the box.\n\nDetails.") == \
        "Pages p.17-22 of the lecture, e.g. the box."
    assert first("A | B :func:`~memlab.memory.order.memory_order`") == \
        "A \\| B `memlab.memory.order.memory_order`"

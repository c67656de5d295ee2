"""Which stored outputs nbval may compare (README, "Writing lessons").

A cell whose output nbval compares (the ``nbval-check-output`` cell tag, or the older
``# NBVAL_CHECK_OUTPUT`` first line, which nbval also reads) must print only what every CPU computes alike: counts,
bytes, slide numbers, exact rationals. Training losses, timings and anything that went through
many floating-point steps depend on the BLAS kernels and the number of threads; such numbers are
checked in tests/ with a tolerance instead. This test refuses a checked cell that trains, times,
or draws from an unseeded random generator.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

LESSONS = sorted((Path(__file__).resolve().parents[2] / "lessons").glob("[0-9][0-9]_*.ipynb"))

#: calls whose printed results depend on the floating-point path or the clock
FORBIDDEN = {
    r"\btrain\(": "trains a model (the loss depends on the BLAS path)",
    r"\bperf_counter\(|\btime\.time\(|\btimeit\b": "measures time",
    r"np\.random\.(rand|randn|random|normal|uniform)\(": "draws from numpy's global generator",
}


#: the cell tag nbval reads (nbval/plugin.py: a comment marker lower-cased, ``_`` as ``-``)
TAG = "nbval-check-output"


def is_checked(cell: dict) -> bool:
    """nbval compares this cell's stored output: it carries the tag, or the comment marker."""
    src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    tagged = TAG in cell.get("metadata", {}).get("tags", [])
    return cell["cell_type"] == "code" and (tagged or "NBVAL_CHECK_OUTPUT" in src)


def checked_cells(path: Path) -> list[tuple[int, str]]:
    nb = json.loads(path.read_text())
    out = []
    for i, c in enumerate(nb["cells"]):
        if is_checked(c):
            out.append((i, "".join(c["source"]) if isinstance(c["source"], list) else c["source"]))
    return out


def problems(src: str) -> list[str]:
    """Why a checked cell's output may differ between CPUs (a time, even one that
    tests/nbval_sanitize.cfg would mask, belongs in an unchecked cell)."""
    return [why for pattern, why in FORBIDDEN.items() if re.search(pattern, src)]


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_checked_cells_print_only_exact_numbers(path):
    bad = [f"cell {i}: {', '.join(problems(src))}" for i, src in checked_cells(path) if problems(src)]
    assert not bad, f"{path.name}: a checked cell prints CPU-dependent numbers " \
        "(check them in tests/ with a tolerance):\n" + "\n".join(bad)


def test_the_rule_catches_a_training_cell():
    cell = "# NBVAL_CHECK_OUTPUT\nlosses = ed.train(toy, steps=300)\nprint(np.mean(losses))"
    assert problems(cell) == ["trains a model (the loss depends on the BLAS path)"]
    assert problems("# NBVAL_CHECK_OUTPUT\nprint(plan.total_bytes)") == []
    assert problems("t = time.time()\nprint(time.time() - t)") == ["measures time"]
    assert problems("t = time.time()\nprint(f'({time.time() - t:.1f} s elapsed)')") == ["measures time"]


def test_the_tag_and_the_comment_both_mark_a_checked_cell():
    tagged = {"cell_type": "code", "metadata": {"tags": [TAG]}, "source": "print(1)"}
    commented = {"cell_type": "code", "metadata": {}, "source": "# NBVAL_CHECK_OUTPUT\nprint(1)"}
    plain = {"cell_type": "code", "metadata": {"tags": ["hide-input"]}, "source": "print(1)"}
    assert is_checked(tagged) and is_checked(commented) and not is_checked(plain)


def test_nbval_reads_the_tag():
    """The tag is the one nbval maps to checking the output (else nbval-lax would skip the cell)."""
    from nbval.plugin import find_metadata_tags
    assert dict(find_metadata_tags({"tags": [TAG]})) == {"check": True}

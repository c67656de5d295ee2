"""Which stored outputs nbval may compare (README, "Writing lessons").

A cell marked ``# NBVAL_CHECK_OUTPUT`` must print only what every CPU computes alike: counts,
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


def checked_cells(path: Path) -> list[tuple[int, str]]:
    nb = json.loads(path.read_text())
    out = []
    for i, c in enumerate(nb["cells"]):
        src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        if c["cell_type"] == "code" and "NBVAL_CHECK_OUTPUT" in src:
            out.append((i, src))
    return out


def problems(src: str) -> list[str]:
    """Why a checked cell's output may differ between CPUs (a time, even one that
    tests/nbval_sanitize.cfg would mask, belongs in an unchecked cell)."""
    return [why for pattern, why in FORBIDDEN.items() if re.search(pattern, src)]


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_checked_cells_print_only_exact_numbers(path):
    bad = [f"cell {i}: {', '.join(problems(src))}" for i, src in checked_cells(path) if problems(src)]
    assert not bad, f"{path.name}: a # NBVAL_CHECK_OUTPUT cell prints CPU-dependent numbers " \
        "(check them in tests/ with a tolerance):\n" + "\n".join(bad)


def test_the_rule_catches_a_training_cell():
    cell = "# NBVAL_CHECK_OUTPUT\nlosses = ed.train(toy, steps=300)\nprint(np.mean(losses))"
    assert problems(cell) == ["trains a model (the loss depends on the BLAS path)"]
    assert problems("# NBVAL_CHECK_OUTPUT\nprint(plan.total_bytes)") == []
    assert problems("t = time.time()\nprint(time.time() - t)") == ["measures time"]
    assert problems("t = time.time()\nprint(f'({time.time() - t:.1f} s elapsed)')") == ["measures time"]

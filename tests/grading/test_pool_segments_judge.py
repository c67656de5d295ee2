"""Exercise 02, question 4 (SegmentPool): the judge code against the solution, a different correct
pool (full marks) and wrong pools (each loses the check its mistake breaks). Attacks kept as tests."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from memlab.grading.judge import run_local

ROOT = Path(__file__).resolve().parents[2]
NB = nbformat.read(ROOT / "solutions" / "02_pool.ipynb", as_version=4)
CELLS = {c.metadata.get("memlab", {}).get("id"): c for c in NB.cells}
HIDDEN = CELLS["q4_segments_tests"].source.partition("### BEGIN HIDDEN TESTS")[2] \
    .partition("### END HIDDEN TESTS")[0]
ROUND = "ROUND = 512\ndef round_up(n):\n    return max(ROUND, -(-n // ROUND) * ROUND)\n"

# A correct pool written differently (the alternative answer of tests/grading/alternatives): segments
# far apart in the address space (gaps), a dict of blocks by address, merging by looking the
# neighbours up.
_ALTERNATIVE = (Path(__file__).parent / "alternatives" / "02_pool.py").read_text()
OTHER = ROUND + _ALTERNATIVE.split("# %% q4_segments\n", 1)[1]


def solution_source() -> str:
    return ROUND + CELLS["q4_segments"].source


def _ns(src: str) -> dict:
    ns: dict = {}
    exec(src, ns)
    return ns


def judge(src: str, secret: int = 7) -> dict:
    out = run_local(HIDDEN, _ns(src), secret=secret)
    return {name: passed for name, _, passed, _ in out["checks"]}


@pytest.mark.extended  # the judge on every trace twice (about 40 s); the mutants below run in make test
def test_solution_and_another_correct_pool_get_full_marks():
    for src in (solution_source(), OTHER):
        for secret in (1, 2):
            out = run_local(HIDDEN, _ns(src), secret=secret)
            assert len(out["checks"]) == 4 and all(c[2] for c in out["checks"]), out


MUTANTS = {
    # (what to replace in the solution, by what) -> the checks that must fail
    "no merge with the next block": (
        "                    if i + 1 < len(blocks) and not blocks[i + 1][2]:\n"
        "                        b[1] += blocks.pop(i + 1)[1]\n", "", {"split", "random traces:"}),
    "no merge with the previous block": (
        "                    if i > 0 and not blocks[i - 1][2]:\n"
        "                        blocks[i - 1][1] += blocks.pop(i)[1]\n", "", {"split", "random traces:"}),
    "first fit instead of best fit": (
        "            _, addr, start = min(fits)", "            _, addr, start = fits[0]",
        {"random traces:"}),
    "ties to the highest address": (
        "            _, addr, start = min(fits)",
        "            _, addr, start = max(f for f in fits if f[0] == min(fits)[0])",
        {"random traces:"}),
    "never splits": ("        if blocks[i][1] > size:", "        if False:", {"split", "random traces:"}),
    "a segment is always 4096 bytes": ("            seg_size = max(SEGMENT, size)",
                                       "            seg_size = SEGMENT if size <= SEGMENT else size + 512",
                                       {"random traces:"}),
    "empty_cache gives back nothing": (
        "        gone = [s for s, blocks in self.segs.items() if len(blocks) == 1 and not blocks[0][2]]",
        "        gone = []", {"empty_cache"}),
    "peak_allocated never updated": (
        "        self.peak_allocated = max(self.peak_allocated, self.allocated)", "",
        {"random traces: the peaks"}),
}


@pytest.mark.parametrize("case", sorted(MUTANTS))
def test_a_wrong_pool_loses_the_check_its_mistake_breaks(case):
    old, new, failing = MUTANTS[case]
    src = solution_source()
    assert old in src, f"the mutant {case!r} no longer applies to the solution"
    got = judge(src.replace(old, new))
    lost = {name for name, passed in got.items() if not passed}
    assert lost, f"{case}: full marks for a wrong pool"
    for prefix in failing:
        assert any(name.startswith(prefix) for name in lost), (case, got)


def test_a_pool_that_merges_across_segments_fails():
    src = solution_source().replace(
        "                    if i + 1 < len(blocks) and not blocks[i + 1][2]:",
        "                    nxt = self.segs.get(b[0] + b[1])\n"
        "                    if nxt and len(nxt) == 1 and not nxt[0][2]:\n"
        "                        b[1] += self.segs.pop(b[0] + b[1])[0][1]\n"
        "                    if i + 1 < len(blocks) and not blocks[i + 1][2]:")
    got = judge(src)
    assert not got["random traces: segments tiled, blocks chosen by best fit, neighbours merged"]

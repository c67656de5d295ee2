"""Exercise 02, question 4 (SegmentPool): the judge code against the solution, a different correct
pool (full marks) and wrong pools (each loses the check its mistake breaks). Attacks kept as tests."""
from __future__ import annotations

import textwrap
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

# A correct pool written differently: segments far apart in the address space (gaps), a dict of
# blocks by address, merging by looking the neighbours up.
OTHER = ROUND + textwrap.dedent('''
    SEGMENT = 4096

    class SegmentPool:
        def __init__(self):
            self.reserved = self.peak_reserved = self.allocated = self.peak_allocated = 0
            self.block = {}         # address -> [size, in_use, segment start]
            self.seg = {}           # start -> size
            self.next = 10**9

        def allocate(self, n):
            size = round_up(n)
            free = sorted((b[0], a) for a, b in self.block.items() if not b[1] and b[0] >= size)
            if free:
                addr = free[0][1]
            else:
                addr, s = self.next, max(SEGMENT, size)
                self.next += s + 12345 * 512
                self.seg[addr] = s
                self.block[addr] = [s, False, addr]
                self.reserved += s
            b = self.block[addr]
            if b[0] > size:
                self.block[addr + size] = [b[0] - size, False, b[2]]
                b[0] = size
            b[1] = True
            self.allocated += size
            self.peak_reserved = max(self.peak_reserved, self.reserved)
            self.peak_allocated = max(self.peak_allocated, self.allocated)
            return addr

        def free(self, addr):
            b = self.block.get(addr)
            if b is None or not b[1]:
                raise ValueError("not in use")
            b[1] = False
            self.allocated -= b[0]
            nxt = self.block.get(addr + b[0])
            if nxt is not None and not nxt[1] and nxt[2] == b[2]:
                b[0] += self.block.pop(addr + b[0])[0]
            prev = [a for a, c in self.block.items() if a + c[0] == addr and c[2] == b[2]]
            if prev and not self.block[prev[0]][1]:
                self.block[prev[0]][0] += self.block.pop(addr)[0]

        def empty_cache(self):
            gone = {s: n for s, n in self.seg.items() if self.block[s] == [n, False, s]}
            for s, n in gone.items():
                del self.block[s], self.seg[s]
                self.reserved -= n
            return sum(gone.values())

        def segments(self):
            return [(s, [(a, b[0], b[1]) for a, b in sorted(self.block.items()) if b[2] == s])
                    for s in sorted(self.seg)]
''')
def solution_source() -> str:
    return ROUND + CELLS["q4_segments"].source


def _ns(src: str) -> dict:
    ns: dict = {}
    exec(src, ns)
    return ns


def judge(src: str, secret: int = 7) -> dict:
    out = run_local(HIDDEN, _ns(src), secret=secret)
    return {name: passed for name, _, passed, _ in out["checks"]}


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

"""The slide-coverage table (lessons/SLIDES.md) points at lessons and sections that exist."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "lessons" / "SLIDES.md"


def _rows():
    rows = []
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[2] and not set(cells[0]) <= set("- ") and cells[0] not in ("slide", "section"):
            rows.append(cells)
    return rows


def _headings(nb_path: Path) -> set[str]:
    nb = json.loads(nb_path.read_text())
    heads = set()
    for c in nb["cells"]:
        if c["cell_type"] == "markdown":
            for line in "".join(c["source"]).splitlines():
                m = re.match(r"^#{2,3}\s+(.*?)\s*$", line)
                if m:
                    heads.add(m.group(1))
    return heads


ROWS = _rows()
WRITTEN = [r for r in ROWS if not r[2].startswith("planned") and r[2] != "none"]


#: the table's three headings, one per source (named as the lessons name them, never by file)
LECTURE = '## CSE599G1 lecture 7: "Memory Optimization"'
OPENNMT = '## The OpenNMT notes: "Further Memory Optimization"'
SCHEDULING = '## The ENSEEIHT slides: "Memory-aware scheduling"'


def _pages(slide: str) -> set[int]:
    """Pages a row of the lecture's table names: ``p.5``, ``p.6-7``."""
    out: set[int] = set()
    for a, b in re.findall(r"p\.(\d+)(?:-(\d+))?", slide):
        out.update(range(int(a), int(b or a) + 1))
    return out


def test_every_page_of_the_lecture_has_a_row():
    text = TABLE.read_text()
    part = text.split(LECTURE, 1)[1].split(OPENNMT, 1)[0]
    covered: set[int] = set()
    for line in part.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5:
            covered |= _pages(cells[0])
            if cells[2] == "none":
                assert cells[3], f"row {cells[0]} has no lesson and says not why"
    assert set(range(1, 39)) <= covered, sorted(set(range(1, 39)) - covered)


def test_table_has_rows_for_every_source():
    text = TABLE.read_text()
    for heading in (LECTURE, OPENNMT, SCHEDULING):
        assert heading in text
    assert len(ROWS) >= 40


@pytest.mark.parametrize("row", WRITTEN, ids=[f"{r[2]}:{r[3]}" for r in WRITTEN])
def test_named_lesson_and_section_exist(row):
    _, topic, lesson, section, _code = row
    path = ROOT / "lessons" / f"{lesson}.ipynb"
    assert path.exists(), f"SLIDES.md names lesson {lesson!r} for {topic!r}, but {path.name} does not exist"
    assert section in _headings(path), f"{path.name} has no section '## {section}' (for {topic!r})"


def test_every_lesson_is_in_the_table():
    named = {r[2] for r in WRITTEN}
    for nb in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb")):
        if nb.stem.startswith("00_"):
            continue
        assert nb.stem in named, f"{nb.name} covers no row of SLIDES.md"


@pytest.mark.parametrize("row", WRITTEN, ids=[f"{r[2]}:{r[3]}" for r in WRITTEN])
def test_named_code_exists(row):
    code = row[4].strip("`")
    assert code.startswith("memlab/"), f"the row for {row[1]!r} names no code (column 5)"
    assert (ROOT / code).exists(), f"SLIDES.md names {code} for {row[1]!r}, which does not exist"


def _key(title: str) -> str:
    return re.sub(r"[^a-z0-9]", "", title.lower())


def test_every_slide_title_of_the_scheduling_slides_has_a_row():
    """Each slide title of the scheduling slides (its ``#`` headings, and the upper-case ``##`` ones) names a row."""
    seeds = sorted((ROOT.parent / "shared" / "seeds").glob("002_*.txt"))
    if not seeds:
        pytest.skip("the seed text (../shared/seeds/) is not in this checkout")
    part = TABLE.read_text().split(SCHEDULING, 1)[1].split("\n## ", 1)[0]
    slides = [_key(line.split("|")[1]) for line in part.splitlines() if line.startswith("| ")]
    titles = {m.group(2).strip() for m in re.finditer(r"^(#|##) (.+)$", seeds[0].read_text(), re.M)
              if m.group(1) == "#" or m.group(2).strip().isupper()}
    missing = sorted(t for t in titles if not any(_key(t) in s for s in slides))
    assert not missing, f"scheduling slides with no SLIDES.md row: {missing}"

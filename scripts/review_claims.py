"""List, or mark as reviewed, the lesson sentences that compare numbers by hand.

A Markdown cell right under a code cell whose output holds numbers, with a comparative word in it
("most", "only", "below", "2x", ...), states something about those numbers unless a reviewer says
otherwise. Either the sentence moves into the code cell as ``ml.viz.claim(condition, sentence)``,
or a reviewer marks the cell with the reason it is not a claim about the printed numbers (a fact
of the slides with its page, a definition, a claim the next cell asserts):

    python scripts/review_claims.py                      # list every unreviewed cell
    python scripts/review_claims.py lessons/03_static_planning.ipynb 12 "slides p.23: the slide's own numbers"

The mark keeps a hash of the cell's text: editing the cell makes it unreviewed again.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: words and marks that compare, rank, count or characterise numbers
COMPARATIVE = re.compile(
    r"\b(most|least|only|nearly|near|about|around|roughly|approximately|almost|brackets?|below|above|"
    r"more|less|fewer|greater|larger|smaller|bigger|higher|lower|faster|slower|cheaper|exceeds?|"
    r"twice|half|doubles?|triples?|same|equals?|equal to|matches|beats?|best|worst|lowest|highest|"
    r"smallest|largest|goes (?:up|down)|grows?|drops?|falls?|rises?|increases?|decreases?|"
    r"dominates?|majority|a third|a quarter|times)\b|%|\b\d+(?:\.\d+)?\s?[x×]\b|[<>≤≥]",
    re.I)
_CODE = re.compile(r"```[\s\S]*?```|`[^`]*`|<[^>]+>|\]\([^)]*\)")
_NUMBER = re.compile(r"\d")


def _text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def digest(cell: dict) -> str:
    return hashlib.sha1(_text(cell).encode()).hexdigest()[:12]


def _numeric_output(cell: dict) -> bool:
    for out in cell.get("outputs", []):
        parts = [out.get("text", "")] + [v for k, v in out.get("data", {}).items()
                                         if k in ("text/plain", "text/markdown", "text/html")]
        for p in parts:
            if _NUMBER.search("".join(p) if isinstance(p, list) else p):
                return True
    return False


def comparative_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (code, tags and link targets left out) with a comparative word."""
    plain = _CODE.sub(" ", text)
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n\s*\n|\n[-*] ", plain)
            if COMPARATIVE.search(s)]


def candidates(path: Path) -> list[tuple[int, list[str], dict]]:
    """(cell index, comparative sentences, the cell) for each Markdown cell that follows a code cell
    with a numeric output."""
    cells = json.loads(path.read_text())["cells"]
    found = []
    for i in range(1, len(cells)):
        cell, before = cells[i], cells[i - 1]
        if cell["cell_type"] == "markdown" and before["cell_type"] == "code" \
                and _numeric_output(before):
            sentences = comparative_sentences(_text(cell))
            if sentences:
                found.append((i, sentences, cell))
    return found


def reviewed(cell: dict) -> bool:
    mark = cell.get("metadata", {}).get("memlab", {}).get("reviewed", {})
    return bool(mark.get("why", "").strip()) and mark.get("text") == digest(cell)


def unreviewed(path: Path) -> list[tuple[int, list[str]]]:
    return [(i, s) for i, s, cell in candidates(path) if not reviewed(cell)]


def mark(path: Path, index: int, why: str) -> None:
    nb = json.loads(path.read_text())
    cell = nb["cells"][index]
    if cell["cell_type"] != "markdown" or not why.strip():
        sys.exit(f"cell {index} of {path} is not a Markdown cell, or no reason was given")
    cell.setdefault("metadata", {}).setdefault("memlab", {})["reviewed"] = {
        "why": why.strip(), "text": digest(cell)}
    path.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str]) -> int:
    if len(argv) == 3:
        mark(Path(argv[0]), int(argv[1]), argv[2])
        return 0
    lessons = [Path(a) for a in argv] or sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
    left = 0
    for path in lessons:
        for i, sentences in unreviewed(path):
            left += 1
            print(f"{path.name} cell {i}:")
            for s in sentences:
                print("   ", s.replace("\n", " ")[:200])
    print(f"{left} unreviewed cell(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

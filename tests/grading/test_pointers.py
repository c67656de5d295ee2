"""Every file and section a grading message or docs/grading.md points the reader to exists.

Messages name a place as ``FILE, "Section"`` (``docs/instructors.md, "Exercises and grading"``);
docs/grading.md links as ``[text](FILE.md#anchor)``.  A section is a Markdown heading of that file;
an anchor is a heading's GitHub slug.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMED = re.compile(r'((?:docs/)?[\w-]+\.md|README), "([^"]+)"')
LINK = re.compile(r"\]\(([\w./-]+\.md)(?:#([\w-]+))?\)")


def headings(path: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in path.read_text().splitlines()
            if re.match(r"#{1,6} ", line)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _file(name: str) -> Path:
    return ROOT / ("README.md" if name == "README" else name)


def named_places() -> list[tuple[str, str, str]]:
    """``(module, file, section)`` for every place a grading module's strings name."""
    out = []
    for p in sorted((ROOT / "memlab" / "grading").glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out += [(p.name, f, s) for f, s in NAMED.findall(node.value)]
    return out


def test_every_section_a_grading_message_names_exists():
    places = named_places()
    assert ("isolate.py", "docs/instructors.md", "Exercises and grading") in places   # VENV_HINT
    for module, name, section in places:
        path = _file(name)
        assert path.is_file(), f"{module} names {name}, which does not exist"
        assert section in headings(path), f"{module} names {name}, \"{section}\": no such section"


def test_every_link_of_the_grading_docs_leads_to_a_section():
    doc = ROOT / "docs" / "grading.md"
    text = doc.read_text()
    links = LINK.findall(text)
    assert links
    for target, anchor in links:
        path = (doc.parent / target).resolve()
        assert path.is_file(), f"docs/grading.md links {target}, which does not exist"
        if anchor:
            assert anchor in {slug(h) for h in headings(path)}, f"no section #{anchor} in {target}"
    for quoted in re.findall(r'\[instructors\.md\]\([^)]*\), "([^"]+)"', text.replace("\n", " ")):
        assert quoted in (ROOT / "docs" / "instructors.md").read_text().replace("\n", " "), quoted
    # "the README" says nothing of where to look: the README is a table of contents now
    assert not re.search(r"(see|in) the README\b|the README (has|shows)", text)


def test_the_rules_catch_a_missing_section():
    assert NAMED.findall('see (docs/instructors.md, "Grading")') == [("docs/instructors.md", "Grading")]
    assert "Grading" not in headings(ROOT / "docs" / "instructors.md")
    assert slug("Exercises and grading") == "exercises-and-grading"
    assert slug("`memlab grade`") == "memlab-grade"

"""Write docs/modules.md: every module of the library, one line each, from its docstring.

The map says where the code behind any slide or name lives, one hop from the page: the module's
path and the first sentence of its docstring (which cites its slide or paper). ``--check`` exits
1, naming the difference, when docs/modules.md is not what this script writes (the test suite
runs it), so a new, renamed or re-described module updates the page.

Run: ``python scripts/module_map.py`` (writes) or ``python scripts/module_map.py --check``.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "modules.md"

HEAD = """# Every module, one line each

Written by `scripts/module_map.py` from each module's docstring (do not edit by hand: run the
script). The layers, and which may import which, are in [api.md](api.md#architecture-layers-that-import-one-way);
the slides and the lesson each module serves, in the lessons' `SLIDES.md`.
"""


def first_sentence(doc: str) -> str:
    """The docstring's first sentence (up to a full stop that ends a word, or its first paragraph)."""
    para = " ".join(doc.strip().split("\n\n")[0].split())
    m = re.search(r"(?<![A-Z]\.)(?<!\be\.g)(?<!\bi\.e)(?<!\bp)(?<!\bet al)(?<!\bvs)\.(\s|$)", para)
    line = para[: m.start() + 1] if m else para
    line = re.sub(r":(?:func|mod|class|meth|data|attr):`~?([^`]+)`", r"`\1`", line)
    return line.replace("``", "`").replace("|", "\\|")


def rows() -> list[tuple[str, str, str]]:
    """(package, module path, first sentence) for every module under memlab/, in path order."""
    out = []
    for path in sorted((ROOT / "memlab").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if "__pycache__" in rel:
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        package = path.parent.relative_to(ROOT).as_posix()
        out.append((package, rel, first_sentence(doc) if doc else ""))
    return sorted(out, key=lambda r: (r[0], r[1]))


def page() -> str:
    """The whole page, one section per package."""
    text, package = [HEAD], None
    for pkg, rel, line in rows():
        if pkg != package:
            package = pkg
            text.append(f"\n## `{pkg}/`\n\n| module | what it is |\n| --- | --- |")
        text.append(f"| `{rel}` | {line} |")
    return "\n".join(text) + "\n"


def main(argv: list[str]) -> int:
    new = page()
    missing = [rel for _, rel, line in rows() if not line]
    if missing:
        print("modules without a docstring:", ", ".join(missing))
        return 1
    if "--check" in argv:
        old = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if old != new:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python scripts/module_map.py")
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)} ({len(rows())} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

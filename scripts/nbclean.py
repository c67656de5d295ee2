"""git's clean filter for the course notebooks of a student copy (``make lab`` installs it).

    python3 scripts/nbclean.py --install     # git config filter.memlab-notebook.clean ...
    python3 scripts/nbclean.py --refresh     # before git pull (make update does both)

A lesson run and saved in JupyterLab differs from the course's copy only in what running
changes: outputs, execution counts and timestamps, widget model ids, widget state. git would then
call it modified, and ``git pull`` of a course update to that lesson would stop ("Your local
changes would be overwritten by merge"). This filter tells git what a notebook holds for the
purpose of changes: when its cells' types, sources and tags are those of the version git has
(the index), that version; otherwise the notebook as it is. So a lesson only run counts as
untouched, and a pull updates it; a lesson whose code or text the student changed counts as
changed, as it should. Whatever goes wrong, the notebook passes through unchanged.

git takes a file whose size changed for modified without running the filter, so ``--refresh``
(``make update``, before ``git pull``) has git re-read each notebook that the filter finds
unchanged (``git add`` of it: its content in the index stays the course's, only the file's
recorded size and time are renewed); a notebook the student changed is left alone.
"""
from __future__ import annotations

import json
import subprocess
import sys

#: cell metadata that running or viewing changes (JupyterLab, nbclient)
VOLATILE = ("execution", "scrolled", "collapsed", "jupyter", "trusted", "ExecuteTime")


def content(nb: dict) -> list[tuple]:
    """What a change to the notebook means: each cell's type, source and lasting metadata."""
    def text(src) -> str:
        return "".join(src) if isinstance(src, list) else src
    return [(c.get("cell_type"), text(c.get("source", "")),
             json.dumps({k: v for k, v in c.get("metadata", {}).items() if k not in VOLATILE},
                        sort_keys=True))
            for c in nb.get("cells", [])]


def clean(work: bytes, indexed: bytes | None) -> bytes:
    """The index's version when ``work`` differs from it only in what running changes, else
    ``work``."""
    if indexed is None:
        return work
    try:
        if content(json.loads(work)) == content(json.loads(indexed)):
            return indexed
    except (ValueError, AttributeError, TypeError):
        pass
    return work


def indexed_version(path: str) -> bytes | None:
    """The notebook as git's index holds it (None for a new file)."""
    try:
        r = subprocess.run(["git", "cat-file", "blob", f":{path}"], capture_output=True,
                           timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


FILTER = "memlab-notebook"


def install() -> int:
    """Name this filter in the checkout's git config, where ``.gitattributes`` asks for it (a
    student copy of the course); elsewhere nothing."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=60)
        if top.returncode != 0:
            return 0
        attributes = f"{top.stdout.strip()}/.gitattributes"
        with open(attributes, encoding="utf-8") as f:
            if f"filter={FILTER}" not in f.read():
                return 0
    except (OSError, subprocess.SubprocessError):
        return 0
    subprocess.run(["git", "config", f"filter.{FILTER}.clean", "python3 scripts/nbclean.py %f"],
                   check=False, timeout=60)
    return 0


def refresh() -> int:
    """Have git re-read every notebook it takes for modified that the filter finds unchanged."""
    listed = subprocess.run(["git", "ls-files", "-m", "-z", "--", "*.ipynb"], capture_output=True,
                            timeout=300)
    if listed.returncode != 0:
        return 0
    same = []
    for path in (p for p in listed.stdout.decode().split("\0") if p):
        indexed = indexed_version(path)
        try:
            with open(path, "rb") as f:
                work = f.read()
        except OSError:
            continue
        if indexed is not None and clean(work, indexed) == indexed:
            same.append(path)
    if same:
        subprocess.run(["git", "add", "--", *same], check=False, timeout=300)
    return 0


def main(argv: list[str]) -> int:
    if argv[1:] == ["--install"]:
        return install()
    if argv[1:] == ["--refresh"]:
        return refresh()
    work = sys.stdin.buffer.read()
    out = work
    try:
        out = clean(work, indexed_version(argv[1])) if len(argv) > 1 else work
    except Exception:  # noqa: BLE001  (a filter must never lose or block a file)
        out = work
    sys.stdout.buffer.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

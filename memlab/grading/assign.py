"""``memlab assign``: make the student notebooks (``exercises/``) from the instructor's (``solutions/``)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GradingError
from .notebook import edited_since_generated, exercise_bytes, load_solution, write_bytes_atomic


@dataclass
class AssignReport:
    """What :func:`assign` did (or, with ``check=True``, found)."""
    written: list[Path] = field(default_factory=list)      # created or changed
    unchanged: list[Path] = field(default_factory=list)    # already byte-identical
    problems: list[str] = field(default_factory=list)      # check mode: what differs

    @property
    def ok(self) -> bool:
        return not self.problems


def solution_files(sources) -> list[Path]:
    """The ``.ipynb`` files named by *sources* (files, or directories whose notebooks are taken)."""
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    files: list[Path] = []
    for s in sources:
        p = Path(s)
        if p.is_dir():
            files.extend(sorted(f for f in p.glob("*.ipynb") if not f.name.startswith(".")))
        elif p.is_file():
            files.append(p)
        else:
            raise GradingError(f"{p}: no such solution notebook or directory")
    names: dict[str, Path] = {}
    for f in files:
        if f.name in names and names[f.name].resolve() != f.resolve():
            raise GradingError(f"two solution notebooks would write the same exercise {f.name}: "
                               f"{names[f.name]} and {f}")
        names[f.name] = f
    if not files:
        raise GradingError(f"no solution notebooks (*.ipynb) in {', '.join(map(str, sources))}")
    return list(dict.fromkeys(files))


def assign(sources="solutions", out="exercises", force: bool = False, check: bool = False) -> AssignReport:
    """Write ``out/X.ipynb`` for every solution notebook ``X.ipynb`` in *sources*.

    All solutions are validated before anything is written.  An existing exercise whose cells a student
    has edited (its content no longer matches the hash recorded when it was generated) is not
    overwritten unless *force*: :class:`GradingError` names every such file.  With ``check=True``
    nothing is written; the report's ``problems`` lists each exercise that is missing, differs from
    what would be generated, or has no solution.
    """
    out = Path(out)
    files = solution_files(sources)
    wanted = {out / f.name: exercise_bytes(load_solution(f)) for f in files}
    report = AssignReport()
    if check:
        for path, data in wanted.items():
            if not path.exists():
                report.problems.append(f"{path}: missing; run 'memlab assign' to generate it")
            elif path.read_bytes() != data:
                report.problems.append(f"{path}: differs from what 'memlab assign' generates from its "
                                       "solution (answers written in it, or a solution changed since)")
            else:
                report.unchanged.append(path)
        if out.is_dir():
            for extra in sorted(out.glob("*.ipynb")):
                if extra not in wanted and not extra.name.startswith("."):
                    report.problems.append(f"{extra}: an exercise with no solution notebook among the sources")
        return report
    refused = []
    for path, data in wanted.items():
        if path.exists() and not force and path.read_bytes() != data:
            why = edited_since_generated(path)
            if why:
                refused.append(f"{path}: {why}")
    if refused:
        raise GradingError("refusing to overwrite exercise notebook(s) edited since they were generated "
                           "(they may hold a student's answers, which would be lost); write the new ones "
                           "elsewhere with --out DIR, or move these away first:\n  " + "\n  ".join(refused))
    for path, data in wanted.items():
        if path.exists() and path.read_bytes() == data:
            report.unchanged.append(path)
            continue
        write_bytes_atomic(path, data)
        report.written.append(path)
    return report

"""A grade's inputs, read and checked before any student code runs.

The submission is a regular file, never followed through a link, of at most
:data:`MAX_NOTEBOOK_BYTES`; the solution is the one the caller names (never looked for); the
notebook's metadata must name the solution's assignment.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import GradingError
from .notebook import KEY, Solution, cell_meta, notebook_assignment, parse_solution, reads_notebook


def find_solution(notebook: Path, assignment: str | None = None, solution=None, *,
                  official: bool = False) -> Path:
    """The solution notebook to grade *notebook* with.

    *solution* is a notebook, or a directory holding ``<assignment>.ipynb`` (then *assignment*, given
    by the caller, is required).  It is never looked for: not beside the submission, not in
    ``solutions/`` of the current directory (a student working in a copy of the course repository
    would otherwise run the hidden tests on demand).  Raises :class:`GradingError` when there is none.
    """
    if solution is None:
        if official:
            raise GradingError(f"{notebook}: an official grade (--json) needs --solution: the solution "
                               "notebook, or a solutions directory with --assignment NAME; the notebook "
                               "itself never chooses its solution")
        raise GradingError(f"{notebook}: no solution given; grading runs the instructors' hidden tests, "
                           "so it needs --solution NOTEBOOK (or --solution DIR --assignment NAME) and never "
                           "looks for one by itself. To check your work against the checks the notebook "
                           f"shows, run: memlab check-work {notebook}")
    p = Path(solution)
    if p.is_dir():
        if assignment is None:
            raise GradingError(f"the solution {p} is a directory: pass --assignment NAME to grade with "
                               f"{p}/NAME.ipynb, or pass the solution notebook itself")
        p = p / f"{assignment}.ipynb"
    if not p.is_file():
        raise GradingError(f"{notebook}: the solution notebook {p} does not exist")
    return p


#: The largest notebook graded, in bytes (a notebook with figures is a few MB).
MAX_NOTEBOOK_BYTES = 32 << 20


def read_submission(path: Path) -> bytes:
    """The submitted notebook's bytes: a regular file, opened without following a symbolic link
    (a link to the solution, ``/dev/zero`` or a FIFO is refused, never read) and at most
    ``MAX_NOTEBOOK_BYTES``."""
    import os
    import stat
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise GradingError(f"{path}: no such notebook") from None
    except OSError as e:
        if os.path.islink(path):
            raise GradingError(f"{path}: is a symbolic link; submit the notebook file itself") from None
        raise GradingError(f"{path}: cannot read the notebook: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise GradingError(f"{path}: is a directory, not a notebook")
        if not stat.S_ISREG(st.st_mode):
            raise GradingError(f"{path}: is not a regular file (a device, a FIFO or a socket); "
                               "submit the notebook file itself")
        if st.st_size > MAX_NOTEBOOK_BYTES:
            raise GradingError(f"{path}: is {st.st_size / 2**20:.1f} MB, more than the "
                               f"{MAX_NOTEBOOK_BYTES >> 20} MB a notebook may have; clear its outputs")
        chunks, size = [], 0
        while size <= MAX_NOTEBOOK_BYTES:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
            size += len(b)
        if size > MAX_NOTEBOOK_BYTES:
            raise GradingError(f"{path}: more than the {MAX_NOTEBOOK_BYTES >> 20} MB a notebook may have")
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if not data.strip():
        raise GradingError(f"{path}: the notebook is an empty file")
    return data


def escape_surrogates(nb) -> int:
    """Replace lone surrogates (``"\\ud800"`` in the JSON: not text any encoder accepts) in every
    string of *nb*, in place, by U+FFFD; returns how many were replaced, so results.json can
    always be written."""
    import re
    lone = re.compile("[\ud800-\udfff]")
    count = 0

    def fix(x):
        nonlocal count
        if isinstance(x, str):
            y, n = lone.subn("\ufffd", x)
            count += n
            return y
        if isinstance(x, dict):
            for k in list(x):
                v = fix(x[k])
                k2 = fix(k)
                if k2 != k:
                    del x[k]
                x[k2] = v
            return x
        if isinstance(x, list):
            x[:] = [fix(v) for v in x]
        return x
    fix(nb)
    return count


def read_file(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise GradingError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise GradingError(f"{path}: is a directory, not a {what}") from None
    except OSError as e:
        raise GradingError(f"{path}: cannot read the {what}: {e.strerror or e}") from None
    if not data.strip():
        raise GradingError(f"{path}: the {what} is an empty file")
    return data


def parse_notebook(data: bytes, path: Path):
    try:
        return reads_notebook(data.decode("utf-8"), path)
    except UnicodeDecodeError as e:
        raise GradingError(f"{path}: not a valid notebook (not UTF-8: {e})") from None


def read_solution(path: Path) -> Solution:
    """Read and validate a solution notebook (once: it stays in memory while the kernel runs)."""
    return parse_solution(parse_notebook(read_file(path, "solution notebook"), path), path)


def load(notebook, solution=None, assignment: str | None = None, official: bool = False,
         preloaded: tuple[Path, Solution] | None = None):
    """Read and check the inputs: returns ``(notebook bytes, notebook, solution path, Solution)``.

    The solution's file is read once, here (or by the caller: *preloaded*), before any kernel starts.
    """
    path = Path(notebook)
    sol_path, sol = preloaded if preloaded is not None else (None, None)
    if sol is None and (solution is not None or official):
        sol_path = find_solution(path, assignment, solution, official=official)
        sol = read_solution(sol_path)
    raw = read_submission(path)
    nb = parse_notebook(raw, path)
    meta = notebook_assignment(nb, str(path))
    if meta is None and not any(cell_meta(c) for c in nb.cells):
        raise GradingError(f"{path}: the notebook has no memlab metadata (neither nb.metadata['{KEY}'] "
                           "nor any cell's); it is not a memlab exercise")
    if sol is None:
        sol_path = find_solution(path, meta, None)
        sol = read_solution(sol_path)
    if assignment is not None and assignment != sol.assignment:
        raise GradingError(f"--assignment is {assignment!r} but the solution {sol_path} is assignment "
                           f"{sol.assignment!r}")
    if meta is not None and meta != sol.assignment:
        raise GradingError(f"{path}: the notebook says it is assignment {meta!r} but it is graded with "
                           f"the solution {sol_path}, assignment {sol.assignment!r}")
    return raw, nb, sol_path, sol

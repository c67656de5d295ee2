"""The code the grader sends to the kernel around student cells and tests (see :mod:`.inkernel`).

A tests cell passes when the kernel's own ``execute_reply`` for the code that ran it has status
``ok``; the code is :func:`test_code`, which raises in the kernel when the tests fail or when
anything the tests rely on was replaced.  Tests run with ``store_history=False``.
"""
from __future__ import annotations

from pathlib import Path

from .notebook import TestCell

#: inkernel.py, then inkernel_extra.py: one source, run in one fresh namespace in the kernel
SOURCE = "\n\n".join(Path(__file__).with_name(name).read_text(encoding="utf-8")
                      for name in ("inkernel.py", "inkernel_extra.py"))

#: Finds the guard without a name a student could rebind: the first class of that name ever made.
FIND = '[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "_MemlabGuard"][0]'

TAMPERED = "MemlabTampered"
FAILED = "MemlabTestFailed"
CHECKS = "MemlabChecks"


def setup_code(rlimits: dict[str, int] | None = None, forbid: tuple[str, ...] = ()) -> str:
    """Defines the guard, lowers the kernel's *rlimits* (``{"RLIMIT_AS": bytes}``: its children
    inherit them, and an unprivileged kernel cannot raise them again) and records the originals;
    runs before any student cell.  The library functions named in *forbid* refuse to run while
    student cells run (the solution's ``forbid`` metadata), so no answer can tabulate them."""
    return ("(lambda g: (exec(compile(g['__source__'], '<memlab guard>', 'exec'), g), "
            f"g['_MemlabGuard'].setup(get_ipython(), {dict(rlimits or {})!r}, {tuple(forbid)!r}), "
            "__import__('sys').__dict__.setdefault("
            "'_memlab_guard_keep', g)))({'__name__': '_memlab_guard', '__file__': '<memlab guard>', "
            f"'__source__': {SOURCE!r}}})\n")


def check_code(what: str) -> str:
    """Restores what the previous cell replaced; its reply is an error naming it, if anything was."""
    return f"{FIND}.check({what!r}, rearm=True)\n"


def forget_code() -> str:
    """Drops what could quote a tests cell after it ran (see ``_MemlabGuard.forget``)."""
    return f"{FIND}.forget()\n"


def test_name(test: TestCell) -> str:
    """The file name the tests cell's code is compiled under (its lines are looked up by it)."""
    return f"<memlab test {test.id}>"


def stage_code(test: TestCell) -> str:
    """Hands the kernel one tests cell's source (silently), ahead of :func:`test_code`."""
    return f"{FIND}.stage({test_name(test)!r}, {test.source!r}, {sorted(test.hidden)!r})\n"


def test_code(test: TestCell) -> str:
    """Runs the staged tests cell in a copy of the user namespace; raises in the kernel if it fails."""
    return f"{FIND}.run_test({test_name(test)!r})\n"

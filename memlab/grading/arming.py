"""The refusals in force while the kernel serves one request (kernel side, like :mod:`.callserver`).

A request names the library functions its call may not use (the exercise's ``forbid`` list and its
hidden tests' ``FORBID``); :class:`Armed` refuses them with :func:`memlab.testing.forbid` for the
call, and lifts them after it.  A target whose module is not loaded yet is refused as soon as that
module is imported (importing it only to refuse it would cost the import on every grade:
matplotlib, for a target in memlab.viz).  This runs in the student's process, so it stops only an
answer that plainly calls the library; the judge decides nothing from it.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any

import memlab.testing as _testing

#: The kernel side's own refusals, made from the library's function when this module loads (before
#: any student cell), so that rebinding or editing ``memlab.testing.forbid`` later changes nothing
#: here (and is reported: :mod:`.watch`).
forbid = contextlib.contextmanager(_testing.forbid.__wrapped__)


def module_of(target: str) -> str:
    """The module a forbidden name lives in, without importing anything: the parts before the first
    class name (capitalised), else all but the last (``memlab.viz.training.plan_patterns`` ->
    ``memlab.viz.training``, ``memlab.execute.runner.Runner.run`` -> ``memlab.execute.runner``)."""
    parts = target.split(".")
    k = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts) - 1)
    return ".".join(parts[:max(k, 1)])


class _ArmOnImport:
    """A meta-path finder that, when one of the modules it waits for is imported, refuses that
    module's targets right after the module ran."""

    def __init__(self, armed: "Armed", waiting: dict[str, tuple[str, ...]]) -> None:
        self.armed, self.waiting = armed, dict(waiting)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.waiting:
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run, targets, armed = spec.loader.exec_module, self.waiting.pop(name), self.armed

        def exec_module(module: Any) -> None:
            run(module)
            armed.enter(targets)
        spec.loader.exec_module = exec_module
        return spec


class Armed:
    """The refusals of the request being served: the targets, the :func:`forbid` contexts entered,
    and the import hook waiting for modules not loaded yet."""

    def __init__(self) -> None:
        self.targets: tuple[str, ...] = ()
        self.ctxs: list = []
        self.hook: _ArmOnImport | None = None

    def arm(self, targets: tuple[str, ...]) -> None:
        """Refuse *targets* (dotted names) from now on, instead of what was refused before."""
        if targets == self.targets:
            return
        self.disarm()
        self.targets = targets
        now = tuple(t for t in targets if module_of(t) in sys.modules)
        later: dict[str, tuple[str, ...]] = {}
        for t in targets:
            if module_of(t) not in sys.modules:
                later[module_of(t)] = later.get(module_of(t), ()) + (t,)
        if now:
            self.enter(now)
        if later:
            self.hook = _ArmOnImport(self, later)
            sys.meta_path.insert(0, self.hook)

    def enter(self, targets: tuple[str, ...]) -> None:
        ctx = forbid(*targets)
        ctx.__enter__()
        self.ctxs.append(ctx)

    def disarm(self) -> None:
        """Lift every refusal (and stop waiting for imports)."""
        ctxs, self.ctxs, self.targets = self.ctxs, [], ()
        hook, self.hook = self.hook, None
        if hook is not None and hook in sys.meta_path:
            sys.meta_path.remove(hook)
        for ctx in reversed(ctxs):
            try:
                ctx.__exit__(None, None, None)
            except Exception:  # noqa: BLE001
                pass

"""The grader's code that runs *inside* the student's kernel (sent as text; the grader never imports it).

:mod:`memlab.grading.guard` sends this file's source once, before any student cell, in a fresh
namespace.  It defines :class:`_MemlabGuard`, found later through ``object.__subclasses__()`` (so no
name in the user namespace or in ``builtins`` leads to it) and:

* records every public attribute of the modules the tests use (``builtins``, numpy, numpy.testing,
  numpy.random, numpy.linalg, IPython.display, every loaded ``memlab`` module, the classes memlab
  defines), the ``sys.modules`` entries of those modules, ``sys.meta_path``, and the methods of
  IPython's shell and kernel that produce a cell's ``execute_reply``;
* :meth:`_MemlabGuard.check` restores anything replaced or deleted since and raises
  :class:`MemlabTampered` naming it, so the cell's ``execute_reply`` has status ``error``;
* :meth:`_MemlabGuard.run_test` runs one tests cell in a *copy* of the user namespace (names a tests
  cell defines never reach the student's namespace or a later tests cell), with the real builtins,
  and raises :class:`MemlabTestFailed` with feedback that never quotes hidden lines.  The grader
  reads the verdict from the kernel's ``execute_reply`` status, never from printed or displayed output;
* :meth:`_MemlabGuard.forget` removes what could leak the tests' source afterwards (IPython's
  linecache entries, ``sys.last_traceback`` and friends).

This is defence in depth, not a sandbox: the kernel is the student's process.  What keeps the
solution and results.json safe is :mod:`memlab.grading.isolate` (another user, a private directory).
"""
import builtins as _b
import importlib as _importlib
import linecache as _linecache
import sys as _sys
import traceback as _tb

_WATCHED = ("builtins", "numpy", "numpy.testing", "numpy.random", "numpy.linalg", "IPython.display",
            "memlab", "memlab.testing")
_PRIVATE_BUILTINS = ("__import__", "__build_class__")
_KERNEL_OWNED = ("input",)       # ipykernel sets builtins.input anew for every execution
# Originals, taken before any student code runs; the restore below uses nothing else.
_setattr, _delattr, _isinstance, _type, _len, _sorted = _b.setattr, _b.delattr, _b.isinstance, _b.type, \
    _b.len, _b.sorted
_exec, _compile, _dict, _vars, _str, _list = _b.exec, _b.compile, _b.dict, _b.vars, _b.str, _b.list
_BaseException, _KeyboardInterrupt, _AssertionError = _b.BaseException, _b.KeyboardInterrupt, \
    _b.AssertionError
_callable, _getattr, _hasattr, _ModuleType = _b.callable, _b.getattr, _b.hasattr, _type(_sys)
_print = _b.print


class MemlabTampered(Exception):
    """Raised by the guard: the answers replaced what the tests rely on."""


class MemlabTestFailed(Exception):
    """Raised by :meth:`_MemlabGuard.run_test` when the tests cell failed; the message is the feedback."""


def _public(name):
    return not name.startswith("_")


class _MemlabGuard:
    """The snapshot and its checks (see the module docstring)."""
    modules = {}        # module name -> (module, its dict, {public name: value})
    classes = []        # (label, class, {name: value})
    instances = []      # (label, object, set of class function names, set of instance keys at start)
    meta_path = []
    seen_ids = set()
    staged = {}         # tests cell name -> (source, hidden line numbers), until it runs
    shell = None

    @classmethod
    def setup(cls, shell, rlimits=None):
        """Lower the kernel's *rlimits*, import the watched modules and record the originals."""
        import resource
        for name, value in (rlimits or {}).items():
            which = getattr(resource, name)
            hard = resource.getrlimit(which)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
        for name in _WATCHED:
            _importlib.import_module(name)
        cls.shell = shell
        # exit() and quit() would stop the kernel a moment after the cell (ipykernel's ask_exit):
        # while grading they only say they were ignored, so the other answers are still graded.
        shell.ask_exit = _ignore_exit
        cls.meta_path = _list(_sys.meta_path)
        cls._snap_new_modules()
        kernel = _getattr(shell, "kernel", None)
        for obj, label in ((shell, "the IPython shell"), (kernel, "the kernel")):
            if obj is None:
                continue
            funcs = set()
            for k in _type(obj).__mro__:
                if (k.__module__ or "").split(".")[0] in ("IPython", "ipykernel"):
                    cls._snap_class(k.__module__ + "." + k.__qualname__, k, callables_only=True)
                    funcs.update(n for n, v in _vars(k).items() if _callable(v))
            cls.instances.append((label, obj, funcs, set(_vars(obj))))
        ExecutionResult = _importlib.import_module("IPython.core.interactiveshell").ExecutionResult
        cls._snap_class("IPython.core.interactiveshell.ExecutionResult", ExecutionResult, True)

    @classmethod
    def _snap_class(cls, label, k, callables_only=False):
        if id(k) in cls.seen_ids:
            return
        cls.seen_ids.add(id(k))
        cls.classes.append((label, k, {n: v for n, v in _vars(k).items()
                                       if not callables_only or _callable(v)}, callables_only))

    @classmethod
    def _snap_new_modules(cls):
        for name, mod in _list(_sys.modules.items()):
            if name in cls.modules or not _isinstance(mod, _ModuleType):
                continue
            if not (name in _WATCHED or name.startswith("memlab.")) or name.startswith(("memlab.grading",
                                                                                       "memlab.cli")):
                continue
            d = _vars(mod)
            keep = {k: v for k, v in d.items() if (_public(k) or (name == "builtins" and k in _PRIVATE_BUILTINS))
                    and not (name == "builtins" and k in _KERNEL_OWNED)}
            cls.modules[name] = (mod, d, keep)
            if name.startswith("memlab"):
                for v in keep.values():
                    if _isinstance(v, _type) and (v.__module__ or "").startswith("memlab"):
                        cls._snap_class(v.__module__ + "." + v.__qualname__, v)

    @classmethod
    def restore(cls):
        """Put back everything replaced since :meth:`setup`; returns the names of what was changed."""
        changed = []
        builtins_entry = cls.modules.get("builtins")
        ordered = ([("builtins", builtins_entry)] if builtins_entry else []) + \
            [(n, e) for n, e in cls.modules.items() if n != "builtins"]
        for name, (mod, d, keep) in ordered:
            if _sys.modules.get(name) is not mod:
                _sys.modules[name] = mod
                changed.append(f"sys.modules[{name!r}]")
            for k, v in keep.items():
                if k not in d or d[k] is not v:
                    if not (k in d and _isinstance(d[k], _ModuleType) and _isinstance(v, _ModuleType)
                            and d[k] is _sys.modules.get(v.__name__)):
                        changed.append(f"{name}.{k}")
                    d[k] = v
        for label, k, keep, callables_only in cls.classes:
            now = _vars(k)
            for n, v in keep.items():
                if n not in now or now[n] is not v:
                    _setattr(k, n, v)
                    changed.append(f"{label}.{n}")
            for n in [n for n, v in now.items() if n not in keep and (not callables_only or _callable(v))]:
                _delattr(k, n)
                changed.append(f"{label}.{n}")
        for label, obj, funcs, start in cls.instances:
            d = _vars(obj)
            for n in [n for n in d if n in funcs and n not in start]:
                del d[n]
                changed.append(f"{label}'s {n}")
        if _sys.meta_path != cls.meta_path or _len(_sys.meta_path) != _len(cls.meta_path):
            _sys.meta_path[:] = cls.meta_path
            changed.append("sys.meta_path")
        return changed

    @classmethod
    def check(cls, when="this cell"):
        """Restore; raise :class:`MemlabTampered` naming what *when* replaced (if anything)."""
        changed = cls.restore()
        cls._snap_new_modules()
        if changed:
            shown = ", ".join(_sorted(set(changed))[:12]) + (" ..." if _len(set(changed)) > 12 else "")
            raise MemlabTampered(f"{when} replaced what the tests rely on: {shown}") from None

    @classmethod
    def forget(cls):
        """Drop what could quote the tests' source later: tracebacks, IPython's cached cell sources."""
        for k in ("last_type", "last_value", "last_traceback", "last_exc"):
            if _hasattr(_sys, k):
                _setattr(_sys, k, None)
        for k in _list(_linecache.cache):
            entry = _linecache.cache.get(k)
            lines = entry[2] if _isinstance(entry, tuple) and _len(entry) > 2 else []
            if any("_MemlabGuard" in line for line in lines):
                del _linecache.cache[k]
        if cls.shell is not None and _hasattr(cls.shell, "_last_traceback"):
            cls.shell._last_traceback = None

    @classmethod
    def stage(cls, name, source, hidden):
        """Keep a tests cell's source until :meth:`run_test`, so that the code that runs the tests
        (which student code can see while it runs) does not hold it; forget this cell's text."""
        cls.staged[name] = (source, hidden)
        cls.forget()

    @classmethod
    def run_test(cls, name):
        """Run the staged tests cell *name*; raise :class:`MemlabTestFailed` (feedback as message) if it fails.

        Only the compiled code and the visible lines (for feedback) are kept while the tests run.
        """
        cls.check("an earlier cell")
        source, hidden = cls.staged.pop(name)
        code = _compile(source, name, "exec")
        visible = [line if i not in hidden else "" for i, line in enumerate(source.split("\n"), 1)]
        del source
        ns = _dict(cls.shell.user_ns) if cls.shell is not None else _dict(_vars(_sys.modules["__main__"]))
        ns["__builtins__"] = _b
        ns["__name__"] = "__main__"
        message = None
        try:
            _exec(code, ns)
        except _BaseException as e:  # noqa: BLE001  (every failure is a verdict)
            message = _feedback(e, name, visible, hidden)
        finally:
            ns.clear()
            cls.forget()
        cls.check("the answers, while the tests ran,")
        if message is not None:
            raise MemlabTestFailed(message) from None


def _ignore_exit():
    _print("memlab grader: exit() and quit() are ignored while grading; the kernel keeps running",
           file=_sys.stderr)


def _feedback(e, name, lines, hidden):
    """What a student may see of a failed test: the exception, and visible test lines only."""
    frames = _tb.extract_tb(e.__traceback__)
    mine = [f for f in frames if f.filename == name]
    where_hidden = any(f.lineno in hidden for f in mine)
    try:
        what = "".join(_tb.format_exception_only(_type(e), e)).strip()
    except _BaseException:  # noqa: BLE001  (a __str__ that raises)
        what = _type(e).__name__
    what = what[:2000] + (" ... [clipped]" if _len(what) > 2000 else "")
    if _isinstance(e, _KeyboardInterrupt):
        what = "KeyboardInterrupt (the time limit passed)"
    if where_hidden:
        return "a hidden test failed: " + what

    def src(f):
        return lines[f.lineno - 1].strip() if f.lineno and 0 < f.lineno <= _len(lines) else ""
    msg = what
    if _isinstance(e, _AssertionError) and not _str(e) and mine:
        msg = "assertion failed: " + src(mine[-1])
    if mine:
        msg += "\n  at test line %d: %s" % (mine[-1].lineno, src(mine[-1]))
    last = max((i for i, f in enumerate(frames) if f.filename == name), default=-1)
    theirs = [f for f in frames[last + 1:] if f.filename != __file__]
    if theirs:
        msg += "\n  in your code:"
        for f in theirs[-4:]:
            msg += "\n    %s, line %s: %s" % (f.name, f.lineno, (f.line or "").strip()[:200])
    return msg

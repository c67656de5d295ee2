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

The watched functions' insides and the feedback rules live in ``inkernel_extra.py``, sent with this
file as one source.  This is defence in depth, not a sandbox: the kernel is the student's process.  What keeps the
solution and results.json safe is :mod:`memlab.grading.isolate` (another user, a private directory).
"""
import builtins as _b
import importlib as _importlib
import json as _json
import secrets as _secrets
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
_dumps, _token_hex, _float, _min, _max = _json.dumps, _secrets.token_hex, _b.float, _b.min, _b.max
class MemlabTampered(Exception):
    """Raised by the guard: the answers replaced what the tests rely on."""


class MemlabTestFailed(Exception):
    """Raised by :meth:`_MemlabGuard.run_test` when the tests cell failed; the message is the feedback."""


class MemlabChecks(Exception):
    """Raised by :meth:`_MemlabGuard.run_test` for a tests cell made of ``memlab.testing.check``
    blocks: the message is JSON, ``{"checks": [[name, points, passed, feedback, hidden], ...], "error": ...}``
    (``error``: the feedback of an exception raised outside every check, or null)."""


def _public(name):
    return not name.startswith("_")


class _MemlabGuard:
    """The snapshot and its checks (see the module docstring)."""
    modules = {}        # module name -> (module, its dict, {public name: value})
    classes = []        # (label, class, {name: value})
    instances = []      # (label, object, set of class function names, set of instance keys at start)
    functions = {}      # id -> (label, function, _inside(function)): their insides are watched too
    meta_path = []
    seen_ids = set()
    staged = {}         # tests cell name -> (source, hidden line numbers), until it runs
    recording = None    # while a tests cell runs: (its code's file name, visible lines, hidden, checks)
    shell = None

    @classmethod
    def setup(cls, shell, rlimits=None, forbid=()):
        """Lower the kernel's *rlimits*, import the watched modules and record the originals; then
        refuse the library functions named in *forbid* while student cells run (see :meth:`arm`)."""
        import resource
        for name, value in (rlimits or {}).items():
            which = getattr(resource, name)
            hard = resource.getrlimit(which)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
        for name in _WATCHED:
            _importlib.import_module(name)
        global _LIBRARY_DIRS
        _LIBRARY_DIRS = _library_dirs()
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
        cls.answer_forbid = tuple(forbid)
        if forbid:
            # Load every module of the forbidden functions' packages first, so that none imports a
            # refusing stand-in while armed (it would keep it).
            import pkgutil
            for target in forbid:
                parts = target.split(".")
                try:
                    package = _importlib.import_module(".".join(parts[:2]))
                except ImportError:
                    continue
                if not _hasattr(package, "__path__"):
                    continue
                for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                    _importlib.import_module(info.name)
            cls._snap_new_modules()
        cls.arm()

    armed = None            # memlab.testing.forbid's context while student cells run
    answer_forbid = ()

    @classmethod
    def arm(cls):
        """From now until :meth:`disarm`, the library functions the exercise forbids refuse to run."""
        if cls.answer_forbid and cls.armed is None:
            testing = _importlib.import_module("memlab.testing")
            before = [testing._resolve(t)[2] for t in cls.answer_forbid]
            ctx = testing.forbid(*cls.answer_forbid)
            ctx.__enter__()
            after = [testing._resolve(t)[2] for t in cls.answer_forbid]
            cls.armed = (ctx, {id(r): (r, o) for o, r in zip(before, after) if r is not o})

    @classmethod
    def disarm(cls):
        """Put the forbidden functions back (before a check, and while the tests run), also where a
        module imported while they were refused took a stand-in."""
        armed, cls.armed = cls.armed, None
        if armed is None:
            return
        ctx, standins = armed
        try:
            ctx.__exit__(None, None, None)
        except _BaseException:  # noqa: BLE001  (restore() puts back whatever is left)
            pass
        for name, mod in _list(_sys.modules.items()):
            if not _isinstance(mod, _ModuleType) or not (name == "__main__" or name.startswith("memlab")):
                continue
            d = _vars(mod)
            for k, v in _list(d.items()):
                hit = standins.get(id(v))
                if hit is not None and hit[0] is v:
                    d[k] = hit[1]

    @classmethod
    def _snap_class(cls, label, k, callables_only=False):
        if id(k) in cls.seen_ids:
            return
        cls.seen_ids.add(id(k))
        cls.classes.append((label, k, {n: v for n, v in _vars(k).items()
                                       if not callables_only or _callable(v)}, callables_only))
        if not callables_only:
            for n, v in _list(_vars(k).items()):
                for f in _functions_of(v):
                    cls._snap_function(label + "." + n, f)

    @classmethod
    def _snap_function(cls, label, f):
        if id(f) not in cls.functions:
            cls.functions[id(f)] = (label, f, _inside(f))

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
            for k, v in keep.items():
                for f in _functions_of(v):
                    cls._snap_function(name + "." + k, f)
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
        for label, f, (code, defaults, kw, kw_items, cells, attrs) in cls.functions.values():
            changed.extend(_restore_function(label, f, code, defaults, kw, kw_items, cells, attrs))
        if _sys.meta_path != cls.meta_path or _len(_sys.meta_path) != _len(cls.meta_path):
            _sys.meta_path[:] = cls.meta_path
            changed.append("sys.meta_path")
        return changed

    @classmethod
    def check(cls, when="this cell", rearm=False):
        """Restore; raise :class:`MemlabTampered` naming what *when* replaced (if anything).
        *rearm*: student cells come next (see :meth:`arm`)."""
        cls.disarm()
        changed = cls.restore()
        cls._snap_new_modules()
        if rearm:
            cls.arm()
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
        # The code's file name tells the tests' frames from the answers' (a check counts only when
        # the tests cell itself opens it); the random part keeps answers from compiling look-alikes.
        fname = "%s %s>" % (name[:-1], _token_hex(8))
        code = _compile(source, fname, "exec")
        visible = [line if i not in hidden else "" for i, line in enumerate(source.split("\n"), 1)]
        del source
        ns = _dict(cls.shell.user_ns) if cls.shell is not None else _dict(_vars(_sys.modules["__main__"]))
        ns["__builtins__"] = _b
        ns["__name__"] = "__main__"
        message, checks = None, []
        cls.recording = (fname, visible, hidden, checks)
        try:
            _exec(code, ns)
        except _BaseException as e:  # noqa: BLE001  (every failure is a verdict)
            message = _feedback(e, fname, visible, hidden)
        finally:
            cls.recording = None
            ns.clear()
            cls.forget()
        cls.check("the answers, while the tests ran,")
        if checks:
            share = _max(300, 15000 // _len(checks))
            raise MemlabChecks(_dumps({"checks": [[n, p, ok, m[:share], h] for n, p, ok, m, h in checks[:60]],
                                       "error": message})) from None
        if message is not None:
            raise MemlabTestFailed(message) from None

    @classmethod
    def record(cls, name, points, error, frame):
        """Record one ``memlab.testing.check`` block of the running tests cell (*error*: what it raised,
        or None); True when recorded (the check is then scored, not raised).  A check opened anywhere
        but in the tests cell's own code (an answer calling ``check`` itself) is not recorded."""
        r = cls.recording
        if r is None or frame is None or frame.f_code.co_filename != r[0]:
            return False
        fname, visible, hidden, checks = r
        msg = "" if error is None else _feedback(error, fname, visible, hidden)
        checks.append((_str(name)[:200], _min(_max(_float(points), 0.0), 1e6), error is None, msg,
                       frame.f_lineno in hidden))
        return True


def _ignore_exit():
    _print("memlab grader: exit() and quit() are ignored while grading; the kernel keeps running",
           file=_sys.stderr)

"""The rest of the grader's in-kernel code (see :mod:`memlab.grading.inkernel`; the grader sends both
files as one source, this one second): the inside of the functions the guard watches, and the
feedback a student may see of a failed test.  Never imported by the grader.
"""
import builtins as _b
import sys as _sys
import traceback as _tb

# Originals, taken before any student code runs (the same as inkernel.py's).
_type, _len, _dict, _isinstance, _str, _getattr = _b.type, _b.len, _b.dict, _b.isinstance, _b.str, _b.getattr
_BaseException, _KeyboardInterrupt, _AssertionError = _b.BaseException, _b.KeyboardInterrupt, \
    _b.AssertionError
_FunctionType = _type(lambda: None)
_EMPTY = object()                # an empty closure cell


def _cells(f):
    """The contents of a function's closure cells (``_EMPTY`` for a cell not yet filled)."""
    out = []
    for c in f.__closure__ or ():
        try:
            out.append(c.cell_contents)
        except ValueError:
            out.append(_EMPTY)
    return out


def _inside(f):
    """What a function is made of besides its identity: code, defaults, closure cells, attributes."""
    kw = f.__kwdefaults__
    return (f.__code__, f.__defaults__, kw, None if kw is None else _dict(kw), _cells(f), _dict(f.__dict__))


def _same_items(a, b):
    return a is b or (a is not None and b is not None and _len(a) == _len(b)
                      and all(k in b and b[k] is v for k, v in a.items()))


def _functions_of(value):
    """The plain functions a module attribute or class attribute holds (methods, properties too)."""
    if _isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if _isinstance(value, property):
        return [f for f in (value.fget, value.fset, value.fdel) if _isinstance(f, _FunctionType)]
    return [value] if _isinstance(value, _FunctionType) else []


def _restore_function(label, f, code, defaults, kw, kw_items, cells, attrs):
    """Put back a function's code, defaults, closure cells and attributes; what was changed."""
    changed = []
    if f.__code__ is not code:
        f.__code__ = code
        changed.append(label + ".__code__")
    if f.__defaults__ is not defaults:
        f.__defaults__ = defaults
        changed.append(label + ".__defaults__")
    if f.__kwdefaults__ is not kw or not _same_items(kw_items, kw):
        if kw is not None:
            kw.clear()
            kw.update(kw_items)
        f.__kwdefaults__ = kw
        changed.append(label + ".__kwdefaults__")
    for i, (cell, value) in enumerate(zip(f.__closure__ or (), cells)):
        try:
            now = cell.cell_contents
        except ValueError:
            now = _EMPTY
        if now is not value:
            if value is _EMPTY:
                del cell.cell_contents
            else:
                cell.cell_contents = value
            changed.append("%s's closure cell %d (%s)" % (label, i, f.__code__.co_freevars[i]))
    d = f.__dict__
    if not _same_items(attrs, d):
        d.clear()
        d.update(attrs)
        changed.append(label + ".__dict__")
    return changed


def _library_dirs():
    """Where library code lives: the interpreter's prefixes, site-packages, memlab's own package."""
    import os
    import site
    import sysconfig
    dirs = {_sys.prefix, _sys.base_prefix, _sys.exec_prefix}
    dirs.update(sysconfig.get_paths().values())
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:   # pragma: no cover  (old virtualenvs)
        pass
    memlab = _sys.modules.get("memlab")
    if memlab is not None and _getattr(memlab, "__file__", None):
        dirs.add(os.path.dirname(os.path.abspath(memlab.__file__)))
    return tuple(os.path.join(os.path.abspath(d), "") for d in dirs if d)


_LIBRARY_DIRS = ()


def _students(filename):
    """True for a frame of the student's own code: a notebook cell or a file of theirs, never the
    grader, the tests, memlab, numpy or the standard library."""
    if not filename or filename.startswith("<memlab") or filename.startswith("<frozen"):
        return False
    return not filename.startswith(_LIBRARY_DIRS)


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
    # No "time limit" here: a KeyboardInterrupt may be the student's own.  The grader knows whether
    # it interrupted the kernel (memlab.grading.kernel: status "timeout") and says so itself.
    last = max((i for i, f in enumerate(frames) if f.filename == name), default=-1)
    theirs = [f for f in frames[last + 1:] if _students(f.filename)]
    trace = ""
    if theirs:
        trace = "\n  in your code:"
        for f in theirs[-4:]:
            trace += "\n    %s, line %s: %s" % (f.name, f.lineno, (f.line or "").strip()[:200])
    if where_hidden:
        return "a hidden test failed: " + what + trace

    def src(f):
        return lines[f.lineno - 1].strip() if f.lineno and 0 < f.lineno <= _len(lines) else ""
    msg = what
    if _isinstance(e, _AssertionError) and not _str(e) and mine:
        msg = "assertion failed: " + src(mine[-1])
    if mine:
        msg += "\n  at test line %d: %s" % (mine[-1].lineno, src(mine[-1]))
    return msg + trace

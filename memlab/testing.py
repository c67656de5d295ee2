"""Checks shared by memlab's tests and the exercises' hidden tests.

Each check takes an independent route to the answer and raises ``AssertionError`` with a message
a student can act on:

* :func:`central_difference` and :func:`check_gradient_fn` compare gradient graphs with central
  finite differences in float64 (CSE599G1 lecture 7, p.6: a gradient is a graph that computes
  numbers, so it can be checked by numbers);
* :func:`check_plan_runs` verifies a memory plan with the independent checker
  (:func:`memlab.memory.check_plan`) and runs it in an arena against the naive executor (p.17-22);
* :func:`forbid` makes an exercise's hidden tests fail an answer that only calls the library's
  own version of what the question asks the student to write;
* :class:`check` splits a tests cell into parts worth their own points (partial credit, in the
  spirit of otter-grader's per-test-case points).

The exercises' inputs (:func:`random_graph`, :class:`TagLayout`, :func:`all_paths`) are
:mod:`memlab.exercise_helpers`' and exported here.

Results are compared as plain numpy arrays of floats, so an object whose ``==`` always answers
True proves nothing.
"""
from __future__ import annotations

import importlib
import sys
from contextlib import contextmanager
from types import FunctionType, TracebackType
from typing import Callable, Iterator, Mapping, Sequence, TypeVar

import numpy as np

from .execute import Executor
from .exercise_helpers import TagLayout, all_paths, random_graph  # noqa: F401  (hidden tests' names)
from .graph import Node, placeholder
from .memory import Plan, check_plan


def central_difference(f: Callable[[list[np.ndarray]], float], arrays: Sequence[np.ndarray],
                       i: int, eps: float = 1e-6) -> np.ndarray:
    """d f / d arrays[i] by central differences, ``(f(x + eps) - f(x - eps)) / (2 eps)``."""
    x = np.asarray(arrays[i], dtype=np.float64)
    grad = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        vals = []
        for sign in (1.0, -1.0):
            moved = [np.array(a, dtype=np.float64, copy=True) for a in arrays]
            moved[i][idx] += sign * eps
            vals.append(float(f(moved)))
        grad[idx] = (vals[0] - vals[1]) / (2 * eps)
    return grad


def check_gradient_fn(gradient: Callable[[Node, Node], Sequence[Node | None]],
                      build: Callable[..., Node], shapes: Sequence[Sequence[int]],
                      seed: int = 0, eps: float = 1e-6, atol: float = 1e-5) -> None:
    """Check an op's gradient function ``gradient(node, grad) -> [nodes]`` (CSE599G1 a1).

    Builds ``node = build(*xs)`` on float64 placeholders of ``shapes`` and an upstream gradient
    ``g``; the nodes ``gradient`` returns must compute d sum(g * node) / d x for each input, which
    is compared with central differences at random inputs drawn from ``seed``.
    """
    from .errors import GraphError, check_callable, check_int
    from .graph.node import check_shape
    check_callable(gradient, "check_gradient_fn: gradient (a function (node, grad) -> "
                   "[gradient nodes])", GraphError)
    check_callable(build, "check_gradient_fn: build (a function of the input nodes)", GraphError)
    if not isinstance(shapes, (list, tuple)) or not shapes:
        raise GraphError(f"check_gradient_fn: shapes must be a non-empty list of input shapes, "
                         f"got {shapes!r:.60}")
    shapes = [check_shape(s, f"check_gradient_fn: shapes[{i}]") for i, s in enumerate(shapes)]
    check_int(seed, "check_gradient_fn: seed", 0, GraphError)
    rng = np.random.default_rng(seed)
    xs = [placeholder(f"x{i}", s, np.float64) for i, s in enumerate(shapes)]
    node = build(*xs)
    g = placeholder("g", node.shape, np.float64)
    grads = list(gradient(node, g))
    assert len(grads) == len(xs), f"expected {len(xs)} gradients (one per input), got {len(grads)}"
    assert all(isinstance(n, Node) for n in grads), "return graph nodes, not numbers"
    feed = {x: rng.standard_normal(x.shape) for x in xs}
    feed[g] = rng.standard_normal(node.shape)
    got = [np.asarray(v, dtype=np.float64) for v in Executor(grads).run(feed)]
    upstream = np.asarray(feed[g], dtype=np.float64)

    def f(arrays: list[np.ndarray]) -> float:
        out = Executor(node).run({**feed, **dict(zip(xs, arrays))})[0]
        return float(np.sum(upstream * np.asarray(out, dtype=np.float64)))

    inputs = [feed[x] for x in xs]
    for i in range(len(xs)):
        want = central_difference(f, inputs, i, eps)
        assert got[i].shape == want.shape, \
            f"gradient for input {i} has shape {got[i].shape}, expected {want.shape}"
        err = float(np.max(np.abs(got[i] - want), initial=0.0))
        assert err <= atol, f"gradient for input {i} is wrong (largest error {err:.2e})"


def check_plan_runs(plan: Plan, feed: Mapping[Node | str, object], rtol: float = 1e-6) -> None:
    """A plan is valid (no two live values overlap) and running in it gives the naive results."""
    check_plan(plan)
    want = [np.asarray(v, dtype=np.float64) for v in Executor(plan.outputs).run(feed)]
    got = [np.asarray(v, dtype=np.float64) for v in Executor(plan.outputs, plan=plan).run(feed)]
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=rtol), \
            f"output {k} ({plan.outputs[k].name}) differs when run in the plan's arena"


_F = TypeVar("_F", bound=Callable[[], object])


class _Recorder:
    """What :func:`record_checks` collects: ``checks`` as ``(name, points, error or None)``, and the
    functions a bare ``forbid()`` refuses inside the block."""

    def __init__(self, forbid: tuple[str, ...]) -> None:
        self.checks: list[tuple[str, float, BaseException | None]] = []
        self.forbid = tuple(forbid)


_RECORDERS: list[_Recorder] = []


@contextmanager
def record_checks(forbid: Sequence[str] = ()) -> Iterator[_Recorder]:
    """Within the block, every :class:`check` is recorded (``rec.checks``: ``(name, points, error or
    None)``) instead of raising, and a bare ``forbid()`` refuses *forbid*.  The judge records the
    checks of a hidden test function this way; ``memlab check-work`` those of a visible tests cell.
    """
    rec = _Recorder(tuple(str(t) for t in forbid))
    _RECORDERS.append(rec)
    try:
        yield rec
    finally:
        _RECORDERS.remove(rec)


class check:
    """One part of a tests cell, worth *points* of the cell's points (partial credit).

    Use it as a context manager (``with check(points=1, name="empty graph"): assert ...``) or as a
    decorator (``@check(points=2, name="random graphs")`` on a function of no arguments, which runs
    at once).  Inside :func:`record_checks` (the judge running hidden tests, ``memlab check-work``
    running visible ones) a check that raises costs only its own points: it is recorded and the
    cell goes on.  Elsewhere (a student running the cell) a failing check raises as a plain
    ``assert`` would.  The cell's points should be the sum of its checks' points.
    """

    def __init__(self, points: float, name: str) -> None:
        if isinstance(points, bool) or not isinstance(points, (int, float)) or not points >= 0:
            raise ValueError(f"check(points=...) must be a number >= 0, not {points!r}")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"check(name=...) must be a non-empty string, not {name!r}")
        self.points, self.name = float(points), name

    def _done(self, error: BaseException | None) -> bool:
        if not _RECORDERS:
            return False
        _RECORDERS[-1].checks.append((self.name, self.points, error))
        return True

    def __enter__(self) -> "check":
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, tb: TracebackType | None) -> bool:
        if error is not None and not isinstance(error, Exception):
            return False                     # KeyboardInterrupt (a time limit), SystemExit: not a verdict
        return self._done(error) and error is not None

    def __call__(self, fn: _F) -> _F:
        try:
            fn()
        except Exception as e:  # noqa: BLE001  (a failed check, whatever it raised)
            if not self._done(e):
                raise
        else:
            self._done(None)
        return fn


class WriteItYourself(AssertionError):
    """Raised by a library function the exercise asks the student to write."""


def _resolve(target: str) -> tuple[object, str, object]:
    """``(owner, attribute, value)`` for a dotted name: a module attribute or a class attribute."""
    parts = target.split(".")
    for k in range(len(parts) - 1, 0, -1):
        try:
            owner: object = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        try:
            for name in parts[k:-1]:
                owner = getattr(owner, name)
            return owner, parts[-1], getattr(owner, parts[-1])
        except AttributeError:
            break
    raise ValueError(f"cannot resolve {target!r}")


def _refusing_code(fn: FunctionType, target: str) -> object:
    """A code object that raises :class:`WriteItYourself` naming *target*, with *fn*'s free
    variables (so it can become ``fn.__code__``: every reference to *fn* then refuses)."""
    names = fn.__code__.co_freevars
    message = f"this answer calls {target}: the question asks you to write it yourself"
    body = f"  if 0: ({', '.join(names)},)\n" if names else ""
    src = ("def _outer():\n" + "".join(f" {n} = None\n" for n in names)
           + " def refuse(*args, **kwargs):\n" + body
           + f"  raise __import__('memlab.testing').testing.WriteItYourself({message!r})\n"
           + " return refuse\n")
    space: dict = {}
    exec(compile(src, "<memlab.testing.forbid>", "exec"), space)  # noqa: S102  (fixed text)
    return space["_outer"]().__code__


def _functions(value: object) -> list[FunctionType]:
    """The plain functions a refused name stands for: the function, or a class's own methods."""
    if isinstance(value, FunctionType):
        return [value]
    if isinstance(value, type):
        out = []
        for v in vars(value).values():
            v = v.__func__ if isinstance(v, (staticmethod, classmethod)) else v
            if isinstance(v, property):
                out += [f for f in (v.fget, v.fset, v.fdel) if isinstance(f, FunctionType)]
            elif isinstance(v, FunctionType):
                out.append(v)
        return out
    return []


class _Refusals:
    """The functions refused now, by their code's (file, qualified name).  While :meth:`hook` is
    installed, every module run from a file (``importlib.reload``, a spec loaded from the library's
    file under another name) is remembered by its file, and its copies of refused functions refuse
    too: those run while a refusal is in force at once, those run earlier when the next starts."""
    active: dict[tuple[str, str], str] = {}
    copies: list[tuple[FunctionType, object]] = []     # refused copies, put back with the last refusal
    original: dict[int, object] = {}                    # id(function) -> its own code, while refused
    modules: dict[str, list] = {}                       # file -> weak references to modules run from it
    hooked: object = None
    permanent = False                                   # the kernel keeps the hook (call server)

    @classmethod
    def key(cls, fn: FunctionType) -> tuple[str, str]:
        import os
        return os.path.realpath(fn.__code__.co_filename), fn.__code__.co_qualname

    @classmethod
    def refuse_copies(cls, module: object) -> None:
        for value in list(vars(module).values()):
            for fn in _functions(value):
                target = cls.active.get(cls.key(fn))
                if target is not None and fn.__code__.co_filename != "<memlab.testing.forbid>":
                    cls.copies.append((fn, fn.__code__))
                    fn.__code__ = _refusing_code(fn, target)

    @classmethod
    def hook(cls, permanent: bool = False) -> None:
        import importlib._bootstrap_external as ext
        import os
        import weakref
        cls.permanent = cls.permanent or permanent
        if cls.hooked is not None:
            return
        run = ext._LoaderBasics.exec_module

        def exec_module(loader: object, module: object) -> None:
            run(loader, module)
            origin = getattr(getattr(module, "__spec__", None), "origin", None)
            if isinstance(origin, str):
                refs = cls.modules.setdefault(os.path.realpath(origin), [])
                refs[:] = [r for r in refs if r() is not None] + [weakref.ref(module)]
            if cls.active:
                cls.refuse_copies(module)
        cls.hooked = run
        ext._LoaderBasics.exec_module = exec_module

    @classmethod
    def unhook(cls) -> None:
        import importlib._bootstrap_external as ext
        if not cls.active:
            for fn, code in reversed(cls.copies):
                fn.__code__ = code
            cls.copies.clear()
            if cls.hooked is not None and not cls.permanent:
                ext._LoaderBasics.exec_module, cls.hooked = cls.hooked, None


def refuse_reloads() -> None:
    """From now on, for this process's life, remember every module run from a file, so that a copy
    of a refused function made by running the library's file again refuses too (the grading
    kernel calls it before the student's first cell; :func:`forbid` alone keeps it only while a
    refusal is in force)."""
    _Refusals.hook(permanent=True)


def own_code(fn: FunctionType) -> object:
    """*fn*'s own code object, also while :func:`forbid` has swapped it for a refusal."""
    return _Refusals.original.get(id(fn), fn.__code__)


@contextmanager
def forbid(*targets: str) -> Iterator[None]:
    """Within the block, the library functions named by ``targets`` (public names such as
    ``"memlab.checkpoint.optimal"``, or a class or a method such as
    ``"memlab.checkpoint.hetero.HeteroPlanner.schedule"``) raise :class:`WriteItYourself`, however they are
    reached: their code is swapped, so a name bound elsewhere, a default argument or a closure that
    kept the function refuses too, and so do copies made by running the library's module file again
    (``importlib.reload``, a spec loaded from it under another name).  A class refuses its own
    methods.  Everything is restored afterwards.

    Without targets: the functions :func:`record_checks` names (the exercise's ``forbid`` list when
    ``memlab check-work`` runs a visible tests cell), nothing otherwise; visible checks use it so that
    an answer that delegates earns no partial credit either.
    """
    if not targets:
        targets = _RECORDERS[-1].forbid if _RECORDERS else ()
    resolved = [(target, _resolve(target)[2]) for target in targets]   # all before any swap
    swapped: list[tuple[FunctionType, object]] = []
    keys: list[tuple[tuple[str, str], str | None]] = []
    try:
        for target, value in resolved:
            fns = _functions(value)
            if not fns:
                raise ValueError(f"forbid: {target!r} is neither a function nor a class")
            for fn in fns:
                swapped.append((fn, fn.__code__))
                _Refusals.original.setdefault(id(fn), fn.__code__)
                k = _Refusals.key(fn)
                keys.append((k, _Refusals.active.get(k)))
                _Refusals.active[k] = target
                fn.__code__ = _refusing_code(fn, target)
        for k in {k for k, _ in keys}:                     # copies made before: reload, re-loading
            for ref in _Refusals.modules.get(k[0], []):
                module = ref()
                if module is not None:
                    _Refusals.refuse_copies(module)
        if swapped:
            _Refusals.hook()
        yield
    finally:
        for fn, code in reversed(swapped):
            fn.__code__ = code
            if _Refusals.original.get(id(fn)) is code:
                del _Refusals.original[id(fn)]
        for k, before in reversed(keys):
            if before is None:
                _Refusals.active.pop(k, None)
            else:
                _Refusals.active[k] = before
        _Refusals.unhook()


@contextmanager
def cuda_probe() -> Iterator[dict]:
    """Within the block, count what Numba's CUDA simulator runs (exercise 14's hidden tests):
    ``probe["launches"][name]``, the launches of each kernel (by its function's name), and
    ``probe["shared_reads"]``, the element reads of ``cuda.shared.array`` arrays.  So an answer that
    computes with numpy, or a kernel that never reads its shared memory, is told apart from one that
    runs the kernel the question describes.  Needs ``NUMBA_ENABLE_CUDASIM=1``; restored afterwards.
    """
    import threading
    from numba.cuda.simulator import kernel as sim_kernel, kernelapi as sim_api
    probe: dict = {"launches": {}, "shared_reads": 0}
    lock = threading.Lock()

    class Counted(np.ndarray):
        def __getitem__(self, key: object) -> object:
            with lock:
                probe["shared_reads"] += 1
            return np.ndarray.__getitem__(np.asarray(self), key)

    call, array = sim_kernel.FakeCUDAKernel.__call__, sim_api.FakeCUDAShared.array

    def counted_call(self: object, *args: object) -> object:
        if not getattr(self, "_device", False):
            name = getattr(getattr(self, "fn", None), "__name__", "?")
            probe["launches"][name] = probe["launches"].get(name, 0) + 1
        return call(self, *args)

    def counted_array(self: object, shape: object, dtype: object) -> np.ndarray:
        return array(self, shape, dtype).view(Counted)

    sim_kernel.FakeCUDAKernel.__call__ = counted_call
    sim_api.FakeCUDAShared.array = counted_array
    try:
        yield probe
    finally:
        sim_kernel.FakeCUDAKernel.__call__ = call
        sim_api.FakeCUDAShared.array = array

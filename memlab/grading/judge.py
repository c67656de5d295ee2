"""The judge: the process that runs a solution's hidden tests and computes the verdicts.

``memlab grade`` starts it as a fresh interpreter (``python -I``) of its own; no student code ever
runs in it.  It gets the hidden tests of the tests cells (the code between ``### BEGIN HIDDEN
TESTS`` and ``### END HIDDEN TESTS``), runs every ``test_*(answers)`` function they define, and
sends back, per tests cell, the checks (name, points, passed, feedback) and any error outside them.

``answers`` reaches the student's answers in their kernel only through the grader: ``answers.f(x)``
sends *x* as plain data (:mod:`.codec`; graphs as node records), the kernel calls ``f`` there (under
:func:`memlab.testing.forbid` of the notebook's ``forbid`` list and the cell's ``FORBID``) and the
result comes back as plain data: the nodes the test sent come back as the same objects, new nodes
are rebuilt here with memlab's constructors, and objects that are not plain stay in the kernel
behind a :class:`Handle` whose methods and attributes are served the same way.  Hidden inputs come
from ``answers.rng`` (or ``answers.seed()``), drawn from a secret this process makes with
:func:`os.urandom` for every grade.  What the kernel sends is decoded strictly; nothing in it is
ever run.

Frames on stdin/stdout: a 4-byte big-endian length, then JSON.
"""
from __future__ import annotations

import builtins
import json
import os
import struct
import sys
import traceback
import zlib
from types import SimpleNamespace
from typing import Any, BinaryIO, Callable

from memlab import plaindata

from .policy import apply as apply_policy
from .callserver import Server, _Ref
from .codec import CodecError, decode, to_wire
from .text import clean
from .verdicts import FEEDBACK_LIMIT, AnswerRaised, CallFailed, _raised_class, feedback  # noqa: F401

#: The most node records one reply may make the judge rebuild.
MAX_NODES = 200_000


# ------------------------------------------------------------------------------------ the channel
class Channel:
    """Frames to and from the grader (stdin/stdout of this process)."""

    def __init__(self, fin: BinaryIO, fout: BinaryIO) -> None:
        self.fin, self.fout, self.seq = fin, fout, 0

    def send(self, obj: dict) -> None:
        data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
        self.fout.write(struct.pack(">I", len(data)) + data)
        self.fout.flush()

    def recv(self) -> dict:
        head = self.fin.read(4)
        if len(head) < 4:
            raise SystemExit(0)               # the grader went away
        (n,) = struct.unpack(">I", head)
        return json.loads(self.fin.read(n).decode("utf-8"))

    def call(self, body: str) -> str:
        """Send one request to the kernel (through the grader); its reply's text."""
        self.seq += 1
        self.send({"t": "call", "seq": self.seq, "body": body})
        while True:
            msg = self.recv()
            if msg.get("t") == "reply" and msg.get("seq") == self.seq:
                break
        if "fail" in msg:
            raise CallFailed(str(msg["fail"]))
        return str(msg["body"])


# ------------------------------------------------------------------------------------ the answers
class Calls:
    """The calls of one judge: the node table shared with the kernel (keys both sides use) and the handles it made."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.nodes: dict[Any, Any] = {}
        self.key_of: dict[int, Any] = {}
        self.next = 0
        self.handles: dict[int, Handle] = {}
        self.refusing: tuple[str, ...] = ()       # the refusals of the request being answered
        self.tampered: set[str] = set()           # what the kernel's replies reported (see .policy)

    def key(self, node: Any) -> Any:
        k = self.key_of.get(id(node))
        if k is None:
            self.next += 1
            k = self.next
            self.nodes[k], self.key_of[id(node)] = node, k
        return k

    def request(self, fields: dict, args: tuple = (), kwargs: dict | None = None) -> Any:
        graph = plaindata.graph()
        nodes: list = []

        def ext(x: Any) -> tuple[str, Any] | None:
            if isinstance(x, graph.node_type):
                nodes.append(x)
                return "node", self.key(x)
            if isinstance(x, Handle):
                return "handle", x._h
            if isinstance(x, SimpleNamespace):
                return "ns", dict(vars(x))
            known = plaindata.to_plain(x)
            return None if known is None else ("obj", known)

        wire_args = to_wire(list(args), ext)
        wire_kwargs = to_wire(dict(kwargs or {}), ext)
        records, _ = graph.to_records(list({id(n): n for n in nodes}.values()), new_key=self.key)
        items = [[k, to_wire(v)] for k, v in fields.items()]
        items += [["args", wire_args], ["kwargs", wire_kwargs], ["graph", to_wire(records)]]
        reply = self.channel.call(json.dumps({"$d": items}, separators=(",", ":")))
        self.refusing = tuple(fields.get("forbid", ()))
        return self._reply(reply)

    def _reply(self, text: str) -> Any:
        def ext(kind: str, payload: Any) -> Any:
            if kind in ("node", "handle"):
                return _Ref(kind, payload)
            if kind == "plain":
                return payload
            if kind == "obj" and type(payload) is tuple and len(payload) == 2:
                return plaindata.from_plain(*payload)
            raise CodecError(f"unknown extension {kind[:30]!r}")
        try:
            msg = decode(text, ext)
        except CodecError as e:
            raise CallFailed(f"your answer's result is not plain data the grader can read ({e})") from None
        if not isinstance(msg, dict):
            raise CallFailed("the kernel's reply is not a reply")
        if msg.get("tampered"):
            self.tampered.update(str(x)[:200] for x in list(msg["tampered"])[:20])
        if "interrupted" in msg:
            raise CallFailed("your answer was interrupted (KeyboardInterrupt)")
        if "failed" in msg:
            raise CallFailed(str(msg["failed"])[:FEEDBACK_LIMIT])
        if "raised" in msg:
            kind, base, message, trace = msg["raised"]
            kind = clean(str(kind)[:100]) if str(kind).isidentifier() else "an exception " + clean(
                repr(str(kind)[:100]))
            raise _raised_class(kind, str(base))(kind, clean(str(message)[:FEEDBACK_LIMIT]),
                                                 [clean(str(t)[:300]) for t in list(trace)[:8]])
        try:
            if len(msg.get("graph", [])) > MAX_NODES:
                raise CallFailed(f"your answer returned more than {MAX_NODES:,} graph nodes")
            graph = [r for r in msg.get("graph", []) if r.get("key") not in self.nodes]
            self.nodes = plaindata.graph().from_records(graph, self.nodes)
            for k, n in self.nodes.items():
                self.key_of.setdefault(id(n), k)
            info = msg.get("handles", {})
            return self._resolve(msg["ok"], info)
        except CallFailed:
            raise
        except MemoryError:
            raise CallFailed("your answer's result is over the judge's memory limit") from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CallFailed(f"your answer's result cannot be read back ({type(e).__name__}: {e})") from None
        except Exception as e:  # noqa: BLE001  (GraphError and friends: a graph memlab cannot rebuild)
            raise CallFailed(f"your answer returned a graph memlab cannot rebuild ({e})") from None

    def _resolve(self, x: Any, info: dict) -> Any:
        t = type(x)
        if t is _Ref:
            if x.kind == "node":
                return self.nodes[x.key]
            h = self.handles.get(x.key)
            if h is None:
                name, methods, is_callable = info.get(x.key, ("object", [], False))
                h = self.handles[x.key] = Handle(self, x.key, str(name), set(methods), bool(is_callable))
            # a handle made by any call (of an answer, or of another handle's method) runs under the
            # refusals of that call, and keeps those of earlier calls that returned it
            object.__setattr__(h, "_forbid", tuple(dict.fromkeys(h._forbid + self.refusing)))
            return h
        if t is list:
            return [self._resolve(v, info) for v in x]
        if t is tuple:
            return tuple(self._resolve(v, info) for v in x)
        if t is dict:
            return {self._resolve(k, info): self._resolve(v, info) for k, v in x.items()}
        if t is set:
            return {self._resolve(v, info) for v in x}
        return x


class Handle:
    """An object of the student's that stays in their kernel: its methods are called there, its
    attributes fetched as plain data."""

    def __init__(self, session: Calls, h: int, kind: str, methods: set, is_callable: bool) -> None:
        object.__setattr__(self, "_s", session)
        object.__setattr__(self, "_h", h)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_methods", methods)
        object.__setattr__(self, "_callable", is_callable)
        object.__setattr__(self, "_forbid", ())

    def _call(self, method: str | None, args: tuple, kwargs: dict) -> Any:
        return self._s.request({"op": "call", "handle": self._h, "method": method,
                                "forbid": list(self._forbid)}, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._methods:
            return lambda *a, **k: self._call(name, a, k)
        return self._s.request({"op": "getattr", "handle": self._h, "name": name,
                                "forbid": list(self._forbid)})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(None, args, kwargs)

    def __len__(self) -> int:
        return int(self._call("__len__", (), {}))

    def __getitem__(self, key: Any) -> Any:
        return self._call("__getitem__", (key,), {})

    def __iter__(self) -> Any:
        return iter(self._call("__list__", (), {}))

    def __contains__(self, key: Any) -> bool:
        return bool(self._call("__contains__", (key,), {}))

    def __repr__(self) -> str:
        return f"<your {self._kind} object>"


class Answers:
    """The student's answers, as hidden tests see them: ``answers.topo_sort(outputs)`` calls the
    notebook's ``topo_sort`` in the student's kernel.  ``answers.forbid(*names)`` is a view whose
    calls also refuse these library functions; ``answers.rng`` is a random generator drawn from this
    grade's secret (fresh for every test function), ``answers.seed(*salt)`` an integer from it."""

    def __init__(self, session: Calls, forbid: tuple[str, ...], secret: int, salt: str) -> None:
        import numpy as np
        self._session, self._forbid, self._secret, self._salt = session, tuple(forbid), secret, salt
        self.rng = np.random.default_rng([secret, zlib.crc32(salt.encode())])

    def seed(self, *salt: object) -> int:
        """An integer for a hidden input (a random graph's seed), from this grade's secret."""
        return int(zlib.crc32(repr((self._secret, self._salt, salt)).encode()) * 7919 + self._secret % 104729)

    def forbid(self, *targets: str) -> "Answers":
        view = Answers.__new__(Answers)
        view.__dict__.update(self.__dict__)
        view._forbid = self._forbid + tuple(targets)
        return view

    def cuda_probe(self) -> "Answers":
        """A view whose calls run under :func:`memlab.testing.cuda_probe` in the kernel and return
        ``(result, {"launches": {kernel name: count}, "shared_reads": n})``: counts taken in the
        student's process, a kernel-side property (see docs/grading.md, the trust model)."""
        view = Answers.__new__(Answers)
        view.__dict__.update(self.__dict__)
        view._probe = "cuda"
        return view

    _probe = None

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.answer(name)

    def launch(self, kernel: str, grid: Any, block: Any, *args: Any) -> list:
        """Launch the notebook's CUDA kernel *kernel* as ``kernel[grid, block](*args)`` in the
        student's kernel, on device arrays the call server makes from *args* (numpy arrays), and
        return every argument read back from the device (exercise 14: results, not counts)."""
        return self._session.request({"op": "launch", "name": kernel, "grid": grid, "block": block,
                                      "forbid": list(self._forbid)}, args, {})

    def answer(self, name: str) -> Callable[..., Any]:
        """The notebook's *name*, callable: ``answers.answer("seed")(3)`` reaches an answer whose name
        is one of this object's own (``seed``, ``rng``, ``forbid``, ``cuda_probe``, ``answer``)."""
        session, targets, probe = self._session, self._forbid, self._probe

        def call(*args: Any, **kwargs: Any) -> Any:
            fields = {"op": "call", "name": name, "forbid": list(targets)}
            if probe:
                fields["probe"] = probe
            return session.request(fields, args, kwargs)
        call.__name__ = name
        return call


def run_cell(session: Calls, test: dict, forbid: tuple[str, ...], secret: int) -> dict:
    """Run one tests cell's ``test_*`` functions; its checks and any error outside them."""
    from memlab import testing
    ns: dict = {"__name__": f"memlab_judge_{test['id']}", "__builtins__": builtins}
    try:
        exec(compile(test["code"], f"<hidden tests {test['id']}>", "exec"), ns)  # noqa: S102 (the solution's)
    except Exception as e:  # noqa: BLE001
        return {"checks": [], "error": f"the hidden tests could not be loaded (a problem in the solution: "
                                       f"{type(e).__name__}: {e})"}
    tests = [v for k, v in ns.items() if k.startswith("test_") and callable(v)]
    if not tests:
        return {"checks": [], "error": "the hidden tests define no test_* function (a problem in the "
                                       "solution)"}
    targets = tuple(forbid) + tuple(str(t) for t in ns.get("FORBID", ()))
    checks: list = []
    error = None
    for fn in tests:
        answers = Answers(session, targets, secret, f"{test['id']}/{fn.__name__}")
        with testing.record_checks() as recorded:
            try:
                fn(answers)
            except Exception as e:  # noqa: BLE001  (every failure is a verdict)
                error = error or feedback(e)
        checks += [[name, points, err is None, "" if err is None else feedback(err)]
                   for name, points, err in recorded.checks]
    checks, error = apply_policy(checks, error, session.tampered)
    return {"checks": checks, "error": error}


class LocalChannel:
    """Calls answers in *this* process, through the same codec and call server: for an author's
    trial run of judge code against a namespace (and fast tests).  A grade never uses it."""

    def __init__(self, namespace: dict) -> None:
        self.server = Server(namespace)

    def call(self, body: str) -> str:
        try:
            return self.server.handle(body.encode("utf-8")).decode("utf-8")
        finally:
            self.server.refusals.disarm()   # the tests' own code runs here too: never refused


def run_local(code: str, namespace: dict, forbid: tuple[str, ...] = (), secret: int = 0) -> dict:
    """Run judge *code* (a tests cell's hidden part) against the answers in *namespace* here:
    ``{"checks": [[name, points, passed, feedback]], "error": ...}``, as the judge would send it."""
    return run_cell(Calls(LocalChannel(namespace)), {"id": "local", "code": code}, tuple(forbid), secret)


def limit_resources(memory: int | None, seconds: float | None) -> None:
    """The judge's own limits: its address space (it rebuilds and runs what answers return) and
    its CPU time; over them a call fails or the judge stops, and the grader scores what is left 0."""
    import resource
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
    if seconds:
        resource.setrlimit(resource.RLIMIT_CPU, (int(seconds) + 1, int(seconds) + 2))


def main() -> None:
    fin = os.fdopen(os.dup(0), "rb")
    fout = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)                       # what tests print never reaches the channel
    sys.stdout = sys.stderr
    channel = Channel(fin, fout)
    setup = channel.recv()
    limit_resources(setup.get("memory"), setup.get("seconds"))
    secret = int.from_bytes(os.urandom(8), "big") >> 1
    session = Calls(channel)
    forbid = tuple(str(t) for t in setup.get("forbid", ()))
    for test in setup["tests"]:
        out = run_cell(session, test, forbid, secret)
        channel.send({"t": "result", "id": test["id"], **out})
    channel.send({"t": "done"})


if __name__ == "__main__":
    main()

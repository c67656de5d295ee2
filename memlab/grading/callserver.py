"""The kernel side of grading: the module the grader loads into the student's kernel.

Two entry points.  :func:`start` runs before the first student cell: it lowers the kernel's resource
limits, makes ``exit()`` and ``quit()`` harmless, refuses the exercise's ``forbid`` list while the
student's cells run, and records what it will report as tampering.  After the student's cells ran,
the grader runs :func:`serve` in the kernel: it connects to the grader's Unix socket (in a
directory only this grade's user can enter; the grader checks the peer's uid), presents the grade's
token, reports what was tampered with as plain data, and answers requests until told to stop.
A request names an answer (a name in the notebook's namespace, or a method of an object an
earlier call returned), its arguments as plain data (:mod:`.codec`; graphs as node records,
rebuilt with memlab's constructors by the graph's codec in :mod:`memlab.plaindata`) and the library
functions refused during the call (:func:`memlab.testing.forbid`, armed by :mod:`.arming`).
The reply is the result as plain data: nodes the request sent come back as their keys, new nodes
as records, and any object that is not plain stays here behind a handle (its methods and
attributes are served too).

Nothing here decides anything: this runs in the student's process, which can change all of it.  The
verdict is the judge's (:mod:`.judge`), computed from these replies in a process no student code
runs in.  Frames are a 4-byte big-endian length, then that many bytes of codec text.
"""
from __future__ import annotations

import contextlib
import io
import socket
import sys
import traceback
from typing import Any

import memlab.testing as _testing
from memlab import plaindata

from .arming import Armed, forbid as _forbid
from .codec import CodecError, decode, encode, to_wire
from .frames import recv_frame, send_frame
from .watch import baseline, tampering
#: The call server's own probe, made from the library's function when this module loads (before
#: any student cell), so that rebinding or editing ``memlab.testing.cuda_probe`` later changes
#: nothing here (and is reported: :func:`tampering`); its refusals are :mod:`.arming`'s.
_cuda_probe = contextlib.contextmanager(_testing.cuda_probe.__wrapped__)
TRACE_LINES = 4


class _Ref:
    """A key of the other side's table (a node or a handle), resolved after the records are built."""
    __slots__ = ("kind", "key")

    def __init__(self, kind: str, key: Any) -> None:
        self.kind, self.key = kind, key


def _student_frames(tb) -> list[str]:
    """The student's own frames of a traceback (notebook cells; not memlab, not the interpreter)."""
    import os
    import sysconfig
    skip = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            skip.add(sysconfig.get_paths()[key])
        except KeyError:
            pass
    out = []
    for f in traceback.extract_tb(tb):
        name = f.filename or ""
        if any(name.startswith(p) for p in skip) or name.startswith("<frozen"):
            continue
        out.append(f"{f.name}, line {f.lineno}: {(f.line or '').strip()[:200]}")
    return out[-TRACE_LINES:]


class Server:
    """The tables of one kernel's life: nodes by key, objects behind handles."""

    def __init__(self, namespace: dict) -> None:
        self.ns = namespace
        self.nodes: dict[Any, Any] = {}       # key -> Node
        self.key_of: dict[int, Any] = {}      # id(Node) -> key
        self.handles: dict[int, Any] = {}
        self.handle_of: dict[int, int] = {}
        self.fresh = 0
        self.refusals = Armed()        # the refusals of the request being served

    # ----------------------------------------------------------------------------------- decoding
    def _args(self, req: dict) -> tuple[list, dict]:
        from types import SimpleNamespace

        records = [r for r in req.get("graph", []) if r["key"] not in self.nodes]
        self.nodes = plaindata.graph().from_records(records, self.nodes)
        for k, n in self.nodes.items():
            self.key_of[id(n)] = k

        def resolve(x: Any) -> Any:
            t = type(x)
            if t is _Ref:
                if x.kind == "node":
                    return self.nodes[x.key]
                if x.kind == "handle":
                    return self.handles[x.key]
                raise ValueError(f"unknown reference {x.kind!r}")
            if t is list:
                return [resolve(v) for v in x]
            if t is tuple:
                return tuple(resolve(v) for v in x)
            if t is dict:
                return {resolve(k): resolve(v) for k, v in x.items()}
            if t is set:
                return {resolve(v) for v in x}
            if t is SimpleNamespace:
                return SimpleNamespace(**{k: resolve(v) for k, v in vars(x).items()})
            return x
        return resolve(req.get("args", [])), resolve(req.get("kwargs", {}))

    @staticmethod
    def _ext_in(kind: str, payload: Any) -> Any:
        from types import SimpleNamespace
        if kind in ("node", "handle"):
            return _Ref(kind, payload)
        if kind == "ns" and type(payload) is dict:
            return SimpleNamespace(**{str(k): v for k, v in payload.items()})
        if kind == "obj" and type(payload) is tuple and len(payload) == 2:
            return plaindata.from_plain(*payload)
        raise CodecError(f"unknown extension {kind!r}")

    # ----------------------------------------------------------------------------------- encoding
    def _encode(self, value: Any) -> str:
        graph = plaindata.graph()
        new_nodes: list = []
        new_ids: set = set()
        handles: dict = {}

        def ext(x: Any) -> tuple[str, Any] | None:
            if isinstance(x, graph.node_type):
                k = self.key_of.get(id(x))
                if k is None:
                    k = self._new_key(x)
                    new_nodes.append(x)
                    new_ids.add(id(x))
                return "node", k
            known = plaindata.to_plain(x)
            if known is not None:
                return "obj", known
            for base in (bool, int, float, str):
                if isinstance(x, base):
                    return "plain", base(x)
            for base, make in ((list, list), (tuple, tuple), (dict, dict), (set, set), (frozenset, set)):
                if isinstance(x, base):
                    return "plain", make(x)
            h = self.handle_of.get(id(x))
            if h is None:
                h = len(self.handles) + 1
                self.handles[h], self.handle_of[id(x)] = x, h
            kind = type(x)
            methods = sorted(n for n in dir(kind)
                             if not n.startswith("_") and callable(getattr(kind, n, None)))
            handles[h] = (str(getattr(kind, "__name__", "object"))[:100], methods[:200], callable(x))
            return "handle", h

        wire = to_wire(value, ext)
        records: list = []
        if new_nodes:
            # the records of the new nodes, and of the nodes they read that the judge has not seen
            known = {n: k for k, n in self.nodes.items() if id(n) not in new_ids}
            records, _ = graph.to_records(new_nodes, known,
                                  new_key=lambda n: self.key_of.get(id(n)) or self._new_key(n))
        import json
        return json.dumps({"$d": [["ok", wire], ["graph", to_wire(records)],
                                  ["handles", to_wire(handles)]]}, separators=(",", ":"))

    def _new_key(self, n: Any) -> str:
        self.fresh += 1
        k = f"k{self.fresh}"
        self.nodes[k], self.key_of[id(n)] = n, k
        return k

    # ----------------------------------------------------------------------------------- serving
    def handle(self, text: bytes) -> bytes:
        """Serve one request; the reply also carries what was tampered with, if anything
        (:func:`tampering`: plain data the judge's policy, :mod:`memlab.grading.policy`, applies)."""
        reply = self._handle(text)
        seen = tampering()
        if not seen:
            return reply
        import json
        data = json.loads(reply)
        data["$d"].append(["tampered", to_wire(seen)])
        return json.dumps(data, separators=(",", ":")).encode("utf-8")

    def _handle(self, text: bytes) -> bytes:
        try:
            req = decode(text, self._ext_in)
            args, kwargs = self._args(req)
            targets = tuple(str(t) for t in req.get("forbid", ()))
            op = req["op"]
            if op == "call":
                if req.get("handle") is not None:
                    obj = self.handles[req["handle"]]
                    method = req.get("method")
                    fn = obj if method is None else (lambda: list(obj)) if method == "__list__" \
                        else getattr(obj, method)
                else:
                    name = req["name"]
                    if name not in self.ns:
                        raise NameError(f"name {name!r} is not defined in your notebook")
                    fn = self.ns[name]
            elif op == "getattr":
                fn = None
            elif op == "launch":
                fn = _launcher(self.ns, req["name"], req.get("grid"), req.get("block"))
            else:
                raise ValueError(f"unknown request {op!r}")
        except Exception as e:  # noqa: BLE001  (a request this kernel cannot serve)
            return self._fail("the grader's request could not be served here", e)
        try:
            self.refusals.arm(targets)
            if op == "getattr":
                result = getattr(self.handles[req["handle"]], req["name"])
            elif req.get("probe") == "cuda":          # counted here, in the student's process
                with _cuda_probe() as probe:
                    result = fn(*args, **kwargs)
                result = (result, {"launches": dict(probe["launches"]),
                                   "shared_reads": int(probe["shared_reads"])})
            else:
                result = fn(*args, **kwargs)
        except KeyboardInterrupt:
            raise                     # the grader's interrupt (a time limit): serve() answers it
        except BaseException as e:  # noqa: BLE001  (what the answer raised, sys.exit() too, is its result)
            return self._raised(e)
        try:
            return self._encode(result).encode("utf-8")
        except Exception as e:  # noqa: BLE001
            return self._fail("what your answer returned cannot be sent to the grader", e)

    def _raised(self, e: BaseException) -> bytes:
        try:
            msg = str(e)[:2000]
        except Exception:  # noqa: BLE001  (a __str__ that raises)
            msg = ""
        kinds = [k.__name__ for k in type(e).__mro__ if k.__module__ == "builtins"][:1]
        out = {"raised": (type(e).__name__[:100], kinds[0] if kinds else "Exception", msg,
                          _student_frames(e.__traceback__))}
        return encode(out).encode("utf-8")

    def _fail(self, what: str, e: BaseException) -> bytes:
        try:
            msg = f"{type(e).__name__}: {str(e)[:500]}"
        except Exception:  # noqa: BLE001
            msg = type(e).__name__
        return encode({"failed": f"{what} ({msg})"}).encode("utf-8")


def _launcher(ns: dict, name: str, grid: Any, block: Any) -> Any:
    """A call that launches the notebook's CUDA kernel *name* as ``kernel[grid, block]`` on device
    arrays made here from the arguments (numpy arrays; other values pass as they are), then returns
    every argument read back from the device: the judge reads the kernel's results, not the
    student's account of them (exercise 14)."""
    import numpy as np
    from numba import cuda
    kernel = ns.get(name)
    if kernel is None:
        raise NameError(f"name {name!r} is not defined in your notebook")
    if not hasattr(kernel, "__getitem__") or isinstance(kernel, (dict, list, tuple, str)):
        raise TypeError(f"{name} is not a CUDA kernel (decorate it with @cuda.jit)")
    dims = [tuple(int(v) for v in d) if isinstance(d, (list, tuple)) else int(d) for d in (grid, block)]

    def launch(*args: Any) -> list:
        dev = [cuda.to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in args]
        kernel[dims[0], dims[1]](*dev)
        return [d.copy_to_host() if hasattr(d, "copy_to_host") else d for d in dev]
    return launch


class _Kernel:
    """What :func:`start` set up: the answer-time refusals, the baseline of tampering reports."""
    answer_forbid = None           # memlab.testing.forbid's context while the student's cells run


def start(rlimits: dict | None = None, forbid: tuple = ()) -> None:
    """Set the kernel up before any student cell (see the module docstring)."""
    import builtins
    import resource
    for name, value in (rlimits or {}).items():
        which = getattr(resource, name)
        hard = resource.getrlimit(which)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
    shell = getattr(builtins, "get_ipython", lambda: None)()
    if shell is not None:
        # exit() and quit() would stop the kernel a moment after the cell (ipykernel's ask_exit):
        # while grading they only say they were ignored, so the other answers are still graded.
        shell.ask_exit = _ignore_exit
    baseline({"memlab.grading.callserver.serve": serve, "memlab.grading.callserver.start": start,
              "memlab.grading.arming.forbid": _forbid,
              "memlab.grading.callserver._cuda_probe": _cuda_probe,
              "Server.handle": Server.handle, "Armed.arm": Armed.arm, "Armed.enter": Armed.enter})
    _testing.refuse_reloads()
    if forbid:
        _Kernel.answer_forbid = _forbid(*forbid)
        _Kernel.answer_forbid.__enter__()


def _ignore_exit() -> None:
    print("memlab grader: exit() and quit() are ignored while grading; the kernel keeps running",
          file=sys.stderr)


def serve(path: str, token: str, namespace: dict | None = None) -> None:
    """Connect to the grader at the Unix socket *path* and answer its requests until it says
    ``bye`` or goes away."""
    if namespace is None:
        namespace = vars(sys.modules["__main__"])
    ctx, _Kernel.answer_forbid = _Kernel.answer_forbid, None
    if ctx is not None:
        ctx.__exit__(None, None, None)       # each call refuses what it names
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(path)
    sock.settimeout(None)
    sock.sendall(token.encode("ascii") + b"\n")
    send_frame(sock, encode({"tampered": tampering()}).encode("utf-8"))
    server = Server(namespace)
    out, err = sys.stdout, sys.stderr
    sink = io.StringIO()
    sys.stdout = sys.stderr = sink   # what answers print while they are graded goes nowhere
    try:
        while True:
            try:
                frame = recv_frame(sock)
                if frame is None or frame == b"bye":
                    break
                seq, body = frame[:8], frame[8:]
                reply = server.handle(body)
            except KeyboardInterrupt:
                seq, reply = locals().get("seq", b"\0" * 8), b'{"$d":[["interrupted",true]]}'
            if sink.tell() > 1 << 16:
                sink.seek(0)
                sink.truncate()
            send_frame(sock, seq + reply)
    finally:
        sys.stdout, sys.stderr = out, err
        server.refusals.disarm()
        sock.close()

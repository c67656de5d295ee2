"""The grader between the judge and the student's kernel.

:class:`JudgeRun` starts the judge (:mod:`.judge`, a fresh ``python -I`` of the grader's own
interpreter), hands it the hidden tests, and relays each of its calls to the kernel's call server
(:mod:`.callserver`, reached over a local socket that only a connection presenting this grade's
random token may use).  The grader enforces the limits: a call over the per-call time limit
interrupts the kernel and fails (a kernel that ignores the interrupt is restarted); a kernel that
dies is restarted, the student's cells replayed (:meth:`Session.recover`), and the remaining calls
go on; a reply over the size limit fails its call.  The judge's verdicts come back per tests cell.
"""
from __future__ import annotations

import functools
import hmac
import json
import os
import secrets
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .callserver import MAX_FRAME, recv_frame, send_frame
from .kernel import Watchdog
from .notebook import judge_code

GRACE = 3.0                 # seconds a kernel gets to stop after an interrupt
CONNECT_TIMEOUT = 30.0
#: Starts the judge with the grader's own memlab, whatever the current directory holds.
BOOT = """\
import importlib.util as u, sys
sys.path.insert(0, sys.argv[1])
import memlab
for name, path in zip(("_memlab_codec", "_memlab_callserver", "_memlab_judge"), sys.argv[2:5]):
    spec = u.spec_from_file_location(name, path)
    m = u.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
m.main()
"""


#: Runs the call server in the kernel: codec.py and callserver.py, sent as source (the grader's
#: files may be unreadable by the grading user), run as modules of their own, not through the
#: memlab.grading package (whose imports take seconds).
_BOOT = """\
import sys, types
for name, path, text in FILES:
    m = types.ModuleType(name)
    m.__file__ = path
    sys.modules[name] = m
    exec(compile(text, path, "exec"), m.__dict__)
m.serve(PORT, TOKEN)
"""


def serve_code(port: int, token: str) -> str:
    """The code the grader runs in the kernel to start the call server."""
    return f"exec({_BOOT!r}, {{'FILES': {_sources()!r}, 'PORT': {port!r}, 'TOKEN': {token!r}}})\n"


@functools.lru_cache(maxsize=1)
def _sources() -> tuple[tuple[str, str, str], ...]:
    here = Path(__file__).resolve().parent
    return tuple((name, str(here / f"{stem}.py"), (here / f"{stem}.py").read_text(encoding="utf-8"))
                 for name, stem in (("_memlab_codec", "codec"), ("_memlab_callserver", "callserver")))


class KernelGone(Exception):
    """The channel to the kernel broke (the kernel died, stopped answering or sent garbage)."""


class KernelChannel:
    """The socket to the call server running in the student's kernel."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.sock: socket.socket | None = None
        self.seq = 0
        self.broken = ""           # why this kernel cannot serve calls (until it is restarted)
        self.restarts = -1

    def close(self, bye: bool = True) -> None:
        if self.sock is not None:
            try:
                if bye:
                    send_frame(self.sock, b"bye")
            except OSError:
                pass
            self.sock.close()
            self.sock = None

    def _open(self) -> None:
        kernel = self.session.kernel
        if self.restarts != kernel.restarts:          # a new kernel: try again
            self.broken, self.restarts = "", kernel.restarts
        if self.broken:
            raise KernelGone(self.broken)
        token = secrets.token_hex(16)
        server = socket.create_server(("127.0.0.1", 0))
        try:
            port = server.getsockname()[1]
            kernel.kc.execute(serve_code(port, token), silent=True,
                              store_history=False, allow_stdin=False, stop_on_error=False)
            end = time.monotonic() + CONNECT_TIMEOUT
            while True:
                left = end - time.monotonic()
                if left <= 0 or not kernel.alive():
                    self.broken = "your kernel did not start serving the tests' calls (did a cell " \
                                  "break Python's socket module?)"
                    raise KernelGone(self.broken)
                server.settimeout(min(left, 0.5))
                try:
                    conn, _ = server.accept()
                except socket.timeout:
                    continue
                conn.settimeout(5.0)
                try:
                    line = b""
                    while not line.endswith(b"\n") and len(line) < 100:
                        chunk = conn.recv(1)
                        if not chunk:
                            break
                        line += chunk
                except OSError:
                    line = b""
                if hmac.compare_digest(line.strip(), token.encode()):
                    conn.settimeout(None)
                    self.sock = conn
                    return
                conn.close()                        # not our kernel
        finally:
            server.close()

    def call(self, body: bytes, limit: float) -> bytes:
        """Send one request; its reply.  Raises :class:`TimeoutError` (the kernel was interrupted,
        or restarted if it did not stop) or :class:`KernelGone`."""
        if self.sock is None:
            self._open()
        assert self.sock is not None
        self.seq += 1
        seq = struct.pack(">Q", self.seq)
        kernel = self.session.kernel
        try:
            send_frame(self.sock, seq + body)
        except OSError:
            self._lost()
            raise KernelGone("your kernel stopped answering") from None
        watch = Watchdog(kernel, limit, GRACE)
        while True:
            if watch.expired():
                self._lost()
                raise TimeoutError(limit)
            ready, _, _ = select.select([self.sock], [], [], 0.3)
            if not ready:
                if not kernel.alive():
                    self._lost()
                    raise KernelGone("your kernel died during the call (os._exit? a crash?)")
                continue
            try:
                frame = recv_frame(self.sock, MAX_FRAME)
            except (OSError, ValueError) as e:
                self._lost()
                raise KernelGone(f"your answer's result could not be received ({e})") from None
            if frame is None:
                self._lost()
                raise KernelGone("your kernel died during the call (os._exit? a crash?)")
            if frame[:8] != seq:
                continue                             # a late reply to an earlier call
            if watch.interrupted:
                raise TimeoutError(limit)
            return frame[8:]

    def _lost(self) -> None:
        """The kernel is dead or stuck: start a new one and replay the student's cells."""
        self.close(bye=False)
        s = self.session
        if s.kernel.alive():
            s.kernel.needs_restart = True
        s.recover("the kernel stopped answering the tests' calls")


class JudgeRun:
    """One judge process for the judged tests cells of a grade: :meth:`spawn` it early (it imports
    memlab while the student's cells run), :meth:`run` it after them, :meth:`close` it always."""

    def __init__(self, session: Any, tests: list[Any]) -> None:
        self.session, self.tests = session, tests
        self.channel = KernelChannel(session)
        self.proc: subprocess.Popen | None = None
        self.stderr = ""
        self._err = None
        self._cwd = None

    def spawn(self) -> None:
        here = Path(__file__).resolve().parent
        self._err = tempfile.TemporaryFile()
        self._cwd = tempfile.TemporaryDirectory(prefix="memlab-judge-")
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOT, str(here.parents[1]), str(here / "codec.py"),
             str(here / "callserver.py"), str(here / "judge.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
            cwd=self._cwd.name)

    def close(self) -> None:
        self.channel.close()
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
        if self._err is not None:
            self._err.seek(0)
            self.stderr = self._err.read(20_000).decode("utf-8", "replace")
            self._err.close()
            self._err = None
        if self._cwd is not None:
            self._cwd.cleanup()
            self._cwd = None

    def _send(self, obj: dict) -> None:
        data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
        self.proc.stdin.write(struct.pack(">I", len(data)) + data)
        self.proc.stdin.flush()

    def _read(self, deadline: float) -> dict | None:
        fd = self.proc.stdout.fileno()
        buf, need, size = b"", 4, None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, need - len(buf))
            if not chunk:
                return None
            buf += chunk
            if len(buf) < need:
                continue
            if size is None:
                size = struct.unpack(">I", buf)[0]
                buf, need = b"", size
                if size == 0:
                    return {}
                continue
            return json.loads(buf.decode("utf-8"))

    def run(self) -> dict[str, dict]:
        """Run the judge; per tests cell id: ``{"checks": [[name, points, passed, feedback]], "error"}``
        (a cell missing from the answer was not judged).  Each verdict goes to ``session.judged``."""
        s = self.session
        if self.proc is None:
            self.spawn()
        results: dict[str, dict] = {}
        try:
            self._send({"forbid": list(s.sol.forbid),
                        "tests": [{"id": t.id, "code": judge_code(t.source)} for t in self.tests]})
            while True:
                msg = self._read(s.deadline)
                if msg is None or msg.get("t") == "done":
                    break
                if msg.get("t") == "result":
                    results[str(msg["id"])] = msg
                    s.judged(str(msg["id"]), msg)
                elif msg.get("t") == "call":
                    self._send(self._relay(msg))
        except (OSError, ValueError) as e:          # the judge went away
            self.stderr = f"{type(e).__name__}: {e}"
        finally:
            self.close()
        return results

    def _relay(self, msg: dict) -> dict:
        s = self.session
        seq = msg.get("seq")
        body = str(msg.get("body", "")).encode("utf-8")
        if s.gave_up:
            return {"t": "reply", "seq": seq, "fail": s.gave_up}
        left = s.left()
        if left <= 0:
            return {"t": "reply", "seq": seq, "fail": f"not run: the total time limit of "
                                                      f"{s.total_timeout:g} s passed"}
        limit = max(0.05, min(s.timeout, left))
        try:
            reply = self.channel.call(body, limit)
        except TimeoutError:
            return {"t": "reply", "seq": seq, "fail": f"your answer did not finish within the time limit of "
                                                      f"{limit:g} s (an endless loop?)"}
        except KernelGone as e:
            return {"t": "reply", "seq": seq, "fail": str(e)}
        return {"t": "reply", "seq": seq, "body": reply.decode("utf-8", "replace")}


"""The grader between the judge and the student's kernel.

:class:`JudgeRun` starts the judge (:mod:`.judge`, a fresh ``python -I`` of the grader's own
interpreter), hands it the hidden tests, and relays each of its calls to the kernel's call server
(:mod:`.callserver`) over a :class:`KernelChannel`.  The grader enforces the limits:

* every read and write on both channels has a deadline: sockets and pipes are non-blocking and
  driven by ``select``, and a frame's whole transfer must end within the call's limit (plus the
  kernel's grace to stop after its interrupt), so a peer that announces a frame and stalls costs
  that call, never the grade;
* a call over the per-call limit interrupts the kernel and fails (a kernel that ignores the
  interrupt is restarted); a kernel that dies is restarted, the student's cells replayed, and the
  remaining calls go on;
* the kernel reaches the grader only through a Unix socket in a directory only this grade's user
  can enter, the peer's uid is checked (``SO_PEERCRED``), and connections are served together
  under one deadline, so a silent connection from elsewhere costs nothing;
* a call server that does not start costs one kernel restart, then the remaining calls fail.
"""
from __future__ import annotations

import errno
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
from typing import Protocol

from .codec import CodecError, decode
from .frames import MAX_FRAME, FrameReader, frame, send_all
from .kernel import Kernel, Watchdog
from .notebook import TestCell, judge_code

GRACE = 3.0                 # seconds a kernel gets to stop after an interrupt
CONNECT_TIMEOUT = 20.0      # seconds the call server has to connect and present the token
#: Starts the judge with the grader's own memlab, whatever the current directory holds.
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from memlab.grading.judge import main; main()"


class Host(Protocol):
    """What the channel needs of the grading run (:class:`memlab.grading.session.Session`)."""
    kernel: Kernel
    sol: object
    gave_up: str
    timeout: float
    total_timeout: float
    deadline: float
    tampered: list

    def left(self) -> float: ...
    def recover(self, what: str) -> None: ...
    def judged(self, test_id: str, msg: dict) -> None: ...


class KernelGone(Exception):
    """The channel to the kernel broke (the kernel died, stopped answering or sent garbage)."""


class KernelChannel:
    """The socket to the call server running in the student's kernel."""

    def __init__(self, host: Host, socket_dir: str, peer_uid: int) -> None:
        self.host, self.socket_dir, self.peer_uid = host, socket_dir, peer_uid
        self.sock: socket.socket | None = None
        self.reader: FrameReader | None = None
        self.seq = 0
        self.broken = ""           # why no call server can serve the calls (for the rest of the grade)
        self.failures = 0          # call servers that did not start

    def close(self, bye: bool = True) -> None:
        if self.sock is not None:
            if bye:
                try:
                    send_all(self.sock, frame(b"bye"), time.monotonic() + 1.0)
                except (OSError, TimeoutError):
                    pass
            self.sock.close()
            self.sock, self.reader = None, None

    # ----------------------------------------------------------------------------- connecting
    def _listen(self, path: str) -> socket.socket:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        gid = self.host.kernel.group
        if gid is not None:          # the grading user's group may connect; the directory keeps others out
            os.chown(path, -1, gid)
            os.chmod(path, 0o660)
        else:
            os.chmod(path, 0o600)
        server.listen(16)
        server.setblocking(False)
        return server

    def _peer_ok(self, conn: socket.socket) -> bool:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
        return uid == self.peer_uid

    def _open(self) -> None:
        if self.broken:
            raise KernelGone(self.broken)
        while True:
            why = self._try_open()
            if not why:
                return
            self.failures += 1
            if self.failures >= 2 or self.host.left() <= 0:
                self.broken = why + "; the remaining calls were not run"
                raise KernelGone(self.broken)
            self.host.kernel.needs_restart = True      # one restart, then one more try
            self.host.recover(why)

    def _try_open(self) -> str:
        """Start the call server and take its connection; "" on success, else why not."""
        kernel, host = self.host.kernel, self.host
        token = secrets.token_hex(16)
        path = os.path.join(self.socket_dir, f"calls-{secrets.token_hex(6)}.sock")
        server = self._listen(path)
        pending: dict[socket.socket, bytearray] = {}
        try:
            code = (f"__import__('memlab.grading.callserver', fromlist=['serve']).serve("
                    f"{path!r}, {token!r})\n")
            msg_id = kernel.kc.execute(code, silent=True, store_history=False, allow_stdin=False,
                                       stop_on_error=False)
            end = min(time.monotonic() + CONNECT_TIMEOUT, host.deadline)
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    return (f"the call server in your kernel did not connect within "
                            f"{CONNECT_TIMEOUT:g} s")
                if not kernel.alive():
                    return "your kernel died before it could serve the tests' calls"
                failed = _serve_failed(kernel, msg_id)
                if failed:
                    return failed
                ready, _, _ = select.select([server, *pending], [], [], min(left, 0.25))
                for s in ready:
                    if s is server:
                        try:
                            conn, _ = server.accept()
                        except (BlockingIOError, InterruptedError):
                            continue
                        conn.setblocking(False)
                        if self._peer_ok(conn):
                            pending[conn] = bytearray()
                        else:
                            conn.close()        # another user's process: never ours
                        continue
                    try:
                        chunk = s.recv(128)
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        chunk = b""
                    buf = pending[s]
                    buf += chunk
                    if not chunk or len(buf) > 100 or b"\n" in buf:
                        del pending[s]
                        line = bytes(buf).split(b"\n", 1)
                        if chunk and hmac.compare_digest(line[0], token.encode()):
                            self.sock, self.reader = s, FrameReader(s)
                            self.reader.buf += line[1] if len(line) > 1 else b""
                            return self._hello(end)
                        s.close()
        finally:
            for s in pending:
                s.close()
            server.close()
            try:
                os.unlink(path)
            except OSError:
                pass

    def _hello(self, end: float) -> str:
        """The call server's first frame: what it saw tampered with (plain data, see .policy)."""
        while time.monotonic() < end:
            got = self.reader.read(0.25)
            if got is not None:
                try:
                    report = decode(got, max_bytes=1 << 16)
                    self.host.tampered += [str(x) for x in list(report.get("tampered", []))[:20]]
                except (CodecError, AttributeError, TypeError):
                    self.host.tampered.append("the call server's report could not be read")
                return ""
            if self.reader.closed:
                break
        self.close(bye=False)
        return "the call server in your kernel connected but sent no report"

    # ----------------------------------------------------------------------------- calling
    def call(self, body: bytes, limit: float) -> bytes:
        """Send one request; its reply.  Raises :class:`TimeoutError` (the kernel was interrupted,
        or restarted if it did not stop) or :class:`KernelGone`."""
        if self.sock is None:
            self._open()
        self.seq += 1
        seq = struct.pack(">Q", self.seq)
        kernel = self.host.kernel
        watch = Watchdog(kernel, limit, GRACE)
        try:
            send_all(self.sock, frame(seq + body), watch.deadline + GRACE)
        except (OSError, TimeoutError):
            self._lost()
            raise KernelGone("your kernel stopped answering") from None
        while True:
            if watch.expired():
                self._lost()
                raise TimeoutError(limit)
            try:
                got = self.reader.read(0.25)
            except ValueError as e:
                self._lost()
                raise KernelGone(f"your answer's result could not be received ({e})") from None
            if got is None:
                if self.reader.closed or not kernel.alive():
                    self._lost()
                    raise KernelGone("your kernel died during the call (os._exit? a crash?)")
                continue
            if got[:8] != seq:
                continue                             # a late reply to an earlier call, or a forgery
            if watch.interrupted:
                raise TimeoutError(limit)
            return got[8:]

    def _lost(self) -> None:
        """The kernel is dead or stuck: start a new one and replay the student's cells."""
        self.close(bye=False)
        if self.host.kernel.alive():
            self.host.kernel.needs_restart = True
        self.host.recover("the kernel stopped answering the tests' calls")


def _serve_failed(kernel: Kernel, msg_id: str) -> str:
    """Why the kernel's ``serve`` cell ended (it should run until the grader says bye), or ""."""
    import queue
    while True:
        try:
            msg = kernel.kc.get_shell_msg(timeout=0)
        except queue.Empty:
            return ""
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_reply":
            c = msg["content"]
            what = f"{str(c.get('ename', ''))[:100]}: {str(c.get('evalue', ''))[:300]}" \
                if c.get("status") == "error" else "it returned at once"
            return f"the call server in your kernel stopped before serving ({what})"


class JudgeRun:
    """One judge process for the tests cells of a grade: :meth:`spawn` it early (it imports memlab
    while the student's cells run), :meth:`run` it after them, :meth:`close` it always."""

    def __init__(self, host: Host, tests: list[TestCell], socket_dir: str | None = None,
                 peer_uid: int | None = None, memory: int | None = 4 << 30) -> None:
        self.host, self.tests, self.memory = host, tests, memory
        self._own_dir = None
        if socket_dir is None:
            self._own_dir = tempfile.mkdtemp(prefix="memlab-calls-")     # 0700: this user only
            socket_dir = self._own_dir
        self.channel = KernelChannel(host, socket_dir, os.getuid() if peer_uid is None else peer_uid)
        self.proc: subprocess.Popen | None = None
        self.stderr = ""
        self._err = None
        self._cwd = None

    def spawn(self) -> None:
        here = Path(__file__).resolve().parent
        self._err = tempfile.TemporaryFile()
        self._cwd = tempfile.TemporaryDirectory(prefix="memlab-judge-")
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", BOOT, str(here.parents[1])],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     cwd=self._cwd.name)
        os.set_blocking(self.proc.stdin.fileno(), False)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.reader = FrameReader(self.proc.stdout.fileno(), limit=MAX_FRAME)

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
        for d in ("_cwd",):
            if getattr(self, d) is not None:
                getattr(self, d).cleanup()
                setattr(self, d, None)
        if self._own_dir is not None:
            import shutil
            shutil.rmtree(self._own_dir, ignore_errors=True)
            self._own_dir = None

    def _send(self, obj: dict) -> None:
        data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
        try:
            send_all(self.proc.stdin.fileno(), frame(data), self.host.deadline)
        except OSError as e:
            if e.errno != errno.EPIPE:
                raise

    def _read(self, deadline: float) -> dict | None:
        while time.monotonic() < deadline:
            got = self.reader.read(min(1.0, max(0.0, deadline - time.monotonic())))
            if got is not None:
                return json.loads(got.decode("utf-8")) if got else {}
            if self.reader.closed:
                return None
        return None

    def run(self) -> dict[str, dict]:
        """Run the judge; per tests cell id: ``{"checks": [[name, points, passed, feedback]], "error"}``
        (a cell missing from the answer was not judged).  Each verdict goes to ``host.judged``."""
        s = self.host
        if self.proc is None:
            self.spawn()
        results: dict[str, dict] = {}
        try:
            self._send({"forbid": list(s.sol.forbid), "memory": self.memory,
                        "seconds": s.total_timeout + 30,
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
        except (OSError, ValueError, TimeoutError) as e:          # the judge went away, or time is up
            self.stderr = f"{type(e).__name__}: {e}"
        finally:
            self.close()
        return results

    def _relay(self, msg: dict) -> dict:
        s = self.host
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

"""A Jupyter kernel that survives what student code does to it.

:class:`Kernel` runs code in an IPython kernel started with **this** interpreter
(``sys.executable``): it writes a private kernel spec whose ``argv[0]`` is ``sys.executable`` (in a
temporary directory, removed on shutdown), so grading uses the same environment as the ``memlab``
command, whatever ``python3`` kernel spec is installed; after start it checks the kernel's
``sys.executable``; ``MEMLAB_GRADING_PYTHON`` may name another, see
:func:`.isolate.kernel_python`).  Each :meth:`Kernel.execute` has a time limit; on time-out the kernel is
interrupted (SIGINT), and if it does not stop within a grace period it is restarted.  A kernel that
dies (``os._exit``, a crash) is noticed within a fraction of a second.  Captured text output is
truncated to a limit, so a cell printing megabytes does not flood the grader.

It speaks to the kernel with :mod:`jupyter_client` directly (rather than through nbclient's
notebook loop) to control these cases exactly.
"""
from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

from ..errors import GradingError
from .isolate import kernel_python

KERNEL_NAME = "memlab-grader-python"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


@dataclass
class Execution:
    """The outcome of one :meth:`Kernel.execute`."""
    status: str                 # "ok", "error", "timeout" or "dead"
    text: str = ""              # stdout, stderr, results and error text, truncated
    ename: str = ""
    evalue: str = ""
    truncated: int = 0          # characters of output dropped
    seconds: float = 0.0
    exit_requested: bool = False  # the code called exit() or quit(): the kernel is about to stop

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _Capture:
    def __init__(self, limit: int):
        self.limit, self.parts, self.size, self.dropped = limit, [], 0, 0

    def add(self, text: str) -> None:
        room = self.limit - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))

    def text(self) -> str:
        s = "".join(self.parts)
        if self.dropped:
            s += f"\n... [output truncated: {self.dropped} more characters]\n"
        return s


class Watchdog:
    """A time limit on the kernel: :meth:`expired` interrupts it (SIGINT) once *limit* seconds have
    passed, and says True when it has not stopped *grace* seconds later (it must then be restarted).
    One rule for a cell that runs too long and for a call of the judge's that does."""

    def __init__(self, kernel: "Kernel", limit: float, grace: float, start: float | None = None) -> None:
        self.kernel, self.grace = kernel, grace
        self.deadline = (time.monotonic() if start is None else start) + limit
        self.interrupted_at: float | None = None

    @property
    def interrupted(self) -> bool:
        """Whether the grader sent the interrupt (what makes a time-out, whatever the kernel raised)."""
        return self.interrupted_at is not None

    def expired(self) -> bool:
        now = time.monotonic()
        if self.interrupted_at is None and now > self.deadline:
            try:
                self.kernel.km.interrupt_kernel()
            except Exception:  # noqa: BLE001  (a kernel that is gone: the next check sees it)
                pass
            self.interrupted_at = now
        return self.interrupted_at is not None and now > self.interrupted_at + self.grace


class Kernel:
    """One IPython kernel of ``sys.executable``, restartable.  Use as a context manager."""

    def __init__(self, cwd: str | os.PathLike | None = None, startup_timeout: float = 60.0,
                 env: dict | None = None, popen_kwargs: dict | None = None):
        self.cwd = str(cwd) if cwd is not None else None
        self.startup_timeout = startup_timeout
        self.env = dict(os.environ if env is None else env)
        self.env.setdefault("MPLBACKEND", "Agg")
        self.env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
        # The address space a kernel needs does not depend on the machine's core count: one BLAS
        # thread and two malloc arenas (else 64 MB of address space per thread; see MIN_MEMORY).
        for k, v in (("OPENBLAS_NUM_THREADS", "1"), ("OMP_NUM_THREADS", "1"), ("MKL_NUM_THREADS", "1"),
                     ("MALLOC_ARENA_MAX", "2")):
            self.env.setdefault(k, v)
        self.popen_kwargs = dict(popen_kwargs or {})    # e.g. user/group: see memlab.grading.isolate
        self.argv_prefix: list[str] = []                  # e.g. its own mount namespace (.namespace)
        self.group: int | None = self.popen_kwargs.get("group")   # the kernel user's group, if another
        self.connection_dir: str | None = None            # where the connection file goes, if set
        self.profile_root: str | None = None              # where each start makes a fresh empty profile
        self.profile_dir: str | None = None               # the IPython profile (--profile-dir), if set
        self.on_start: Callable[[int], None] | None = None  # called with the kernel's pid at start
        self.restarts = 0
        self.km: KernelManager | None = None
        self.kc = None
        self._specdir: str | None = None

    # -------------------------------------------------------------------------------- lifecycle
    def _fresh_profile(self) -> None:
        """A new, empty, read-only IPython profile for this start (none of an earlier kernel's
        files, e.g. a startup file it planted, can run in this one)."""
        from .privatefiles import empty_profile
        d = tempfile.mkdtemp(prefix=f"kernel-{self.restarts}-", dir=self.profile_root)
        _, self.profile_dir = empty_profile(d)
        os.chmod(d, 0o555)
        self.env["IPYTHONDIR"] = os.path.dirname(self.profile_dir)
        self.env.pop("PYTHONSTARTUP", None)

    def _spec_manager(self) -> KernelSpecManager:
        if self.profile_root is not None:
            self._fresh_profile()
        if self._specdir is None:
            self._specdir = tempfile.mkdtemp(prefix="memlab-kernel-")
        d = os.path.join(self._specdir, KERNEL_NAME)
        os.makedirs(d, exist_ok=True)
        spec = {"argv": self.argv_prefix + [kernel_python(), "-m", "ipykernel_launcher", "-f", "{connection_file}",
                         "--HistoryManager.hist_file=:memory:"]
                + ([f"--profile-dir={self.profile_dir}"] if self.profile_dir else []),
                "display_name": "memlab grader (Python)", "language": "python",
                "interrupt_mode": "signal"}
        with open(os.path.join(d, "kernel.json"), "w") as f:
            json.dump(spec, f)
        return KernelSpecManager(kernel_dirs=[self._specdir])

    def start(self) -> None:
        self.km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=self._spec_manager())
        try:
            if self.connection_dir is not None:
                # A kernel running as another user must read its connection file: it goes in a
                # directory of root's that the user can read but not change; the file stays root's,
                # readable by the user's group (no path the user controls is ever followed).
                self.km.cache_ports = False       # keep the ports written in the file
                self.km.connection_file = os.path.join(self.connection_dir, f"kernel-{self.restarts}.json")
                self.km.write_connection_file()
                gid = self.group
                if gid is not None:
                    os.chown(self.km.connection_file, -1, gid, follow_symlinks=False)
                    os.chmod(self.km.connection_file, 0o640)
            # The kernel's own stdout/stderr (fd 1 and 2, e.g. C code printing) go nowhere.
            self.km.start_kernel(cwd=self.cwd, env=self.env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, **self.popen_kwargs)
            if self.on_start is not None:
                self.on_start(self.km.provisioner.process.pid)
            self.kc = self.km.client()
            self.kc.allow_stdin = False
            self.kc.start_channels()
            self.kc.wait_for_ready(timeout=self.startup_timeout)
        except Exception as e:  # noqa: BLE001  (any start failure is a grading failure)
            self._stop()
            raise GradingError(f"cannot start a Python kernel ({kernel_python()} -m ipykernel_launcher): "
                               f"{e}; is ipykernel installed in this environment?") from None
        r = self.execute("import sys as _s; print(_s.executable); del _s", timeout=30, silent=True)
        exe = r.text.strip()
        if not r.ok or os.path.realpath(exe) != os.path.realpath(kernel_python()):
            self._stop()
            raise GradingError(f"the grading kernel runs {exe!r}, not the interpreter {kernel_python()!r}")

    def _stop(self) -> None:
        if self.kc is not None:
            try:
                self.kc.stop_channels()
            except Exception:  # noqa: BLE001
                pass
            self.kc = None
        if self.km is not None:
            try:
                self.km.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001
                pass
            try:
                self.km.cleanup_resources()
            except Exception:  # noqa: BLE001
                pass
            self.km = None

    def restart(self) -> None:
        self._stop()
        self.restarts += 1
        self.start()

    def shutdown(self) -> None:
        self._stop()
        if self._specdir is not None:
            shutil.rmtree(self._specdir, ignore_errors=True)
            self._specdir = None

    def __enter__(self) -> "Kernel":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def alive(self) -> bool:
        try:
            return self.km is not None and self.km.is_alive()
        except Exception:  # noqa: BLE001
            return False

    # -------------------------------------------------------------------------------- execution
    def execute(self, code: str, timeout: float, max_output: int = 20_000, grace: float | None = None,
                silent: bool = False, store_history: bool | None = None,
                tracebacks: bool = True) -> Execution:
        """Run *code*; never raises for what the code does.

        The status (``"ok"`` or ``"error"``), ``ename`` and ``evalue`` come from the kernel's
        ``execute_reply``, not from the messages the code publishes.  *store_history* defaults to
        ``not silent``; with ``tracebacks=False`` error tracebacks are left out of ``text``.

        Status ``"timeout"``: the time limit passed; the kernel was interrupted, or, if it did not
        stop within *grace* seconds (default: min(3, timeout)), it is left busy and
        :attr:`needs_restart` says so.
        Status ``"dead"``: the kernel process ended.  ``exit_requested``: the code called ``exit()``
        or ``quit()``, so the kernel stops right after its reply.  After any of these, call
        :meth:`restart` if :attr:`needs_restart`.
        """
        assert self.kc is not None and self.km is not None
        t0 = time.monotonic()
        grace = min(3.0, timeout) if grace is None else grace
        cap = _Capture(max_output)
        res = Execution("ok")
        self.needs_restart = False
        if store_history is None:
            store_history = not silent
        msg_id = self.kc.execute(code, silent=silent, store_history=store_history, allow_stdin=False,
                                 stop_on_error=False)
        watch, last_alive_check = Watchdog(self, timeout, grace, start=t0), t0
        status = None
        while True:
            now = time.monotonic()
            if now - last_alive_check > 0.3:
                last_alive_check = now
                if not self.alive():
                    res.status, self.needs_restart = "dead", True
                    break
            if watch.expired():
                res.status, self.needs_restart = "timeout", True
                break
            try:
                msg = self.kc.get_iopub_msg(timeout=0.1)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                cap.add(content.get("text", ""))
            elif kind == "error":
                if tracebacks:
                    cap.add(strip_ansi("\n".join(str(t) for t in content.get("traceback", []))) + "\n")
            elif kind in ("display_data", "execute_result"):
                data = content.get("data", {})
                if "text/plain" in data:
                    cap.add(str(data["text/plain"]) + "\n")
            elif kind == "status" and content.get("execution_state") == "idle":
                break
        if res.status == "ok":
            reply = self._reply(msg_id)
            if reply is None:       # no reply: the kernel died, or the code never let it answer
                res.status, self.needs_restart = "dead", True
            else:
                res.status = "ok" if reply.get("status") == "ok" else "error"
                # exit() and quit() do not raise: ipykernel answers, then stops its event loop a
                # moment later. The reply's payload says so; the caller must restart the kernel.
                res.exit_requested = any(
                    isinstance(p, dict) and p.get("source") == "ask_exit" and not p.get("keepkernel")
                    for p in reply.get("payload") or [])
                if res.exit_requested:
                    self.needs_restart = True
                if res.status == "error":
                    res.ename = str(reply.get("ename", ""))[:200]
                    res.evalue = str(reply.get("evalue", ""))[:max_output]
            if watch.interrupted:
                res.status = "timeout"
        res.text, res.truncated = cap.text(), cap.dropped
        res.seconds = time.monotonic() - t0
        return res

    def _reply(self, msg_id: str) -> dict | None:
        end = time.monotonic() + 10      # sent before the idle status: only a loaded machine waits
        while time.monotonic() < end:
            try:
                msg = self.kc.get_shell_msg(timeout=0.2)
            except queue.Empty:
                if not self.alive():
                    return None
                continue
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_reply":
                return msg["content"]
        return None

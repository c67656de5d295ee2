"""Keep the graded code away from what grades it: another user, a private directory, no survivors.

When the grader runs as root (Gradescope's container, CI), :class:`Sandbox`:

* runs the kernel as the unprivileged user ``memlab-grader`` (created with ``useradd`` if missing;
  ``nobody`` if it cannot be), with no supplementary groups, a minimal environment, and as working
  directory a private temporary directory holding only a copy of the notebook;
* takes a lock, so two isolated runs never share that user at once, and limits that user to
  ``MAX_PROCESSES`` processes (the kernel lowers its own ``RLIMIT_NPROC``: a fork bomb stops there);
* on exit ends **every** process of that user (detached ones included: a process running as the
  user sends ``kill(-1, SIGKILL)``, then ``/proc`` is checked), removes the directory and the
  user's files in ``/tmp``, ``/var/tmp`` and ``/dev/shm``.  Only then does the grader write results.json.

The solution was read into memory before (:func:`memlab.grading.grade.load`); :attr:`Sandbox.notes`
warns if its file is readable by that user anyway.  When not root, or when that user cannot run this
interpreter, the run is not isolated and a note says so.
"""
from __future__ import annotations

import ctypes
import fcntl
import functools
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

USER = "memlab-grader"
LOCK = "/run/memlab-grader.lock"
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm")
MAX_PROCESSES = 512          # processes and threads of the grading user (RLIMIT_NPROC), when isolated


def can_isolate() -> bool:
    """Whether this process may run the kernel as another user (it is root, on a POSIX system)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def user_name(slot: int = 0) -> str:
    """The grading user of worker *slot* (``memlab grade-all --jobs``): ``memlab-grader``, then
    ``memlab-grader-1``, ...; each has its own lock, so parallel workers never share a user."""
    return USER if slot == 0 else f"{USER}-{int(slot)}"


def grader_user(slot: int = 0) -> tuple[int, int, str]:
    """``(uid, gid, name)`` of the unprivileged grading user of *slot*, creating it if missing."""
    name = user_name(slot)
    try:
        p = pwd.getpwnam(name)
        return p.pw_uid, p.pw_gid, name
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    if os.path.exists(useradd):
        subprocess.run([useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", name], capture_output=True, timeout=60)
        try:
            p = pwd.getpwnam(name)
            return p.pw_uid, p.pw_gid, name
        except KeyError:
            pass
    p = pwd.getpwnam("nobody")
    return p.pw_uid, p.pw_gid, "nobody"


@functools.lru_cache(maxsize=None)
def user_can_run_kernel(uid: int, gid: int) -> str:
    """Why *uid* cannot start this interpreter's kernel ("" if it can)."""
    d = tempfile.mkdtemp(prefix="memlab-probe-")
    try:
        os.chown(d, uid, gid)
        r = subprocess.run([sys.executable, "-c", "import ipykernel, memlab.testing"], user=uid, group=gid,
                           extra_groups=[], cwd=d, env=_env(d, None), capture_output=True, text=True,
                           timeout=120)
        return "" if r.returncode == 0 else (r.stderr.strip().splitlines() or ["it failed"])[-1][:300]
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)[:300]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _env(home: str, base: dict | None) -> dict:
    base = os.environ if base is None else base
    env = {k: base[k] for k in ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "PYTHONHASHSEED") if k in base}
    env.update(HOME=home, TMPDIR=home, MPLBACKEND="Agg", MPLCONFIGDIR=os.path.join(home, ".mpl"),
               IPYTHONDIR=os.path.join(home, ".ipython"), NUMBA_CACHE_DIR=os.path.join(home, ".numba"),
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def readable_by_others(path: Path) -> bool:
    """Whether a user who is neither the owner nor in the group of *path* and its directories can read it."""
    try:
        p = path.resolve()
        for d in p.parents:
            if not os.stat(d).st_mode & stat.S_IXOTH:
                return False
        return bool(os.stat(p).st_mode & stat.S_IROTH)
    except OSError:
        return False


def _uid_processes(uid: int) -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                status = f.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uids = fields.get("Uid", "").split()
        if str(uid) in uids[:2] and not fields.get("State", "").strip().startswith(("Z", "X")):
            pids.append(int(name))
    return pids


def kill_all(uid: int, gid: int) -> int:
    """End every process of *uid*; returns how many were still alive before the last round."""
    left = 0
    for _ in range(20):
        pids = _uid_processes(uid)
        if not pids:
            return 0
        left = len(pids)
        try:   # a process of that user may signal them all at once, forks included
            subprocess.run([sys.executable, "-S", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"],
                           user=uid, group=gid, extra_groups=[], env={}, cwd="/", timeout=10,
                           capture_output=True)
        except (OSError, subprocess.SubprocessError):
            pass
        for pid in _uid_processes(uid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
    return left


def _remove_user_files(uid: int) -> None:
    for top in SHARED_TMP:
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for e in entries:
            try:
                if e.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    os.unlink(e.path)
            except OSError:
                pass


_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37


def _subreaper(on: bool | None = None) -> bool:
    """Make orphaned descendants become this process's children (Linux); returns the former setting."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        was = ctypes.c_int(0)
        libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0)
        if on is not None:
            libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
        return bool(was.value)
    except (OSError, AttributeError):
        return False


def _children() -> set[int]:
    me, out = str(os.getpid()), set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[1] == me:
                out.add(int(name))
    return out


def end_orphans(before: set[int]) -> int:
    """Kill (and reap) this process's children that are not in *before*: with the subreaper set,
    the processes graded code left behind, detached ones included.  Returns how many."""
    n = 0
    for _ in range(20):
        extra = _children() - before
        if not extra:
            break
        for pid in extra:
            try:
                os.kill(pid, signal.SIGKILL)
                n += 1
            except OSError:
                pass
        for pid in extra:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
    return n


class Sandbox:
    """Where and as whom the kernel runs; a context manager (see the module docstring)."""

    def __init__(self, notebook: Path, data: bytes, isolate: bool | None = None, env: dict | None = None,
                 solution: Path | None = None, slot: int = 0):
        self.notebook, self.data, self.base_env = notebook, data, env
        self.slot = slot
        self.want = can_isolate() if isolate is None else isolate
        self.solution = solution
        self.isolated = False
        self.notes: list[str] = []
        self.cwd: str = str(notebook.resolve().parent)
        self.env: dict | None = env
        self.popen_kwargs: dict = {}
        self.rlimits: dict[str, int] = {}       # the kernel lowers these itself (guard.setup_code)
        self.connection_dir: str | None = None
        self._dir: str | None = None
        self._lock = None
        self._user: tuple[int, int, str] | None = None

    def __enter__(self) -> "Sandbox":
        self._before = _children()
        self._was_reaper = _subreaper(True)
        if not self.want:
            self.notes.append("not isolated: the grader is not running as root, so the graded code runs "
                              "with your rights (it could read or change the solution); the processes it "
                              "started are ended before results.json is written")
            return self
        if not can_isolate():
            from ..errors import GradingError
            raise GradingError("isolation was asked for, but only root can run the kernel as another user")
        uid, gid, name = grader_user(self.slot)
        why = user_can_run_kernel(uid, gid)
        if why:
            self.notes.append(f"not isolated: the user {name} cannot start this interpreter's kernel "
                              f"({why}); make the Python environment readable by other users")
            return self
        # one lock per grading user ('nobody', the fallback, is shared: its runs take turns)
        lock = LOCK if self.slot == 0 or name == "nobody" else \
            LOCK.replace(".lock", f"-{int(self.slot)}.lock")
        self._lock = open(lock if os.access("/run", os.W_OK) else os.path.join(tempfile.gettempdir(),
                          os.path.basename(lock)), "a")
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self._user = (uid, gid, name)
        kill_all(uid, gid)                 # leftovers of a run that was itself killed
        self._dir = tempfile.mkdtemp(prefix="memlab-grade-")
        os.chmod(self._dir, 0o700)
        name_ = self.notebook.name if self.notebook.name.endswith(".ipynb") else "submission.ipynb"
        copy = os.path.join(self._dir, name_)
        with open(copy, "wb") as f:
            f.write(self.data)
        for p in (self._dir, copy):
            os.chown(p, uid, gid)
        self.cwd = self.connection_dir = self._dir
        self.env = _env(self._dir, self.base_env)
        self.popen_kwargs = {"user": uid, "group": gid, "extra_groups": []}
        self.rlimits["RLIMIT_NPROC"] = MAX_PROCESSES     # per user: a fork bomb stops there
        self.isolated = True
        if self.solution is not None and readable_by_others(self.solution):
            self.notes.append(f"warning: the solution file {self.solution} is readable by other users, so "
                              f"the graded code could read it; keep solutions readable by root only "
                              "(the autograder bundle does)")
        return self

    def __exit__(self, *exc) -> None:
        end_orphans(self._before)
        if not self._was_reaper:
            _subreaper(False)
        if self._user is not None:
            uid, gid, _ = self._user
            left = kill_all(uid, gid)
            if left:
                self.notes.append(f"warning: {left} process(es) of the grading user could not be ended")
            _remove_user_files(uid)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()

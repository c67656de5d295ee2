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

The solution was read into memory before (:func:`memlab.grading.inputs.load`); :attr:`Sandbox.notes`
warns if its file is readable by that user anyway.  When not root, or when that user cannot run this
interpreter, the run is not isolated and a note says so; whether another user can run the
interpreter is checked first (as ``nobody``), before any user is created.

Root never writes or changes ownership by path inside the grading user's directory: the notebook's
copy is written through a file descriptor opened with ``O_NOFOLLOW`` before the directory is handed
over, and the kernel's connection file lives in a root-owned directory the user can only read.
``HOME`` and ``IPYTHONDIR`` point to a root-owned, read-only, empty IPython profile (given to the
kernel with ``--profile-dir``), so no startup file or configuration of anyone runs in the kernel.
Memory: one limit for all the run's processes through a cgroup (:mod:`.cgroup`) where the host
offers one; else each process is limited on its own (``RLIMIT_AS``) and the user to
``MAX_PROCESSES`` processes, and a note says so.  The kernel starts in a mount namespace of its
own (:mod:`.namespace`) on a private tmpfs; processes are ended by :mod:`.reaper`.
"""
from __future__ import annotations

import fcntl
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .privatefiles import PROFILE_SUBDIRS, empty_profile, make_removable, write_new  # noqa: F401
from .reaper import (_children, _uid_processes, end_orphans, kill_all as _kill_all, mount_private,
                     remove_user_files, subreaper, unmount)

USER = "memlab-grader"
LOCK = "/run/memlab-grader.lock"
MAX_PROCESSES = 512          # processes and threads of the grading user (RLIMIT_NPROC), when isolated


def kernel_python() -> str:
    """The interpreter the grading kernel runs: this one (``sys.executable``), or the one named by
    ``MEMLAB_GRADING_PYTHON`` (set by whoever runs the grader, e.g. ``make test``: a venv made from a
    system Python that the grading user can read, with memlab installed in it)."""
    return os.environ.get("MEMLAB_GRADING_PYTHON") or sys.executable


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


def probe_user() -> tuple[int, int]:
    """``(uid, gid)`` of ``nobody``, present on every system: the interpreter check runs as it
    before any grading user is created."""
    try:
        p = pwd.getpwnam("nobody")
        return p.pw_uid, p.pw_gid
    except KeyError:
        return 65534, 65534


def lock_path(slot: int, name: str) -> str:
    """The lock file of the grading user *name* of *slot*: one per user ('nobody', the fallback,
    is shared: its runs take turns); whoever holds it (``flock``) is the only grade of that user."""
    lock = LOCK if slot == 0 or name == "nobody" else LOCK.replace(".lock", f"-{int(slot)}.lock")
    return lock if os.access("/run", os.W_OK) else os.path.join(tempfile.gettempdir(),
                                                                 os.path.basename(lock))


#: How to give the grading user an interpreter it can run (said when it cannot).
VENV_HINT = ("make the grading environment from a system Python that other users can read, e.g. "
             "`/usr/bin/python3 -m venv /opt/memlab-venv && /opt/memlab-venv/bin/pip install -r "
             "requirements.lock . && chmod -R a+rX /opt/memlab-venv` (docs/instructors.md, "
             "\"Exercises and grading\"); an interpreter under /root (pyenv's default) cannot be "
             "run by another user")


def user_can_run_kernel(uid: int, gid: int) -> str:
    """Why *uid* cannot start the grading kernel's interpreter (:func:`kernel_python`; "" if it can)."""
    return _can_run(uid, gid, kernel_python())


_CAN_RUN: set[tuple[int, int, str]] = set()      # probes that succeeded (a failure is asked again)


def _can_run(uid: int, gid: int, python: str) -> str:
    if (uid, gid, python) in _CAN_RUN:
        return ""
    d = tempfile.mkdtemp(prefix="memlab-probe-")       # root's, readable: the probe writes nothing
    try:
        os.chmod(d, 0o755)
        r = subprocess.run([python, "-c", "import ipykernel, memlab.testing"], user=uid, group=gid,
                           extra_groups=[], cwd=d, env=_env(d, None), capture_output=True, text=True,
                           timeout=120)
        if r.returncode == 0:
            _CAN_RUN.add((uid, gid, python))
            return ""
        return (r.stderr.strip().splitlines() or ["it failed"])[-1][:300]
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


def kill_all(uid: int, gid: int) -> int:
    """End every process of *uid* (see :func:`.reaper.kill_all`); how many were left before the last round."""
    return _kill_all(uid, gid, kernel_python())


def isolation_problem(isolate: bool | None = None) -> str:
    """Why a grading run would not be isolated, and how to fix it ("" when it would be).  Creates
    no user: the interpreter is tried as ``nobody``."""
    if isolate is False:
        return "isolation was turned off (--no-isolate); leave that option out"
    if not can_isolate():
        return ("the grader is not running as root, so the graded code would run with the grader's "
                "own rights; run the grading as root (e.g. in the autograder's container, or with "
                "sudo), which runs the kernel as the unprivileged user " + USER)
    why = user_can_run_kernel(*probe_user())
    if why:
        return (f"another user cannot start this interpreter's kernel ({kernel_python()}: {why}); "
                + VENV_HINT)
    from .namespace import problem
    why = problem()
    if why:
        return (f"the kernel cannot be given a view of its own of the filesystem ({why}), so it "
                "could read any file of this host that other users can read")
    return ""


class Sandbox:
    """Where and as whom the kernel runs; a context manager (see the module docstring)."""

    def __init__(self, notebook: Path, data: bytes, isolate: bool | None = None, env: dict | None = None,
                 solution: Path | None = None, slot: int = 0, memory_limit: int | None = None):
        self.notebook, self.data, self.base_env = notebook, data, env
        self.slot = slot
        self.want = can_isolate() if isolate is None else isolate
        self.solution = solution
        self.memory_limit = memory_limit
        self.isolated = False
        self.why_not = ""                       # why the run is not isolated (for a refusal)
        self.notes: list[str] = []
        self.cwd: str = str(notebook.resolve().parent)
        self.env: dict | None = env
        self.popen_kwargs: dict = {}
        self.argv_prefix: list[str] = []        # the kernel's own mount namespace (.namespace)
        self.uid: int | None = None             # the kernel's user and group, when another's
        self.gid: int | None = None
        self.view = False                       # the kernel sees only what it needs (.namespace)
        self.rlimits: dict[str, int] = {}       # the kernel lowers these itself (guard.setup_code)
        self.connection_dir: str | None = None
        self.profile_root: str | None = None    # the kernel makes a fresh empty profile there per start
        self.group = None                       # the run's cgroup (.cgroup.RunGroup), if any
        self._dir: str | None = None
        self._root_dir: str | None = None
        self._lock = None
        self._view_dir: str | None = None
        self._mounted: str | None = None        # the private directory's tmpfs
        self._user: tuple[int, int, str] | None = None

    def _not_isolated(self, why: str, note: str) -> "Sandbox":
        self.why_not = why
        self.notes.append(note)
        self._private_profile()
        return self

    def _private_profile(self) -> None:
        """Not isolated: a fresh, read-only, empty IPython profile all the same, so no startup file
        (of this user, or planted by an earlier run) runs in the kernel."""
        self._root_dir = self.profile_root = tempfile.mkdtemp(prefix="memlab-run-")
        self.env = dict(os.environ if self.base_env is None else self.base_env)
        self.env.pop("PYTHONSTARTUP", None)
        # HOME too is the run's own, empty, removed with it: code that writes to ``~`` (a startup
        # file in ~/.ipython, say) leaves nothing for the user's own kernels.  Code that looks the
        # real home directory up can still write there: only isolation stops that.
        home = os.path.join(self._root_dir, "home")
        os.mkdir(home, 0o700)
        self.env.update(HOME=home, MPLCONFIGDIR=os.path.join(home, ".mpl"))

    def adopt(self, pid: int) -> None:
        """The kernel started as *pid*: move it into the run's cgroup (before any student code)."""
        if self.group is not None:
            try:
                self.group.add(pid)
            except OSError as e:
                self.notes.append(f"warning: the kernel could not be put under the memory limit of "
                                  f"its cgroup ({e.strerror or e})")

    def _memory(self) -> None:
        from .cgroup import MAX_PIDS, RunGroup
        mb = f"{self.memory_limit / 2**20:g} MB" if self.memory_limit else "no limit"
        if can_isolate():
            group = RunGroup(f"memlab-grade-{os.getpid()}-{int(self.slot)}", self.memory_limit)
            if group.create():
                self.group = group
                if self.memory_limit:
                    self.notes.append(f"memory: {mb} for all the graded code's processes together "
                                      f"({group.kind}), at most {MAX_PIDS} processes")
                return
        extra = f", and the grading user to {MAX_PROCESSES} processes" if self.isolated else ""
        if self.memory_limit:
            self.notes.append(f"memory: each process of the graded code is limited to {mb} of "
                              f"address space{extra}; this host offers no cgroup memory controller, so "
                              "several processes together can use more")

    def __enter__(self) -> "Sandbox":
        self._before = _children()
        self._was_reaper = subreaper(True)
        try:
            return self._enter()
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def _view(self, uid: int, gid: int) -> None:
        """Start the kernel in a mount namespace of its own (:mod:`.namespace`), or say why not."""
        from .namespace import command, interpreter_paths, problem
        why = problem()
        if why:
            self.why_not = f"the kernel cannot be given a view of its own of the filesystem ({why})"
            self.notes.append(f"warning: {self.why_not}, so the graded code can read every file of "
                              "this host that other users can read (a copy of a solution among them)")
            return
        self._view_dir = tempfile.mkdtemp(prefix="memlab-view-")
        os.chmod(self._view_dir, 0o755)
        ro = interpreter_paths(kernel_python()) + [self._root_dir]
        self.argv_prefix = command(self._view_dir, uid, gid, self._dir, ro, [self._dir])
        self.popen_kwargs = {}                  # root starts it; the namespace drops to the user
        self.view = True

    def _take_lock(self, name: str) -> None:
        self._lock = open(lock_path(self.slot, name), "a")
        fcntl.flock(self._lock, fcntl.LOCK_EX)

    def _enter(self) -> "Sandbox":
        if not self.want:
            self._not_isolated("--no-isolate was given" if can_isolate() else
                               "the grader is not running as root",
                               "not isolated: " + ("isolation was turned off" if can_isolate() else
                                                   "the grader is not running as root")
                               + ", so the graded code runs with your rights (it could read or change the "
                               "solution); the processes it started are ended before results.json is written")
            self._memory()
            return self
        if not can_isolate():
            from ..errors import GradingError
            raise GradingError("isolation was asked for, but only root can run the kernel as another user")
        # Could another user run this interpreter at all?  Asked as nobody, before creating anyone.
        why = user_can_run_kernel(*probe_user())
        name = "nobody"
        if not why:
            uid, gid, name = grader_user(self.slot)
            # the slot's lock first: another grade's end (every process of this user is ended)
            # must never kill this grade's probe of the interpreter
            self._take_lock(name)
            why = user_can_run_kernel(uid, gid)
        if why:
            self._not_isolated(
                f"another user ({name}) cannot start this interpreter's kernel ({kernel_python()}: {why})",
                f"not isolated: the user {name} cannot start this interpreter's kernel ({why}); "
                + VENV_HINT)
            self._memory()
            return self
        self._user = (uid, gid, name)
        kill_all(uid, gid)                 # leftovers of a run that was itself killed
        # Root's directory (read-only for the user): the connection files and the empty profile.
        self._root_dir = self.profile_root = tempfile.mkdtemp(prefix="memlab-run-")
        home, _ = empty_profile(self._root_dir)
        os.chown(self._root_dir, 0, gid)
        os.chmod(self._root_dir, 0o750)
        # The user's directory: the notebook's copy is written and handed over before the
        # directory is, so no path in it is ever followed by root afterwards.
        self._dir = tempfile.mkdtemp(prefix="memlab-grade-")
        os.chmod(self._dir, 0o700)
        why = mount_private(self._dir)
        if why:
            self.notes.append(f"warning: the private directory is not a size-limited filesystem ({why})")
        else:
            self._mounted = self._dir
        name_ = self.notebook.name if self.notebook.name.endswith(".ipynb") else "submission.ipynb"
        write_new(os.path.join(self._dir, name_), self.data, uid, gid)
        os.chown(self._dir, uid, gid, follow_symlinks=False)
        self.cwd = self._dir
        self.connection_dir = self._root_dir
        self.env = _env(self._dir, self.base_env)
        self.env["HOME"] = home                          # root's, read-only, empty
        self.popen_kwargs = {"user": uid, "group": gid, "extra_groups": []}
        self.uid, self.gid = uid, gid
        self._view(uid, gid)
        self.rlimits["RLIMIT_NPROC"] = MAX_PROCESSES     # per user: a fork bomb stops there
        self.isolated = True
        if self.solution is not None and readable_by_others(self.solution) and not self.view:
            self.notes.append(f"warning: the solution file {self.solution} is readable by other users, so "
                              f"the graded code could read it; keep solutions readable by root only "
                              "(the autograder bundle does)")
        self._memory()
        return self

    def __exit__(self, *exc) -> None:
        if self.group is not None:
            oom = self.group.out_of_memory()
            if oom and self.memory_limit:
                self.notes.append(f"the memory limit of {self.memory_limit / 2**20:g} MB for all the "
                                  f"graded code's processes was reached ({oom} time(s))")
            self.group.remove()
            self.group = None
        end_orphans(self._before)
        if not self._was_reaper:
            subreaper(False)
        if self._user is not None:
            uid, gid, _ = self._user
            left = kill_all(uid, gid)
            if left:
                self.notes.append(f"warning: {left} process(es) of the grading user could not be ended")
            remove_user_files(uid)
            self._user = None
        if self._mounted is not None:
            unmount(self._mounted)
            self._mounted = None
        for attr in ("_dir", "_root_dir", "_view_dir"):
            d = getattr(self, attr)
            if d is not None:
                make_removable(d)
                shutil.rmtree(d, ignore_errors=True)
                setattr(self, attr, None)
        if self._lock is not None:
            self._lock.close()
            self._lock = None

"""One memory limit for all the processes of a grading run: a Linux control group (cgroup).

``RLIMIT_AS`` bounds each process on its own: four children of 1 GB each pass a 1.5 GB limit.
A cgroup bounds their sum.  :class:`RunGroup` makes one, as root, under the grader's own cgroup:

* cgroup v2 (one ``cgroup2`` mount): ``memory.max`` (and ``memory.swap.max = 0``) and ``pids.max``;
* cgroup v1 (a ``memory`` and a ``pids`` hierarchy): ``memory.limit_in_bytes`` (and
  ``memory.memsw.limit_in_bytes``, so swap does not extend it) and ``pids.max``.

The kernel is moved into it right after it starts, before any student code runs; everything it
starts inherits the group.  When the host offers none (not root, a container without a writable
cgroup file system), :meth:`RunGroup.create` returns False and the caller says so in a note.
"""
from __future__ import annotations

import os
import signal
import time

#: processes and threads of one grading run (pids.max), like the grading user's RLIMIT_NPROC
MAX_PIDS = 512


def _mounts() -> list[tuple[str, str, set[str]]]:
    out = []
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
                    out.append((parts[1], parts[2], set(parts[3].split(","))))
    except OSError:
        pass
    return out


def _own() -> dict[str, str]:
    """This process's cgroup path per controller ("" for v2's unified hierarchy)."""
    own = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                for c in (ctrls.split(",") if ctrls else [""]):
                    own[c] = path
    except (OSError, ValueError):
        pass
    return own


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


class RunGroup:
    """A cgroup named *name* limiting memory to *memory* bytes (None: no memory limit) and the
    number of processes to *pids*."""

    def __init__(self, name: str, memory: int | None, pids: int = MAX_PIDS):
        self.name, self.memory, self.pids = name, memory, pids
        self.dirs: list[str] = []           # the cgroup directories made (one for v2, two for v1)
        self.kind = ""                       # "cgroup v2" or "cgroup v1" once made

    def create(self) -> bool:
        """Make the group; False (and nothing left behind) where the host offers none."""
        if not (hasattr(os, "geteuid") and os.geteuid() == 0):
            return False
        mounts, own = _mounts(), _own()
        try:
            v2 = [m for m in mounts if m[1] == "cgroup2"]
            v1 = {c: m for m in mounts if m[1] == "cgroup" for c in ("memory", "pids") if c in m[2]}
            if "memory" in v1:
                self._make_v1(v1, own)
            elif v2:
                self._make_v2(v2[0][0], own.get("", "/"))
            return bool(self.kind)
        except OSError:
            self.remove()
            return False

    def _mkdir(self, base: str) -> str:
        d = os.path.join(base, self.name)
        if os.path.isdir(d):                 # left by a run that was itself killed
            self._empty(d)
            os.rmdir(d)
        os.mkdir(d, 0o755)
        self.dirs.append(d)
        return d

    def _make_v2(self, mount: str, own: str) -> None:
        base = os.path.join(mount, own.lstrip("/"))
        ctrl = open(os.path.join(base, "cgroup.controllers")).read().split()
        if "memory" not in ctrl:
            return
        try:
            _write(os.path.join(base, "cgroup.subtree_control"), "+memory +pids")
        except OSError:
            pass
        d = self._mkdir(base)
        if not os.path.exists(os.path.join(d, "memory.max")):
            raise OSError("the memory controller is not enabled for child groups")
        if self.memory is not None:
            _write(os.path.join(d, "memory.max"), str(int(self.memory)))
            if os.path.exists(os.path.join(d, "memory.swap.max")):
                _write(os.path.join(d, "memory.swap.max"), "0")
        if os.path.exists(os.path.join(d, "pids.max")):
            _write(os.path.join(d, "pids.max"), str(self.pids))
        self.kind = "cgroup v2"

    def _make_v1(self, v1: dict, own: dict) -> None:
        d = self._mkdir(os.path.join(v1["memory"][0], own.get("memory", "/").lstrip("/")))
        if self.memory is not None:
            _write(os.path.join(d, "memory.limit_in_bytes"), str(int(self.memory)))
            try:       # swap counted too (only where the kernel accounts it)
                _write(os.path.join(d, "memory.memsw.limit_in_bytes"), str(int(self.memory)))
            except OSError:
                pass
        if "pids" in v1:
            p = self._mkdir(os.path.join(v1["pids"][0], own.get("pids", "/").lstrip("/")))
            _write(os.path.join(p, "pids.max"), str(self.pids))
        self.kind = "cgroup v1"

    def add(self, pid: int) -> None:
        """Move process *pid* (and its future children) into the group."""
        for d in self.dirs:
            _write(os.path.join(d, "cgroup.procs"), str(int(pid)))

    def out_of_memory(self) -> int:
        """How many times the memory limit was reached (0: never; at least 1 where the host only
        records the peak: a peak at the limit)."""
        def read(name: str) -> str:
            try:
                with open(os.path.join(self.dirs[0], name)) as f:
                    return f.read()
            except (OSError, IndexError):
                return ""
        if self.kind == "cgroup v2":
            events = dict(line.split() for line in read("memory.events").splitlines() if " " in line)
            return int(events.get("oom_kill", 0)) or int(events.get("max", 0))
        count = int(read("memory.failcnt").strip() or 0)
        peak, limit = read("memory.max_usage_in_bytes").strip(), read("memory.limit_in_bytes").strip()
        if not count and peak and limit and int(peak) >= int(limit) - (1 << 20):
            count = 1
        return count

    @staticmethod
    def _empty(d: str) -> None:
        for _ in range(50):
            try:
                pids = [int(p) for p in open(os.path.join(d, "cgroup.procs")).read().split()]
            except (OSError, ValueError):
                return
            if not pids:
                return
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)

    def remove(self) -> None:
        """End what is left in the group and remove it."""
        for d in reversed(self.dirs):
            self._empty(d)
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
        self.dirs = []

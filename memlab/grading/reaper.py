"""Ending the graded code's processes: every process of a grading user, and the grader's orphans.

:func:`kill_all` ends every process of the grading user (a process running as that user sends
``kill(-1, SIGKILL)``, then ``/proc`` is checked), :func:`remove_user_files` its files in the shared
temporary directories; :func:`subreaper` makes orphaned descendants the grader's children, which
:func:`end_orphans` ends (unisolated runs too).
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import time

SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm")


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


def kill_all(uid: int, gid: int, python: str) -> int:
    """End every process of *uid*; returns how many were still alive before the last round."""
    left = 0
    for _ in range(20):
        pids = _uid_processes(uid)
        if not pids:
            return 0
        left = len(pids)
        try:   # a process of that user may signal them all at once, forks included
            subprocess.run([python, "-S", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"],
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


def remove_user_files(uid: int) -> None:
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


def subreaper(on: bool | None = None) -> bool:
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




PRIVATE_SIZE = "256m"        # the private directory's filesystem, when isolated (a tmpfs)


def mount_private(path: str) -> str:
    """Mount a tmpfs of ``PRIVATE_SIZE`` on *path* (root's, empty); "" or why it could not be."""
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={PRIVATE_SIZE},mode=0700",
                            "memlab-private", path], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)[:200]
    return "" if r.returncode == 0 else (r.stderr.strip() or f"mount: status {r.returncode}")[:200]


def unmount(path: str) -> None:
    try:
        subprocess.run(["umount", "-l", path], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        pass



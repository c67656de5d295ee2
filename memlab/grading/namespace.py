"""The kernel's view of the filesystem: a mount namespace that shows it only what it needs.

When isolated (:mod:`.isolate`), the kernel starts as root in a new mount namespace (util-linux's
``unshare --mount``), which builds a root of its own on a small tmpfs and ``chroot``s into it as the
grading user.  That root holds only:

* the interpreter's files, read-only: ``/usr`` (the interpreter, its standard library, the shared
  libraries; ``/bin``, ``/lib`` and ``/lib64`` are its links) and the grading environment
  (``sys.prefix`` of :func:`.isolate.kernel_python`, e.g. ``/opt/memlab-grading/...``);
* the kernel's private directory (read-write) and the grader's directory of its connection file,
  profile and call socket (read-only);
* an empty ``/tmp`` and ``/dev/shm`` (tmpfs of :data:`TMP_SIZE`), ``/dev/null``, ``zero``,
  ``random``, ``urandom``, ``/proc``, and of ``/etc`` only the dynamic linker's cache and the local
  time zone.

No other path of the host exists there: not the course checkout, not ``/root``, not ``/home``, not
another grade's directory, so a readable copy of a solution elsewhere on the host cannot be opened.
Where the namespace cannot be made (not root, no ``unshare``, a container that forbids it),
:func:`problem` says why; the grade then says so in its notes and an official grade is refused
unless unisolated grades are allowed.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess

TMP_SIZE = "64m"            # /tmp and /dev/shm in the kernel's view
DEVICES = ("null", "zero", "random", "urandom")

#: Run by ``unshare --mount`` (as root, in the new namespace): $1 the new root, $2 the user:group,
#: $3 the working directory, $4 read-only paths, $5 read-write paths (colon-separated); then the
#: kernel's command.
SCRIPT = r"""
set -e
R=$1; who=$2; cwd=$3; ro=$4; rw=$5; shift 5
mount -t tmpfs -o size=4m,mode=0755 memlab-view "$R"
bind() { mkdir -p "$R$1"; mount --rbind "$1" "$R$1"; [ "$2" = ro ] && mount -o remount,bind,ro "$R$1"; true; }
mkdir -p "$R/tmp" "$R/dev/shm" "$R/proc" "$R/etc"
mount -t tmpfs -o size=__SIZE__,mode=1777 memlab-tmp "$R/tmp"
mount -t tmpfs -o size=__SIZE__,mode=1777 memlab-shm "$R/dev/shm"
IFS=:
for p in $ro; do [ -n "$p" ] && bind "$p" ro; done
for p in $rw; do [ -n "$p" ] && bind "$p" rw; done
unset IFS
for l in bin lib lib64 sbin; do [ -L "/$l" ] && ln -s "$(readlink "/$l")" "$R/$l"; done
for d in __DEVICES__; do touch "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done
mount -t proc proc "$R/proc"
for f in /etc/ld.so.cache /etc/localtime; do [ -f "$f" ] && touch "$R$f" && mount --bind "$f" "$R$f"; done
echo "$who" | { IFS=: read u g; echo "grader:x:$u:$g::/nonexistent:/usr/sbin/nologin" > "$R/etc/passwd"; }
mount -o remount,ro "$R"
exec chroot --userspec="$who" --groups="${who#*:}" "$R" /usr/bin/env --chdir="$cwd" "$@"
""".replace("__SIZE__", TMP_SIZE).replace("__DEVICES__", " ".join(DEVICES))


def _tools() -> tuple[str, ...] | None:
    found = tuple(shutil.which(t) for t in ("unshare", "chroot", "mount", "sh"))
    return found if all(found) else None


@functools.lru_cache(maxsize=1)
def problem() -> str:
    """Why the kernel cannot get a mount namespace of its own here ("" when it can)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "only root can give the kernel a mount namespace of its own"
    tools = _tools()
    if tools is None:
        return "util-linux's unshare, chroot or mount is missing (apt-get install util-linux mount)"
    try:
        r = subprocess.run([tools[0], "--mount", "--propagation", "private", tools[3], "-c",
                            "mount -t tmpfs -o size=1m memlab-probe /mnt"], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return f"unshare --mount failed ({e})"
    if r.returncode != 0:
        return "unshare --mount failed (" + (r.stderr.strip() or f"status {r.returncode}")[:200] + ")"
    return ""


def interpreter_paths(python: str) -> list[str]:
    """The directories the interpreter *python* needs: ``/usr`` and its prefixes outside it."""
    out = subprocess.run([python, "-I", "-c", "import sys; print(sys.prefix); print(sys.base_prefix)"],
                         capture_output=True, text=True, timeout=60)
    paths = ["/usr"]
    for p in out.stdout.split():
        p = os.path.realpath(p)
        if p != "/" and not any(p == q or p.startswith(q + "/") for q in paths):
            paths.append(p)
    return paths


def command(root: str, uid: int, gid: int, cwd: str, read_only: list[str],
            read_write: list[str]) -> list[str]:
    """The prefix of the kernel's command line that starts it in its own view (see the module
    docstring); *root* is an empty directory of root's."""
    unshare, chroot, mount, sh = _tools() or ("unshare", "chroot", "mount", "/bin/sh")
    bad = [p for p in read_only + read_write if ":" in p]
    if bad:
        raise ValueError(f"a path with ':' cannot be shown to the kernel: {bad[0]!r}")
    script = SCRIPT.replace("exec chroot ", f"exec {chroot} ").replace("\nmount ", f"\n{mount} ")
    script = script.replace("; mount ", f"; {mount} ").replace(" && mount ", f" && {mount} ")
    return [unshare, "--mount", "--propagation", "private", sh, "-c", script, "memlab-view", root,
            f"{uid}:{gid}", cwd, ":".join(read_only), ":".join(read_write)]




"""Files root makes for a grading run: never by a path the grading user controls.

:func:`empty_profile` makes an empty, read-only IPython profile (no startup file of anyone runs in
the kernel); :func:`write_new` creates a file through a descriptor (``O_EXCL | O_NOFOLLOW``) and
hands it over by that descriptor; :func:`make_removable` gives back write permission on read-only
directories before they are removed.
"""
from __future__ import annotations

import os


PROFILE_SUBDIRS = ("startup", "security", "log", "pid", "db")


def empty_profile(parent: str, gid: int | None = None) -> tuple[str, str]:
    """Make ``parent/home`` holding an empty IPython profile (``.ipython/profile_default`` with its
    sub-directories), read-only for everyone (and owned by root when run as root); returns
    ``(home, profile_dir)``.  *parent* must be a fresh directory of this process."""
    home = os.path.join(parent, "home")
    ipdir = os.path.join(home, ".ipython")
    profile = os.path.join(ipdir, "profile_default")
    for sub in PROFILE_SUBDIRS:
        os.makedirs(os.path.join(profile, sub))
    for d in [os.path.join(profile, sub) for sub in PROFILE_SUBDIRS] + [profile, ipdir, home]:
        os.chmod(d, 0o555)
    return home, profile


def write_new(path: str, data: bytes, uid: int | None = None, gid: int | None = None) -> None:
    """Create *path* (never following a link, never reusing a file) and write *data* through the
    descriptor; hand it to *uid* by that descriptor too."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(data)
        if uid is not None:
            os.fchown(fd, uid, gid if gid is not None else -1)
    finally:
        os.close(fd)


def make_removable(top: str) -> None:
    """Give back write permission on the read-only directories under *top* (root's own, or this
    user's when not isolated), without following links, so they can be removed."""
    for d, dirs, _ in os.walk(top, followlinks=False):
        for x in dirs:
            p = os.path.join(d, x)
            try:
                if os.stat(p, follow_symlinks=False).st_uid == os.geteuid() and not os.path.islink(p):
                    os.chmod(p, 0o700)
            except OSError:
                pass

"""What the browser tests share: the Chromium they drive and a free local port."""
from __future__ import annotations

import socket
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")


def why_skip() -> str | None:
    """Why a browser test cannot run here, or None when Chromium and Playwright are installed."""
    if not CHROMIUM.exists():
        return "Chromium is not installed at /usr/bin/chromium (make test installs it as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is missing (make test installs it from the lock)"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

"""`make lab`: JupyterLab serves the course root with lesson 00 first, and its
terminals find `memlab` (the venv's bin first on PATH, whatever the shell's rc files do)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
websocket = pytest.importorskip("websocket")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    opener = urllib.request.build_opener(NoRedirect)
    try:
        return opener.open(url, timeout=5)
    except urllib.error.HTTPError as e:
        return e


def test_make_lab_opens_the_course_root_and_its_terminal_finds_memlab():
    port, venv = _free_port(), Path(sys.prefix)
    if not (venv / ".memlab-installed").exists() or not (venv / "bin" / "memlab").exists():
        pytest.skip("needs the course's virtual environment (make's stamp file and bin/memlab)")
    env = dict(os.environ, JUPYTER_TOKEN="memlab-test")
    proc = subprocess.Popen(["make", "-s", "lab", f"VENV={venv}", f"PORT={port}"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(60):
            try:
                r = _get(f"{base}/?token=memlab-test")
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start")
        assert r.status == 302 and r.headers["Location"].startswith("/lab/tree/lessons/00_index.ipynb")
        names = {c["name"] for c in json.load(_get(f"{base}/api/contents?token=memlab-test"))["content"]}
        assert {"lessons", "exercises"} <= names
        req = urllib.request.Request(f"{base}/api/terminals?token=memlab-test", method="POST", data=b"")
        term = json.load(urllib.request.urlopen(req, timeout=5))["name"]
        ws = websocket.create_connection(f"ws://127.0.0.1:{port}/terminals/websocket/{term}?token=memlab-test",
                                         timeout=10)
        ws.settimeout(1)
        out, t0 = "", time.monotonic()
        while f"WHERE={venv}/bin/memlab=" not in out and time.monotonic() - t0 < 20:
            ws.send(json.dumps(["stdin", "echo WHERE=$(command -v memlab)=\r"]))
            try:
                while True:
                    msg = json.loads(ws.recv())
                    out += msg[1] if msg[0] == "stdout" else ""
            except websocket.WebSocketTimeoutException:
                pass
        assert f"WHERE={venv}/bin/memlab=" in out, out[-500:]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)

"""A stored stepper and slider in JupyterLab before the notebook runs (its outputs untrusted, so
sanitised): the first frame with its picture and one line saying to run the cell, never every
frame stacked; in Chromium, on a notebook executed here and opened unrun."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from browser import CHROMIUM, free_port, why_skip

CELLS = [
    "from memlab import viz\n"
    "frames = [viz.Frame('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"30\">'\n"
    "                    f'<text x=\"5\" y=\"20\">picture {i}</text></svg>', f'step {i}')\n"
    "          for i in range(3)]\n"
    "viz.Stepper(frames, title='three steps')",
    "import matplotlib.pyplot as plt\n"
    "def show(k=2):\n"
    "    fig, ax = plt.subplots(figsize=(2, 1.5))\n"
    "    ax.plot(range(k + 2))\n"
    "    ax.set_title(f'k = {k}')\n"
    "viz.interact(show, k=(1, 3))",
]




@pytest.fixture(scope="module")
def unrun(tmp_path_factory) -> Path:
    """A notebook executed here (as the lessons are stored), to be opened without running."""
    from nbclient import NotebookClient
    root = tmp_path_factory.mktemp("unrun")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    nbformat.write(nb, root / "steppers.ipynb")
    return root


@pytest.mark.browser
def test_an_unrun_notebook_shows_each_first_frame_and_one_line(unrun, tmp_path):
    reason = why_skip()
    if reason:
        pytest.skip(reason)
    settings = tmp_path / "settings" / "@jupyterlab"
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false"}))
    port = free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"))
    cmd = [str(Path(sys.executable).parent / "jupyter-lab"), "--no-browser", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=",
           "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={unrun}",
           "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        from playwright.sync_api import sync_playwright
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            page = b.new_page(viewport={"width": 1200, "height": 1200})
            page.goto(f"{url}/lab/tree/steppers.ipynb?reset", wait_until="domcontentloaded")
            page.wait_for_selector(".memlab-preview", timeout=60000)
            previews = page.locator(".memlab-preview")
            texts = [previews.nth(k).inner_text() for k in range(previews.count())]
            images = page.locator(".memlab-preview img")
            loaded = [images.nth(k).evaluate("i => i.complete && i.naturalWidth > 0")
                      for k in range(images.count())]
            stacked = page.locator(".memlab-fb-frame").count()
            page.screenshot(path=str(tmp_path / "unrun.png"))
            b.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:     # a loaded machine: JupyterLab slow to shut down
            proc.kill()
            proc.wait(timeout=15)
        log.close()
    assert "not trusted" in (tmp_path / "lab.log").read_text()    # sanitised, as a student sees it
    assert len(texts) == 2 and stacked == 0
    assert "frame 1 of 3: step 0" in texts[0] and "step 1" not in texts[0]
    assert "Run this cell to step through it (3 frames)." in texts[0]
    assert "Run this cell to move its sliders (3 frames)." in texts[1]
    assert len(loaded) == 2 and all(loaded), loaded    # each first frame's picture, drawn
    shutil.copy(tmp_path / "unrun.png", unrun / "unrun.png")

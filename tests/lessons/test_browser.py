"""The course as a student sees it: every lesson opened and run in JupyterLab in headless Chromium.

nbval runs notebooks in a kernel and never sees a widget that fails to render or a
picture that does not show; this test does. It starts JupyterLab on a free loopback
port (no token) over a copy of lessons/, opens each lesson, runs all cells, waits
for the kernel to go idle, and checks: no error output, every widget rendered,
every stepper moves when its slider goes to the last frame, Graphviz pictures are
inline SVG. One screenshot per lesson goes to ``artifacts/browser/``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from browser import CHROMIUM, free_port, why_skip

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
SHOTS = ROOT / "artifacts" / "browser"

pytestmark = pytest.mark.browser






@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server over a copy of lessons/ (autosave must not touch the repository)."""
    reason = why_skip()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("lab")
    root = work / "lessons"
    shutil.copytree(ROOT / "lessons", root)
    port = free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(work / "config"), JUPYTER_RUNTIME_DIR=str(work / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(work / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(work / "ws"))
    # Answer JupyterLab's "receive news?" question in advance, so no pop-up covers the page.
    settings = work / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    # Render every cell (no windowing), so off-screen pictures and widgets are in the page too.
    nb_settings = work / "settings" / "@jupyterlab" / "notebook-extension"
    nb_settings.mkdir(parents=True)
    (nb_settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    lab_exe = Path(sys.executable).parent / "jupyter-lab"
    cmd = [str(lab_exe), "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
           "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
           f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
           "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(work / "lab.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)  # proc.pid is jupyter-lab itself
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status", timeout=1)
                break
            except Exception:
                if proc.poll() is not None:
                    pytest.fail(f"jupyter-lab exited: {(work / 'lab.log').read_text()[-2000:]}")
                time.sleep(0.5)
        else:
            pytest.fail("jupyter-lab did not answer within 60 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                                    "--disable-background-networking", "--disable-component-update",
                                    "--disable-sync", "--disable-dev-shm-usage"])
        yield b
        b.close()


RUN_ALL_AND_WAIT = """
async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
  await app.commands.execute('notebook:clear-all-cell-outputs');
  await app.commands.execute('notebook:run-all-cells');
  const cells = panel.content.model.cells;
  const code = [];
  for (let i = 0; i < cells.length; i++) if (cells.get(i).type === 'code') code.push(cells.get(i));
  const t0 = Date.now();
  for (;;) {
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    const pending = code.filter(c => c.executionCount === null || c.executionCount === undefined).length;
    const busy = [...panel.node.querySelectorAll('.jp-InputArea-prompt')].some(p => p.textContent.includes('*'));
    if (kernel && kernel.status === 'idle' && !busy && pending === 0) break;
    if (Date.now() - t0 > 170000) return {timeout: true, pending};
    await new Promise(r => setTimeout(r, 300));
  }
  const errors = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    for (const o of c.toJSON().outputs || []) {
      if (o.output_type === 'error') errors.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
    }
  }
  return {timeout: false, errors, executed: code.length};
}
"""


#: the lessons `make test` opens in JupyterLab: between them every kind of widget the course uses (a
#: stepper and an explorer in 04, Graphviz pictures, the index's links); `make test-extended` opens
#: every lesson (about four minutes on 2 cores).  nbval runs every lesson's cells in `make test` all the same.
CORE = ("00_index", "01_graphs_and_executors", "04_memory_and_concurrency")


@pytest.mark.parametrize("lesson", [pytest.param(p, marks=() if p.stem in CORE else pytest.mark.extended)
                                    for p in LESSONS], ids=[p.stem for p in LESSONS])
def test_lesson_runs_in_jupyterlab(lab, browser, lesson):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    try:
        page.goto(f"{lab}/lab/tree/{lesson.name}?reset", wait_until="domcontentloaded")  # one tab, no restored workspace
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
                               "&& window.jupyterapp.shell.currentWidget.sessionContext", timeout=60000)
        result = page.evaluate(RUN_ALL_AND_WAIT)
        assert not result["timeout"], f"{lesson.name}: the kernel did not go idle ({result.get('pending')} cells pending)"
        assert not result["errors"], f"{lesson.name}: cells raised: {result['errors']}"
        page.wait_for_timeout(500)  # let widget views finish rendering
        text = page.inner_text(".jp-NotebookPanel")
        assert "Loading widget" not in text, f"{lesson.name}: a widget did not render"
        assert "Error displaying widget" not in text, f"{lesson.name}: a widget failed to render"

        source = json.loads(lesson.read_text())
        code = "\n".join("".join(c["source"]) for c in source["cells"] if c["cell_type"] == "code")
        if "draw_graph" in code:
            # JupyterLab shows image/svg+xml outputs as <img> of the SVG; stepper frames inline it.
            n_svg = page.evaluate("() => [...document.querySelectorAll('.jp-RenderedSVG img, .jp-RenderedSVG svg, "
                                  ".jp-RenderedHTMLCommon svg')].filter(e => e.tagName === 'svg' || "
                                  "(e.complete && e.naturalWidth > 0)).length")
            if n_svg == 0:
                page.screenshot(path=str(SHOTS / f"{lesson.stem}-FAILED.png"), full_page=True)
                kinds = page.evaluate("() => [...document.querySelectorAll('.jp-OutputArea-output')]"
                                      ".map(e => e.className + ' ' + (e.getAttribute('data-mime-type') || ''))")
            assert n_svg > 0, f"{lesson.name}: no inline SVG picture was rendered; outputs: {kinds}"
        n_steppers = code.count("Stepper(")
        sliders = page.locator(".jp-OutputArea .widget-slider .noUi-handle, .jp-OutputArea .slider-container .noUi-handle")
        if n_steppers:
            try:
                page.wait_for_function(f"() => document.querySelectorAll('.jp-OutputArea .noUi-handle').length >= {n_steppers}",
                                       timeout=20000)
            except Exception:
                pass
            if sliders.count() == 0:
                page.screenshot(path=str(SHOTS / f"{lesson.stem}-FAILED.png"), full_page=True)
                widget_html = page.evaluate("() => [...document.querySelectorAll('.jp-OutputArea-output')]"
                                            ".filter(e => (e.getAttribute('data-mime-type') || '').includes('widget'))"
                                            ".map(e => e.outerHTML.slice(0, 600))")
            assert sliders.count() >= 1, f"{lesson.name}: steppers were built but no slider rendered: {widget_html}"
        for i in range(sliders.count()):
            handle = sliders.nth(i)
            # the slider's widget: the nearest box holding an Output (steppers, interact) or the
            # HTML a slider explorer redraws; the last of them is what the slider changes
            box = handle.locator("xpath=ancestor::div[contains(@class,'widget-vbox')][.//div["
                                 "contains(@class,'widget-output') or contains(@class,'widget-html')]][1]")
            output = box.locator(".widget-output, .widget-html").last
            before = output.inner_html()
            handle.scroll_into_view_if_needed()
            handle.focus()
            handle.press("End")  # slider to its last frame
            for _ in range(50):  # a stepper redraws at once; an interact callback may compute first
                page.wait_for_timeout(100)
                if output.inner_html() != before:
                    break
            assert output.inner_html() != before, f"{lesson.name}: stepper {i} did not move"
        page.screenshot(path=str(SHOTS / f"{lesson.stem}.png"), full_page=False)
        print(f"screenshot: {SHOTS / (lesson.stem + '.png')}")
    finally:
        page.close()

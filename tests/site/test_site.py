"""The course website (`make site`): pages, links, no solution text, API entries, what a first
visit to each page transfers (at most 2 MB), and in Chromium:
no request outside the site, no console error, and steppers and sliders that replay their frames.

A fast subset is built (lesson 00 and three lessons with steppers and sliders; every exercise).
A replayed frame is compared with the frame the library renders for that position: the
lesson's own code is run up to the widget's cell in a separate process, and the widget's frame
there is compared with the one the page shows after the control is moved with the keyboard.
"""
from __future__ import annotations

import functools
import os
import html
import http.server
import json
import re
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import nbformat
import pytest

from browser import CHROMIUM, why_skip

ROOT = Path(__file__).resolve().parents[2]
#: the stored lessons the site is built from (another folder: e.g. scratch copies re-executed)
LESSONS = Path(os.environ.get("MEMLAB_SITE_LESSONS", ROOT / "lessons"))
SUBSET = tuple(os.environ.get("MEMLAB_SITE_SUBSET", "01,03,12").split(","))   # the naive executor's stepper; planning steppers and a slider;


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("site")
    out = tmp / "site"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "site.py"), "--out", str(out),
                    "--src", str(tmp / "src"), "--lessons", ",".join(SUBSET),
                    "--lessons-dir", str(LESSONS)],
                   check=True, cwd=ROOT, capture_output=True, text=True)
    return out


def built_lessons() -> list[Path]:
    return [p for p in sorted(LESSONS.glob("[0-9][0-9]_*.ipynb"))
            if p.name[:2] in SUBSET or p.name.startswith("00")]


class _Page(HTMLParser):
    """Ids, links and visible text of one page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for key in ("href", "src"):
            if a.get(key):
                self.links.append(a[key])
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style") and self._skip > 0

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


@functools.lru_cache(maxsize=None)
def parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(errors="replace"))
    return p


def test_every_lesson_and_exercise_has_a_page(site):
    for nb in built_lessons():
        assert (site / "lessons" / (nb.stem + ".html")).is_file(), nb.name
    for nb in sorted((ROOT / "exercises").glob("*.ipynb")):
        page = site / "exercises" / (nb.stem + ".html")
        assert page.is_file(), nb.name
        assert any(l.endswith(f"/{nb.name}") and "_downloads" in l for l in parse(page).links), \
            f"{nb.name}: no download link"
    landing = " ".join("".join(parse(site / "index.html").text).split())
    for words in ("make lab", "make test", "CSE599G1", "OpenNMT", "Memory-Aware Scheduling"):
        assert words in landing, f"the landing page does not mention {words!r}"


def test_internal_links_and_anchors_resolve(site):
    missing = []
    absent = {p.stem for p in LESSONS.glob("*.ipynb")} - {p.stem for p in built_lessons()}
    for page in site.rglob("*.html"):
        if "_static" in page.parts:         # the theme's templates, not pages
            continue
        for link in parse(page).links:
            url = urlparse(link)
            if url.scheme or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            if target.is_dir():
                target = target / "index.html"
            if target.stem in absent or Path(url.fragment).stem in absent:
                continue                    # a lesson outside the fast subset
            if not target.exists():
                missing.append(f"{page.relative_to(site)} -> {link}")
            elif url.fragment and target.suffix == ".html" and url.fragment not in parse(target).ids:
                missing.append(f"{page.relative_to(site)} -> {link} (no such anchor)")
    assert not missing, "\n".join(missing[:20])


def _solution_only_lines() -> set[str]:
    """Lines of the solutions whose text no exercise has: solution code and hidden tests."""
    def sources(folder: str) -> list[str]:
        return [c.source for p in (ROOT / folder).glob("*.ipynb")
                for c in nbformat.read(p, as_version=4).cells]
    public = "\n".join(sources("exercises"))
    lines = {l.strip() for src in sources("solutions") for l in src.splitlines()}
    return {l for l in lines if len(l) >= 25 and re.search(r"[A-Za-z]{3}", l)
            and not l.startswith("#") and l not in public}


def test_no_page_holds_a_solution_or_a_hidden_test(site):
    secret = _solution_only_lines()
    assert len(secret) > 50, "the solutions should have many lines the exercises lack"
    leaks = []
    for page in site.rglob("*.html"):
        text = html.unescape(page.read_text(errors="replace"))
        for marker in ("BEGIN HIDDEN TESTS", "BEGIN SOLUTION"):
            if marker in text:
                leaks.append(f"{page.name}: {marker}")
        leaks += [f"{page.name}: {l}" for l in secret if l in text]
    assert not leaks, "\n".join(leaks[:10])


def test_every_public_name_has_an_api_entry(site):
    rows, inside = [], False
    for line in (ROOT / "docs" / "api.md").read_text().splitlines():
        inside = inside or line.startswith("| name | what it is |")
        if inside and line.startswith("| `"):
            rows.append(line.split(" | ")[0])
    names = {m for r in rows for m in re.findall(r"`ml\.([A-Za-z_][\w.]*)", r)}
    assert len(names) > 40
    ids = parse(site / "api.html").ids
    missing = sorted(n for n in names if not {f"memlab.{n}", f"module-memlab.{n}"} & ids)
    assert not missing, f"no API entry for: {missing}"
    api = " ".join("".join(parse(site / "api.html").text).split())
    assert "Used in:" in api and "p.22" in api       # lessons listed; slide citations kept


# ------------------------------------------------------------------------------ in Chromium


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    reason = why_skip()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield b
        b.close()


def _open(browser, url):
    page = browser.new_page()
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="networkidle")
    return page, requests, errors


PAGES = ["index.html", "api.html", "exercises/01_executor.html"] + \
    [f"lessons/{p.stem}.html" for p in built_lessons()]


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGES)
def test_page_stays_inside_the_site_without_errors(browser, server, path):
    page, requests, errors = _open(browser, urljoin(server, path))
    try:
        outside = [u for u in requests if not u.startswith(server) and not u.startswith("data:")]
        assert not outside, f"requests outside the site: {outside[:5]}"
        assert not errors, f"console errors: {errors[:5]}"
    finally:
        page.close()


@pytest.mark.browser
def test_the_shown_sidebar_buttons_open_and_hide_the_sidebars(browser, server):
    """On a narrow screen the navigation and the contents open as dialogs from the buttons shown;
    on a wide one the navigation button hides the navigation."""
    path = urljoin(server, f"lessons/{built_lessons()[-1].stem}.html")
    state = ("() => [document.getElementById('pst-primary-sidebar-modal').open, "
             "document.getElementById('pst-secondary-sidebar-modal').open, "
             "document.getElementById('pst-primary-sidebar').classList.contains("
             "'pst-sidebar-hidden')]")
    narrow = browser.new_page(viewport={"width": 500, "height": 900})
    wide = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        narrow.goto(path, wait_until="networkidle")
        assert narrow.evaluate(state) == [False, False, False]
        narrow.locator(".primary-toggle:visible").first.click()
        narrow.wait_for_function("() => document.getElementById('pst-primary-sidebar-modal').open")
        narrow.keyboard.press("Escape")
        narrow.locator(".secondary-toggle:visible").first.click()
        narrow.wait_for_function("() => document.getElementById('pst-secondary-sidebar-modal').open")
        wide.goto(path, wait_until="networkidle")
        assert wide.evaluate(state) == [False, False, False]
        wide.locator(".primary-toggle:visible").first.click()
        wide.wait_for_timeout(300)
        assert wide.evaluate(state) == [False, False, True]
    finally:
        narrow.close()
        wide.close()


_LIBRARY_FRAMES = r"""
import json, os, sys, nbformat
from html.parser import HTMLParser
from IPython.core.interactiveshell import InteractiveShell
from memlab.viz import Stepper
from memlab.viz.explorer import _axis_values
from memlab.viz.flipbook import compact, sample_axes
path, wanted = sys.argv[1], {int(k): v for k, v in json.loads(sys.argv[2]).items()}
os.chdir(os.path.dirname(path))
nb = nbformat.read(path, as_version=4)
shell = InteractiveShell.instance()
class T(HTMLParser):
    def __init__(s): super().__init__(); s.t = []
    def handle_data(s, d): s.t.append(d)
def text(h):
    p = T(); p.feed(compact(h)); return "".join("".join(p.t).split())
out = {}
for i, c in enumerate(nb.cells[:max(wanted) + 1]):
    if c.cell_type != "code":
        continue
    r = shell.run_cell(c.source, store_history=False)
    r.raise_error()
    w = r.result
    for pos in wanted.get(i, []):
        if isinstance(w, Stepper):
            out.setdefault(i, []).append(text(w._html[pos[0]]))
            continue
        names = list(w.controls)
        full = [_axis_values(n, w.controls[n]) for n in names]
        keep = sample_axes([len(v) for v, _, _ in full], [s for _, _, s in full], w.max_frames)
        vals = {n: full[a][0][keep[a][p]] for a, (n, p) in enumerate(zip(names, pos))}
        out.setdefault(i, []).append(text(w.frame(**vals)))
print(json.dumps(out))
"""


def _frames_from_the_library(nb_path: Path, wanted: dict[int, list[list[int]]]) -> dict:
    """Run the lesson's code in a fresh process up to the last wanted cell; for each wanted
    cell, the text of its widget's frames at the given control positions."""
    res = subprocess.run([sys.executable, "-c", _LIBRARY_FRAMES, str(nb_path), json.dumps(wanted)],
                         capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "MPLBACKEND": "Agg"})
    assert res.returncode == 0, res.stderr[-3000:]
    return {int(k): v for k, v in json.loads(res.stdout.strip().splitlines()[-1]).items()}


def _flipbook_cells(nb_path: Path) -> dict[str, int]:
    """Flipbook id -> index of the notebook cell whose stored output holds it."""
    from memlab.viz.flipbook import MIME, flipbook_from_data
    found = {}
    for i, c in enumerate(nbformat.read(nb_path, as_version=4).cells):
        for o in c.get("outputs", []):
            data = o.get("data", {})
            h = flipbook_from_data(data[MIME]) if MIME in data else data.get("text/html", "")
            for uid in re.findall(r'class="memlab-flipbook" id="([\w-]+)"', h):
                found[uid] = i
    return found


def _visible_text(root) -> str:
    """Text of the frame on display (SVG text and titles included, as the library's frame)."""
    return "".join(root.locator(".memlab-fb-frame:not([hidden])").text_content().split())


@pytest.mark.browser
@pytest.mark.parametrize("lesson", [p for p in built_lessons() if not p.name.startswith("00")],
                         ids=lambda p: p.stem)
def test_steppers_and_sliders_replay_the_library_frames(browser, server, lesson):
    cells = _flipbook_cells(lesson)
    assert cells, f"{lesson.name} stores no flipbook: re-execute it"
    page, _, errors = _open(browser, urljoin(server, f"lessons/{lesson.stem}.html"))
    try:
        books = page.locator(".memlab-flipbook")
        assert books.count() == len(cells), "every stored stepper and slider is on the page"
        seen = []
        for k in range(books.count()):
            root = books.nth(k)
            ranges = root.locator(".memlab-fb-range")
            first = _visible_text(root)
            moves = []
            for a in range(ranges.count()):     # move each control to a position it can reach
                top = int(ranges.nth(a).get_attribute("max"))
                start = int(ranges.nth(a).get_attribute("value"))
                target = top if start < top else 0
                ranges.nth(a).focus()
                for _ in range(abs(target - start)):
                    page.keyboard.press("ArrowRight" if target > start else "ArrowLeft")
                moves.append(target)
            moved = any(int(ranges.nth(a).get_attribute("max")) for a in range(ranges.count()))
            seen.append((cells[root.get_attribute("id")], moves, first, _visible_text(root), moved))
        want = _frames_from_the_library(lesson, {c: [m] for c, m, *_ in seen})
        for cell, moves, first, shown, moved in seen:
            assert shown == want[cell][0], f"{lesson.name} cell {cell}: the page shows another frame"
            assert shown != first or not moved, f"{lesson.name} cell {cell}: moving changed nothing"
        assert not errors, errors[:5]
    finally:
        page.close()


# ------------------------------------------------------------------------------ weight
#: the most that a first visit to one page may transfer: its HTML and every file it loads
COLD_LIMIT = 2_000_000


class _Loads(HTMLParser):
    """The files a page makes the browser load: style sheets, preloads, its icon, scripts and
    pictures (links to other pages are not loaded)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        rel = (a.get("rel") or "").split()
        if tag == "link" and {"stylesheet", "preload", "modulepreload", "icon"} & set(rel):
            self.urls.append(a.get("href", ""))
        elif tag in ("script", "img", "source", "iframe", "embed", "audio", "video"):
            self.urls.append(a.get("src", ""))
        elif tag in ("object",):
            self.urls.append(a.get("data", ""))


_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""")


def _local(base: Path, url: str, site: Path) -> Path | None:
    """The site's file a URL of a page or style sheet at ``base`` names (None: inline data)."""
    if not url or url.startswith(("data:", "#")):
        return None
    parsed = urlparse(url)
    assert not parsed.scheme and not parsed.netloc, f"{base}: loads {url} from outside the site"
    path = (base.parent / unquote(parsed.path)).resolve()
    assert path.is_file(), f"{base.relative_to(site)}: loads {url}, which the site lacks"
    return path


def cold_transfer(site: Path, page: Path) -> dict[str, int]:
    """Bytes of each file a first visit to ``page`` transfers: the HTML, every file it loads, and
    what their style sheets load (every font a style sheet declares, used or not: at least what
    a browser fetches, which the browser test checks)."""
    loads = _Loads()
    loads.feed(page.read_text(errors="replace"))
    todo = [f for f in (_local(page, u, site) for u in loads.urls) if f]
    got = {str(page.relative_to(site)): page.stat().st_size}
    while todo:
        f = todo.pop()
        key = str(f.relative_to(site.resolve()))
        if key in got:
            continue
        got[key] = f.stat().st_size
        if f.suffix == ".css":
            for m in _CSS_URL.finditer(f.read_text(errors="replace")):
                target = _local(f, m.group(1) or m.group(2), site.resolve())
                if target:
                    todo.append(target)
    return got


def site_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def _weight_table(site: Path, pages: list[Path]) -> dict[str, int]:
    totals = {}
    print("\npage (cold)                                    MB   largest file")
    for page in pages:
        got = cold_transfer(site, page)
        key = str(page.relative_to(site))
        totals[key] = sum(got.values())
        top = max(got.items(), key=lambda x: x[1])
        print(f"{key:45s} {totals[key] / 1e6:5.2f}  {top[0].rsplit('/', 1)[-1][:40]} "
              f"({top[1] / 1e6:.2f})")
    return totals


def test_the_cold_transfer_counts_what_a_page_loads(tmp_path):
    """The measure itself, on a page made here: a style sheet, the font it declares, a script,
    a preloaded script, an inline picture; not the pages it only links to."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "a.css").write_text("@font-face{src:url(f.woff2)} b{color:red}")
    (tmp_path / "s" / "f.woff2").write_bytes(b"x" * 1000)
    (tmp_path / "s" / "j.js").write_text("1;" * 50)
    (tmp_path / "s" / "p.js").write_text("2;" * 20)
    (tmp_path / "other.html").write_text("y" * 5000)
    page = tmp_path / "p.html"
    page.write_text('<link rel="stylesheet" href="s/a.css?v=1"><script src="s/j.js"></script>'
                    '<link rel="preload" as="script" href="s/p.js"><a href="other.html">x</a>'
                    "<img src='data:image/svg+xml,<svg/>'><link rel=\"next\" href=\"other.html\">")
    got = cold_transfer(tmp_path, page)
    assert got == {k: (tmp_path / k).stat().st_size
                   for k in ("p.html", "s/a.css", "s/f.woff2", "s/j.js", "s/p.js")}
    (tmp_path / "q.html").write_text('<script src="https://example.org/x.js"></script>')
    with pytest.raises(AssertionError, match="outside the site"):
        cold_transfer(tmp_path, tmp_path / "q.html")


@pytest.mark.browser
def test_pages_load_little_cold_with_one_search_box(browser, server, site, capsys):
    """What a first visit transfers, page by page (printed), is at most COLD_LIMIT, and Chromium
    fetches nothing the measure misses; no Font Awesome script, no math script (formulas are
    MathML, which Chromium draws); the landing page has one search box."""
    paths = ["index.html", "api.html"] + [f"lessons/{p.stem}.html" for p in built_lessons()]
    fetched, math = {}, {}
    for path in paths:
        ctx = browser.new_context()
        page = ctx.new_page()
        got = {}

        def on(resp, got=got):
            try:
                got[resp.url] = len(resp.body())
            except Exception:  # noqa: BLE001  (a redirect has no body)
                pass
        page.on("response", on)
        page.goto(urljoin(server, path), wait_until="networkidle")
        page.wait_for_timeout(1000)
        fetched[path] = got
        boxes = [page.locator("math").nth(k).bounding_box() for k in
                 range(page.locator("math").count())]
        text = page.locator("article").first.inner_text() if page.locator("article").count() \
            else ""
        math[path] = (boxes, "\\(" in text or "\\[" in text)
        if path == "index.html":
            search = page.locator(".search-button-field:visible, .bd-search:visible, "
                                  "input[type=search]:visible")
            assert search.count() == 1, f"{search.count()} search boxes on the landing page"
        ctx.close()
    with capsys.disabled():
        totals = _weight_table(site, [site / p for p in paths])
    for path, got in fetched.items():
        names = [urlparse(u).path.rsplit("/", 1)[-1] for u in got]
        assert "fontawesome.js" not in names and not any("mathjax" in u for u in got), \
            (path, names)
        measured = {str((site / unquote(urlparse(u).path[1:])).resolve().relative_to(
            site.resolve())) for u in got}
        missed = measured - set(cold_transfer(site, site / path))
        assert not missed, f"{path}: Chromium fetched {sorted(missed)}, which the measure misses"
        assert sum(got.values()) <= totals[path] <= COLD_LIMIT, (path, totals[path])
        boxes, raw = math[path]
        assert not raw, f"{path}: a formula is shown as TeX"
        assert all(b and b["width"] > 0 and b["height"] > 0 for b in boxes), \
            f"{path}: a formula is not drawn"
    lesson_math = {p: sum(c.source.count("$") for c in nbformat.read(p, as_version=4).cells
                          if c.cell_type == "markdown") for p in built_lessons()}
    assert any(lesson_math.values()), "the subset should have a lesson with formulas"
    for p, dollars in lesson_math.items():
        assert bool(math[f"lessons/{p.stem}.html"][0]) == bool(dollars), \
            f"{p.name}: {dollars} dollar signs, {len(math[f'lessons/{p.stem}.html'][0])} formulas"


@pytest.fixture(scope="module")
def whole_site(tmp_path_factory) -> Path:
    """Every lesson's page (the other tests build a subset)."""
    tmp = tmp_path_factory.mktemp("whole")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "site.py"), "--out", str(tmp / "site"),
                    "--src", str(tmp / "src"), "--lessons-dir", str(LESSONS)],
                   check=True, cwd=ROOT, capture_output=True, text=True)
    return tmp / "site"


@pytest.mark.extended
def test_no_page_of_the_whole_site_loads_more_than_the_limit_cold(whole_site, capsys):
    """Every page of the site, every lesson's included: HTML and all it loads at most
    COLD_LIMIT (the measure is checked against Chromium by the test above)."""
    pages = site_pages(whole_site)
    assert len([p for p in pages if p.parent.name == "lessons"]) == len(list(
        LESSONS.glob("[0-9][0-9]_*.ipynb")))
    with capsys.disabled():
        totals = _weight_table(whole_site, pages)
    heavy = {p: round(n / 1e6, 2) for p, n in totals.items() if n > COLD_LIMIT}
    assert not heavy, f"pages over {COLD_LIMIT / 1e6} MB cold: {heavy}"

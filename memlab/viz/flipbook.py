"""Flipbooks: a stepper's or a slider's frames, stored with the notebook and replayed on a page.

A widget needs a kernel; a stored notebook opened before it runs, and a static page (the course
website), have none. So every memlab stepper and explorer carries, beside its live widget view:

* ``text/html``: a preview that reads well anywhere, before the cell runs: the frame the controls
  start on, its pictures as ``<img>`` of SVG (JupyterLab's sanitiser, which an unrun notebook's
  outputs go through, keeps no inline ``<svg>`` and no script), and one line saying to run the
  cell to step through it;
* :data:`MIME` (``application/vnd.memlab.flipbook+json``), which JupyterLab and nbviewer ignore:
  every frame, each stored as its difference from the frame before (consecutive frames share
  most of their drawing), so a stepper weighs little more than its first frame.

The course website builds from the latter the page's flipbook (:func:`flipbook_html`): controls
and a few lines of inline JavaScript (no external script) showing the frame they select. Frames
are the same HTML the live widget displays.
"""
from __future__ import annotations

import difflib
import hashlib
import html
import itertools
import json
import re
from dataclasses import asdict, dataclass
from typing import Any, Sequence
from urllib.parse import quote

#: The most frames one flipbook stores: a grid with more is sampled (and says so).
MAX_FRAMES = 64
#: The output type holding a flipbook's frames (notebook front ends ignore it; the site reads it).
MIME = "application/vnd.memlab.flipbook+json"


@dataclass(frozen=True)
class Axis:
    """One control of a flipbook: a name and the values it steps through (labels as shown)."""

    name: str
    labels: tuple[str, ...]
    start: int = 0
    note: str = ""   # e.g. "8 of 31 values": said on the page when the axis is sampled


def sample_axes(sizes: Sequence[int], defaults: Sequence[int],
                cap: int = MAX_FRAMES) -> list[list[int]]:
    """Indices kept on each axis so that the product of the kept counts is at most ``cap``.

    The largest axis is thinned first, evenly, always keeping its first and last
    value and its default, until the grid fits.
    """
    keep = [list(range(n)) for n in sizes]
    frozen: set[int] = set()   # axes that cannot shrink further (ends and default only)
    while _product(len(k) for k in keep) > cap and len(frozen) < len(keep):
        i = max((j for j in range(len(keep)) if j not in frozen), key=lambda j: len(keep[j]))
        n = len(keep[i])
        target = (n + 1) // 2
        picked = sorted({keep[i][round(t * (n - 1) / (target - 1))] for t in range(target)}
                        if target > 1 else {keep[i][0], keep[i][-1]})
        if defaults[i] not in picked:
            inner = range(1, len(picked) - 1)
            if inner:   # the kept value nearest the default gives way to it
                picked[min(inner, key=lambda q: abs(picked[q] - defaults[i]))] = defaults[i]
            else:
                picked.append(defaults[i])
            picked.sort()
        if len(picked) >= n:
            frozen.add(i)
        keep[i] = picked
    return keep


def _product(xs: Any) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def grid(axes: Sequence[Axis]) -> list[tuple[int, ...]]:
    """Every combination of the axes' positions, first axis slowest (the flipbook's frame order)."""
    return list(itertools.product(*(range(len(a.labels)) for a in axes)))


def flipbook_html(axes: Sequence[Axis], frames: Sequence[str], title: str = "",
                  play: bool = False, interval_ms: int = 1200) -> str:
    """A static page's version of a widget: controls for ``axes`` and one frame per grid point.

    ``frames[k]`` is the HTML shown at ``grid(axes)[k]``. Each frame is stored once, as its
    difference from the one before (:func:`encode_frames`), and the script decodes them; the
    frame the controls start on is in the page as HTML, so it shows without the script. The
    block is deterministic (same frames, same text).
    """
    points = grid(axes)
    if len(frames) != len(points):
        raise ValueError(f"flipbook_html: {len(frames)} frames for a grid of {len(points)} points")
    frames = [compact(f) for f in frames]
    body = "".join(frames)
    uid = "memlab-fb-" + hashlib.sha1((title + body).encode()).hexdigest()[:12]
    controls = []
    for i, a in enumerate(axes):
        last = len(a.labels) - 1
        controls.append(
            f'<label style="margin-right:1.2em">{html.escape(a.name)} '
            f'<input type="range" class="memlab-fb-range" data-axis="{i}" min="0" max="{last}" '
            f'step="1" value="{a.start}" aria-label="{html.escape(a.name)}"{" disabled" if not last else ""}> '
            f'<output class="memlab-fb-value">{html.escape(a.labels[a.start])}</output></label>')
    if play:
        controls.insert(0, '<button type="button" class="memlab-fb-play">&#9654; Play</button> ')
    notes = [f"{a.name}: {a.note}" for a in axes if a.note]
    note = (f'<p class="memlab-fb-note"><i>Sampled for this page ({html.escape("; ".join(notes))});'
            " run the lesson in JupyterLab for every value.</i></p>") if notes else ""
    start = _flat([a.start for a in axes], axes)
    head = f"<p><b>{html.escape(title)}</b></p>" if title else ""
    labels = json.dumps([list(a.labels) for a in axes])
    stored = json.dumps(encode_frames(frames)).replace("</", "<\\/")
    return (f'<div class="memlab-flipbook" id="{uid}">{head}<div class="memlab-fb-controls">'
            f'{"".join(controls)}</div>{note}'
            f'<div class="memlab-fb-frame" data-frame="{start}">{frames[start]}</div>'
            f'<script type="application/json" class="memlab-fb-frames">{stored}</script></div>'
            f"<script>({_JS})(document.getElementById({json.dumps(uid)}), {labels}, "
            f"{int(interval_ms)});</script>")


def page_frames(page: str) -> list[str]:
    """The frames a page's flipbook holds (what its script decodes), in grid order."""
    found = re.search(r'<script type="application/json" class="memlab-fb-frames">(.*?)</script>',
                      page, re.S)
    return decode_frames(json.loads(found.group(1).replace("<\\/", "</")))


def flipbook_data(axes: Sequence[Axis], frames: Sequence[str], title: str = "",
                  play: bool = False, interval_ms: int = 1200) -> dict[str, Any]:
    """What :data:`MIME` stores: the axes, and every frame as its difference from the one before
    (:func:`encode_frames`), one string a frame. :func:`flipbook_from_data` gives the page's
    flipbook back."""
    if len(frames) != len(grid(axes)):
        raise ValueError(f"flipbook_data: {len(frames)} frames for a grid of {len(grid(axes))} "
                         f"points")
    return {"title": title, "play": play, "interval_ms": int(interval_ms),
            "axes": [asdict(a) for a in axes], "frames": encode_frames(frames)}


def flipbook_from_data(data: dict[str, Any]) -> str:
    """The page's flipbook (:func:`flipbook_html`) of what :func:`flipbook_data` stored."""
    axes = [Axis(a["name"], tuple(a["labels"]), a.get("start", 0), a.get("note", ""))
            for a in data["axes"]]
    return flipbook_html(axes, decode_frames(data["frames"]), data.get("title", ""),
                         data.get("play", False), data.get("interval_ms", 1200))


# A frame's tokens: tags, and the attributes inside a tag, so that a changed colour or label
# costs its attribute, not its whole drawing.
_TOKEN = re.compile(r'(?<=>)(?=<)|(?<=")(?= [a-z:-]+=")')


def encode_frames(frames: Sequence[str]) -> list[str]:
    """Each frame (compacted) as the edits that make it from the frame before, in one string:
    new text as it is, and ``"\\0i:j\\0"`` for tokens ``i:j`` of the frame before (a notebook's
    indented JSON would give a list of edits a line each). Deterministic."""
    prev: list[str] = []
    out = []
    for frame in frames:
        tokens = _TOKEN.split(compact(frame))
        parts = []
        matcher = difflib.SequenceMatcher(None, prev, tokens, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            parts.append(f"\0{i1}:{i2}\0" if tag == "equal" else "".join(tokens[j1:j2]))
        out.append("".join(parts))
        prev = tokens
    return out


_COPY = re.compile("\0(\\d+):(\\d+)\0")


def decode_frames(encoded: Sequence[str]) -> list[str]:
    """The frames :func:`encode_frames` stored, as compacted HTML."""
    prev: list[str] = []
    frames = []
    for text in encoded:
        pieces = _COPY.split(text)       # new text, then (i, j, new text) per copied run
        tokens = _TOKEN.split(pieces[0]) if pieces[0] else []
        for k in range(1, len(pieces), 3):
            tokens.extend(prev[int(pieces[k]):int(pieces[k + 1])])
            if pieces[k + 2]:
                tokens.extend(_TOKEN.split(pieces[k + 2]))
        frames.append("".join(tokens))
        prev = tokens
    return frames


def preview_html(axes: Sequence[Axis], frames: Sequence[str], title: str = "",
                 action: str = "step through it") -> str:
    """What a notebook shows before the cell runs: the frame the controls start on, its pictures
    as images (kept by JupyterLab's sanitiser), and one line saying how to make it live."""
    frame = compact(frames[_flat([a.start for a in axes], axes)])
    frame = _SVG.sub(lambda m: _svg_img(m.group(0)), frame)
    head = f"<p><b>{html.escape(title)}</b></p>" if title else ""
    count = len(frames)
    line = (f'<p class="memlab-fb-note"><i>&#9654; Run this cell to {html.escape(action)} '
            f"({count} frame{'s' if count != 1 else ''}).</i></p>")
    return f'<div class="memlab-preview">{head}{frame}{line}</div>'


_SVG = re.compile(r"(?:<\?xml[^>]*>)?(?:<!DOCTYPE[^>]*>)?<svg\b.*?</svg>", re.S)


def _svg_img(svg: str) -> str:
    """An inline SVG as an ``<img>`` of a data URI (percent-encoded: smaller than base64)."""
    svg = re.sub(r"^(?:<\?xml[^>]*>)?(?:<!DOCTYPE[^>]*>)?", "", svg)
    if "xmlns=" not in svg[:300]:
        svg = svg.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
    uri = quote(svg, safe=" =:/;,.<>\"-_()!*+?@[]{}|^~$`")
    return f"<img alt=\"picture\" src='data:image/svg+xml,{uri}'>"


def compact(fragment: str) -> str:
    """A frame without what a page does not need: SVG metadata and blanks between tags."""
    return _BLANKS.sub("><", _METADATA.sub("", fragment))


_METADATA = re.compile(r"<metadata>.*?</metadata>", re.S)
_BLANKS = re.compile(r">\s+<")


def _flat(pos: Sequence[int], axes: Sequence[Axis]) -> int:
    k = 0
    for p, a in zip(pos, axes):
        k = k * len(a.labels) + p
    return k


# The whole script: decode the frames (copied runs of the frame before, and new text: the tokens
# of encode_frames), show the one the ranges select; Play steps axis 0.
_JS = ("function(root, labels, interval){"
       "var r=root.querySelectorAll('.memlab-fb-range'),v=root.querySelectorAll('.memlab-fb-value'),"
       "f=root.querySelector('.memlab-fb-frame'),b=root.querySelector('.memlab-fb-play'),t=null,"
       "data=root.querySelector('.memlab-fb-frames'),frames=null;"
       "function decode(enc){var T=/(?<=>)(?=<)|(?<=\")(?= [a-z:-]+=\")/,"
       "C=/\\u0000(\\d+):(\\d+)\\u0000/,"
       "prev=[],out=[];for(var n=0;n<enc.length;n++){var p=enc[n].split(C),"
       "tk=p[0]?p[0].split(T):[];for(var q=1;q<p.length;q+=3){"
       "tk=tk.concat(prev.slice(+p[q],+p[q+1]));if(p[q+2]){tk=tk.concat(p[q+2].split(T));}}"
       "out.push(tk.join(''));prev=tk;}return out;}"
       "function show(){var k=0;for(var i=0;i<r.length;i++){var p=+r[i].value;"
       "k=k*labels[i].length+p;v[i].textContent=labels[i][p];}"
       "if(String(k)!==f.dataset.frame){if(!frames){frames=decode(JSON.parse(data.textContent));}"
       "f.innerHTML=frames[k];f.dataset.frame=k;}root.dataset.frame=k;}"
       "for(var i=0;i<r.length;i++){r[i].addEventListener('input',show);}"
       "if(b){b.addEventListener('click',function(){if(t){clearInterval(t);t=null;"
       "b.innerHTML='&#9654; Play';return;}b.innerHTML='&#9646;&#9646; Pause';"
       "t=setInterval(function(){var x=r[0];x.value=(+x.value+1)%(+x.max+1);show();},interval);});}"
       "show();}")

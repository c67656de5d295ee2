"""Flipbooks: a stepper's or a slider's frames as one self-contained HTML block.

A widget needs a kernel; a static page (the course website, GitHub, nbviewer)
has none. So every memlab stepper and explorer also carries, beside its live
widget view, a ``text/html`` representation holding all its frames and a few
lines of inline JavaScript (no external script) that show the frame the
controls select. JupyterLab shows the live widget; a static renderer shows the
flipbook. Frames are the same HTML the live widget displays.
"""
from __future__ import annotations

import hashlib
import html
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

#: The most frames one flipbook stores: a grid with more is sampled (and says so).
MAX_FRAMES = 64


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

    ``frames[k]`` is the HTML shown at ``grid(axes)[k]``. The block is deterministic
    (same frames, same text), so stored notebooks do not change when re-run.
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
    divs = "".join(
        f'<div class="memlab-fb-frame" data-frame="{k}"{"" if k == start else " hidden"}>{f}</div>'
        for k, f in enumerate(frames))
    head = f"<p><b>{html.escape(title)}</b></p>" if title else ""
    labels = json.dumps([list(a.labels) for a in axes])
    return (f'<div class="memlab-flipbook" id="{uid}">{head}<div class="memlab-fb-controls">'
            f'{"".join(controls)}</div>{note}{divs}</div>'
            f"<script>({_JS})(document.getElementById({json.dumps(uid)}), {labels}, "
            f"{int(interval_ms)});</script>")


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


# The whole script: find the frame the ranges select, show it, hide the others; Play steps axis 0.
_JS = ("function(root, labels, interval){"
       "var r=root.querySelectorAll('.memlab-fb-range'),v=root.querySelectorAll('.memlab-fb-value'),"
       "f=root.querySelectorAll('.memlab-fb-frame'),b=root.querySelector('.memlab-fb-play'),t=null;"
       "function show(){var k=0;for(var i=0;i<r.length;i++){var p=+r[i].value;"
       "k=k*labels[i].length+p;v[i].textContent=labels[i][p];}"
       "for(var j=0;j<f.length;j++){f[j].hidden=(j!==k);}root.dataset.frame=k;}"
       "for(var i=0;i<r.length;i++){r[i].addEventListener('input',show);}"
       "if(b){b.addEventListener('click',function(){if(t){clearInterval(t);t=null;"
       "b.innerHTML='&#9654; Play';return;}b.innerHTML='&#9646;&#9646; Pause';"
       "t=setInterval(function(){var x=r[0];x.value=(+x.value+1)%(+x.max+1);show();},interval);});}"
       "show();}")

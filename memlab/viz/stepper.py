"""The slide stepper: Play + slider + Output, stepping through precomputed frames.

Frames are computed up front from an algorithm's own trace (for example a
plan's ``steps``), so the widget only displays (LESSONS.md "Steppers").
The Play button and the slider are tied with ``widgets.link`` (not
``jslink``), so stepping also works headless and in tests. Beside the widget
view, a stepper's display carries its frames as a static flipbook
(:mod:`.flipbook`), so a page without a kernel steps through them too.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Sequence

import ipywidgets as widgets
from IPython.display import HTML

from .flipbook import MIME, Axis, flipbook_data, flipbook_html, preview_html
from .render import to_svg


@dataclass
class Frame:
    """One slide step: a picture (SVG text, a Graphviz graph or a figure) and a caption."""

    picture: Any
    caption: str

    def html(self, position: str = "") -> str:
        """The frame as HTML: caption above the picture, after ``position`` ("frame 4 of 12")."""
        pic = to_svg(self.picture) if self.picture is not None else ""
        caption = f"{position}: {self.caption}" if position else self.caption
        return (f'<div class="memlab-frame"><p class="memlab-caption">'
                f"<b>{html.escape(caption)}</b></p>"
                f"{pic}</div>")


class Stepper(widgets.VBox):
    """Step through ``frames`` with a Play button and a slider; an Output shows the current one.

    The slider counts frames from 1, and each caption starts with the same number ("frame 4 of 12:
    step 10 of 44"), so the slider and the caption never disagree when the frames sample an
    algorithm's steps."""

    def __init__(self, frames: Sequence[Frame], interval_ms: int = 1200, title: str | None = None) -> None:
        if not frames:
            raise ValueError("a Stepper needs at least one frame")
        self.frames = list(frames)
        self.title = title or ""
        self.interval_ms = interval_ms
        n = len(self.frames)
        self._html = [f.html(f"frame {k} of {n}" if n > 1 else "")   # rendered once, up front
                      for k, f in enumerate(self.frames, 1)]
        self.play = widgets.Play(value=1, min=1, max=n, step=1, interval=interval_ms,
                                 description="Play")
        self.slider = widgets.IntSlider(value=1, min=1, max=n, step=1, description="frame",
                                        continuous_update=True)
        self.link = widgets.link((self.play, "value"), (self.slider, "value"))
        self.out = widgets.Output(layout=widgets.Layout(min_height="120px"))
        self.slider.observe(self._on_change, names="value")
        header = [widgets.HTML(f"<b>{html.escape(title)}</b>")] if title else []
        super().__init__(header + [widgets.HBox([self.play, self.slider]), self.out])
        self.show(0)

    @property
    def index(self) -> int:
        """Position (from 0) in ``frames`` of the frame on display: the slider's value less 1."""
        return self.slider.value - 1

    @property
    def caption(self) -> str:
        """Caption of the frame on display."""
        return self.frames[self.index].caption

    def _on_change(self, change: dict) -> None:
        self.show(change["new"] - 1)

    def show(self, i: int) -> None:
        """Display ``frames[i]`` in the Output (works with or without a kernel)."""
        self.out.outputs = ()
        self.out.append_display_data(HTML(self._html[i]))

    def _axes(self) -> list[Axis]:
        return [Axis("frame", tuple(str(k) for k in range(1, len(self.frames) + 1)))]

    def flipbook(self) -> str:
        """Every frame as a static flipbook (a slider and Play without a kernel)."""
        return flipbook_html(self._axes(), self._html, self.title, play=True,
                             interval_ms=self.interval_ms)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The live widget for JupyterLab; for a notebook not yet run, a preview (the first
        frame and how to make it live) as ``text/html``; every frame as :data:`~.flipbook.MIME`
        (the site's flipbook)."""
        data = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            data["text/html"] = preview_html(self._axes(), self._html, self.title)
            data[MIME] = flipbook_data(self._axes(), self._html, self.title, play=True,
                                       interval_ms=self.interval_ms)
        return data

    def shown_html(self) -> str:
        """The HTML currently in the Output (for tests)."""
        outs = self.out.outputs
        return outs[-1]["data"]["text/html"] if outs else ""

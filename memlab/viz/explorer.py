"""Sliders that redraw a picture: the lessons' knobs, live in JupyterLab and replayed on a page.

``interact(f, depth=(2, 16), batch=widgets.SelectionSlider(...))`` takes what
``ipywidgets.interact`` takes and shows the same controls, but its output is
HTML that memlab renders itself (printed text, figures as SVG, HTML), so the
same frames serve the live widget and the static flipbook
(:mod:`.flipbook`): a page without a kernel replays the slider on the lesson's
own grid (every step of each slider, sampled down to at most
:data:`~.flipbook.MAX_FRAMES` frames, and the page says so).
"""
from __future__ import annotations

import html
import inspect
import io
import numbers
import sys
from typing import Any, Callable, Mapping, Sequence

import ipywidgets as widgets

from ..errors import MemlabError, check_callable
from .flipbook import (MAX_FRAMES, MIME, Axis, flipbook_data, flipbook_html, grid, preview_html,
                       sample_axes)
from .render import to_svg


def output_html(fn: Callable[..., Any], **kwargs: Any) -> str:
    """Call ``fn(**kwargs)`` and return what it printed, displayed and drew, in order, as HTML.

    Inside a kernel the shell's display publisher is borrowed for the call (so
    ``display(...)`` lands here, not in the cell's output); new matplotlib figures
    are drawn as SVG and closed, as the inline backend would show them.
    """
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()   # the kernel's own shell; a plain one outside Jupyter
    parts: list[str] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            parts.append(f'<pre class="memlab-out">{html.escape("".join(text))}</pre>')
            text.clear()

    class _Stdout(io.TextIOBase):
        def write(self, s: str) -> int:
            text.append(s)
            return len(s)

    def publish(data: Mapping[str, Any], *args: Any, **kw: Any) -> None:
        flush()
        parts.append(bundle_html(data))

    from matplotlib.figure import Figure
    svg = shell.display_formatter.formatters["image/svg+xml"]
    old_printer = svg.type_printers.get(Figure)
    before = set(plt.get_fignums())
    saved = sys.stdout, shell.display_pub.publish
    sys.stdout, shell.display_pub.publish = _Stdout(), publish
    svg.for_type(Figure, to_svg)   # a displayed figure becomes stable SVG, and is closed
    try:
        result = fn(**kwargs)
    finally:
        sys.stdout, shell.display_pub.publish = saved
        svg.pop(Figure, None)
        if old_printer is not None:
            svg.for_type(Figure, old_printer)
    flush()
    for num in plt.get_fignums():
        if num not in before:
            parts.append(to_svg(plt.figure(num)))
    if result is not None:
        parts.append(rich_html(result))
    return "".join(parts)


def bundle_html(data: Mapping[str, Any]) -> str:
    """HTML of one display's mime bundle: SVG or HTML as is, a PNG inline, else its text."""
    for key in ("image/svg+xml", "text/html"):
        if key in data:
            v = data[key]
            return "".join(v) if isinstance(v, list) else v
    if "image/png" in data:
        return f'<img src="data:image/png;base64,{data["image/png"]}">'
    return f'<pre class="memlab-out">{html.escape(str(data.get("text/plain", "")))}</pre>'


def rich_html(obj: Any) -> str:
    """HTML of one displayed object: a figure or Graphviz graph as SVG, HTML as is, else its text."""
    if hasattr(obj, "savefig") or hasattr(obj, "pipe"):
        return to_svg(obj)
    for meth in ("_repr_html_", "_repr_svg_"):
        if hasattr(obj, meth):
            out = getattr(obj, meth)()
            if out is not None:
                return out
    if hasattr(obj, "_repr_mimebundle_"):
        bundle = obj._repr_mimebundle_()
        bundle = bundle[0] if isinstance(bundle, tuple) else bundle
        for key in ("text/html", "image/svg+xml"):
            if key in bundle:
                return bundle[key]
    return f'<pre class="memlab-out">{html.escape(str(obj))}</pre>'


def _axis_values(name: str, w: widgets.Widget) -> tuple[list[Any], list[str], int]:
    """The values a control steps through on its own grid, their labels, and the start index."""
    if isinstance(w, widgets.FloatLogSlider):
        n = int(round((w.max - w.min) / w.step)) + 1
        vals = [w.base ** (w.min + i * w.step) for i in range(n)]
    elif isinstance(w, (widgets.IntSlider, widgets.FloatSlider)):
        n = int(round((w.max - w.min) / w.step)) + 1
        vals = [w.min + i * w.step for i in range(n)]
        if isinstance(w, widgets.FloatSlider):
            vals = [round(v, 10) for v in vals]
    elif hasattr(w, "_options_values"):   # SelectionSlider, Dropdown, ToggleButtons, ...
        vals = list(w._options_values)
        labels = list(w._options_labels)
        return vals, labels, vals.index(w.value)
    elif isinstance(w, widgets.Checkbox):
        vals = [False, True]
    else:
        vals = [w.value]
    start = min(range(len(vals)), key=lambda i: abs(vals[i] - w.value)
                if isinstance(w.value, (int, float)) and not isinstance(w.value, bool)
                else (0 if vals[i] == w.value else 1))
    return vals, [f"{v:g}" if isinstance(v, float) else str(v) for v in vals], start


class Explorer(widgets.VBox):
    """Controls and the HTML ``render(**values)`` draws; a flipbook of the same frames for pages.

    ``render`` is called with the controls' values and returns HTML. The frames on
    the controls' grid are rendered when the page needs them (``_repr_mimebundle_``),
    at most ``max_frames`` of them; the live widget redraws on every change.
    """

    def __init__(self, render: Callable[..., str], controls: Mapping[str, widgets.Widget],
                 title: str = "", max_frames: int = MAX_FRAMES) -> None:
        self.render = render
        self.controls = dict(controls)
        self.title = title
        self.max_frames = max_frames
        self._cache: dict[tuple, str] = {}
        self.out = widgets.HTML()
        for w in self.controls.values():
            w.observe(self._redraw, names="value")
        head = [widgets.HTML(f"<b>{html.escape(title)}</b>")] if title else []
        super().__init__(head + [widgets.HBox(list(self.controls.values())), self.out])
        self._redraw()

    @property
    def sliders(self) -> tuple[widgets.Widget, ...]:
        """The controls, in order."""
        return tuple(self.controls.values())

    @property
    def values(self) -> dict[str, Any]:
        """The controls' current values."""
        return {k: w.value for k, w in self.controls.items()}

    def frame(self, **values: Any) -> str:
        """The HTML shown for ``values`` (rendered once, then cached)."""
        key = tuple(sorted((k, repr(v)) for k, v in values.items()))
        if key not in self._cache:
            self._cache[key] = self.render(**values)
        return self._cache[key]

    def _redraw(self, _: Any = None) -> None:
        self.out.value = self.frame(**self.values)

    def _grid(self) -> tuple[list[Axis], list[str]]:
        """The axes of the controls' grid (sampled to ``max_frames``) and a frame per point."""
        names = list(self.controls)
        full = [_axis_values(n, self.controls[n]) for n in names]
        keep = sample_axes([len(v) for v, _, _ in full], [s for _, _, s in full], self.max_frames)
        axes, values = [], []
        for n, (vals, labels, start), kept in zip(names, full, keep):
            note = f"{len(kept)} of {len(vals)} values" if len(kept) < len(vals) else ""
            axes.append(Axis(n, tuple(labels[i] for i in kept), kept.index(start), note))
            values.append([vals[i] for i in kept])
        frames = [self.frame(**{n: values[a][p] for a, (n, p) in enumerate(zip(names, point))})
                  for point in grid(axes)]
        return axes, frames

    def flipbook(self) -> str:
        """Every frame on the controls' grid (sampled to ``max_frames``) as a static flipbook."""
        return flipbook_html(*self._grid(), self.title)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        data = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            axes, frames = self._grid()
            data["text/html"] = preview_html(axes, frames, self.title, "move its sliders")
            data[MIME] = flipbook_data(axes, frames, self.title)
        return data


def interact(fn: Callable[..., Any], /, *, title: str = "", max_frames: int = MAX_FRAMES,
             **abbrevs: Any) -> Explorer:
    """Like ``ipywidgets.interact``: controls from ``abbrevs`` (tuples, lists or widgets) around
    ``fn``; what ``fn`` prints, displays or draws is its frame. Returns the :class:`Explorer`.

    Every control names a parameter of ``fn``, every parameter without a default has a control,
    a ``(low, high[, step])`` range has ``low < high``, and a default of ``fn`` lies on its range
    (ipywidgets would move it there without a word)."""
    fn = check_callable(fn, "interact: fn")
    params = inspect.signature(fn).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    named = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for name in abbrevs:
        if name not in params and not takes_any:
            raise MemlabError(f"interact: {name}= is not a parameter of {_fn_name(fn)}; its "
                              f"parameters are {', '.join(named) or 'none'}")
    for name in named:
        if params[name].default is inspect.Parameter.empty and name not in abbrevs:
            raise MemlabError(f"interact: {_fn_name(fn)}'s parameter {name!r} has no default and "
                              f"no control; give {name}=(low, high), a list of values or a widget")
    controls = {}
    for name, abbrev in abbrevs.items():
        default = params[name].default if name in params else inspect.Parameter.empty
        _check_range(name, abbrev, default)
        w = widgets.interactive.widget_from_abbrev(
            abbrev, None if default is inspect.Parameter.empty else default)
        if w is None:
            raise MemlabError(f"interact: {name}={abbrev!r} makes no control; allowed: a range "
                              f"(low, high) or (low, high, step), a list of values, a bool, a "
                              f"string or an ipywidgets widget")
        w.description = w.description or name
        if hasattr(w, "continuous_update"):
            w.continuous_update = False
        controls[name] = w
    return Explorer(lambda **kw: output_html(fn, **kw), controls, title, max_frames)


def _fn_name(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", type(fn).__name__)
    return "the function" if name == "<lambda>" else name


def _check_range(name: str, abbrev: Any, default: Any) -> None:
    """A ``(low, high[, step])`` tuple of numbers: ``low < high``, ``step > 0``, the default
    on it."""
    if not (isinstance(abbrev, tuple) and 2 <= len(abbrev) <= 3 and all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in abbrev)):
        return
    low, high = abbrev[:2]
    if not low < high:
        raise MemlabError(f"interact: {name}=(low, high) must have low < high, got {abbrev!r}"
                          + (f"; did you mean {(high, low, *abbrev[2:])!r}?" if high < low else ""))
    if len(abbrev) == 3 and not abbrev[2] > 0:
        raise MemlabError(f"interact: {name}=(low, high, step) must have step > 0, got {abbrev!r}")
    if isinstance(default, numbers.Real) and not isinstance(default, bool) \
            and not low <= default <= high:
        raise MemlabError(f"interact: {name}'s default {default!r} lies outside its range "
                          f"{abbrev!r}; widen the range or change the default")

"""Turn Graphviz graphs and matplotlib figures into small, stable SVG text."""
from __future__ import annotations

import io
import re
from typing import Any

_XML_HEAD = re.compile(r"^\s*<\?xml[^>]*>\s*(<!DOCTYPE[^>]*>\s*)?", re.S)
_COMMENT = re.compile(r"<!--.*?-->\s*", re.S)


def _rc() -> None:
    import matplotlib
    matplotlib.rcParams["svg.hashsalt"] = "memlab"  # deterministic ids
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, diffable
    matplotlib.rcParams["figure.dpi"] = 80


_rc()


def setup() -> None:
    """Lesson set-up: inline figures as SVG with deterministic ids and no timestamps."""
    _rc()
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        set_matplotlib_formats("svg", metadata={"Date": None})
    except Exception:  # pragma: no cover - outside IPython
        pass


def to_svg(obj: Any) -> str:
    """SVG text of a Graphviz graph, a matplotlib figure (closed afterwards) or SVG text."""
    if isinstance(obj, str):
        svg = obj
    elif hasattr(obj, "pipe"):  # graphviz.Digraph / Source
        svg = obj.pipe(format="svg").decode()
    elif hasattr(obj, "savefig"):  # matplotlib Figure
        buf = io.StringIO()
        obj.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
        import matplotlib.pyplot as plt
        plt.close(obj)
        svg = buf.getvalue()
    else:
        raise TypeError(f"cannot draw {type(obj).__name__} as SVG")
    return _COMMENT.sub("", _XML_HEAD.sub("", svg)).strip()


def show(fig: Any) -> None:
    """Display a matplotlib figure once and close it: for a slider's callback, whose Output would
    otherwise get the figure again from the inline backend, or none in a front end that does not
    flush figures into widgets."""
    from IPython.display import display
    import matplotlib.pyplot as plt
    display(fig)
    plt.close(fig)

"""Re-execute notebooks in place so they are stored with fresh outputs.

    .venv/bin/python scripts/execute_notebooks.py lessons/01_*.ipynb
    .venv/bin/python scripts/execute_notebooks.py --trim lessons/*.ipynb   # widget state only

Runs each notebook top to bottom in its own folder with this environment's
kernel, stores outputs and the widget state a stored notebook needs, and fails
on the first cell error.

Widget state: a stored lesson opens untrusted, so JupyterLab shows each widget's
``text/html`` (a memlab stepper's or slider's preview) and never renders a widget
from the stored state; the site replays memlab's widgets from the frames their
outputs carry. What is kept is the state of the other widgets (a progress bar,
whose final value the site shows) and the models they refer to, so each kept
widget is whole. The rest (the steppers' Output models hold a frame each) is
dropped, after checking that no widget Output holds the same figure twice.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# One BLAS thread, as in the tests (tests/conftest.py): stored outputs must not depend on the cores.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import nbformat
from nbclient import NotebookClient

VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"
FLIPBOOK = "application/vnd.memlab.flipbook+json"     # memlab.viz.flipbook.MIME


def _refs(value: Any) -> list[str]:
    """Model ids a widget's state refers to (``"IPY_MODEL_<id>"``)."""
    if isinstance(value, str):
        return [value[len("IPY_MODEL_"):]] if value.startswith("IPY_MODEL_") else []
    if isinstance(value, dict):
        return [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def twice_stored_figures(state: dict[str, Any]) -> list[str]:
    """Widget Outputs that hold the same picture twice (a figure shown with display() and again
    by the inline backend), one line each."""
    out = []
    for model_id, model in state.items():
        if model.get("model_name") != "OutputModel":
            continue
        figs = ["".join(o["data"][m]) for o in model.get("state", {}).get("outputs", [])
                for m in ("image/svg+xml", "image/png") if m in o.get("data", {})]
        if len(figs) != len(set(figs)):
            out.append(f"widget output {model_id[:8]}: the same figure is stored twice")
    return out


def trim_widget_state(nb: Any) -> None:
    """Keep the state of the widgets shown without a flipbook and of the models they refer to;
    drop the rest (and the metadata entry when nothing is left)."""
    widgets = nb.metadata.get("widgets", {}).get(STATE, {})
    state = widgets.get("state", {})
    wanted = [o["data"][VIEW]["model_id"] for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if VIEW in o.get("data", {})
              and FLIPBOOK not in o["data"]]
    keep: set[str] = set()
    while wanted:
        m = wanted.pop()
        if m in state and m not in keep:
            keep.add(m)
            wanted += _refs(state[m].get("state", {}))
    if keep:
        widgets["state"] = {m: state[m] for m in state if m in keep}
    else:
        nb.metadata.pop("widgets", None)


def execute(path: Path, timeout: int = 300) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.time()
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}},
                   store_widget_state=True).execute()
    bad = twice_stored_figures(nb.metadata.get("widgets", {}).get(STATE, {}).get("state", {}))
    if bad:
        raise SystemExit(f"{path}: draw the figure once in the widget's callback (return or "
                         "plt.close it, do not display() it as well):\n" + "\n".join(bad))
    trim_widget_state(nb)
    nbformat.write(nb, path)
    return time.time() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trim", action="store_true",
                    help="only trim the stored widget state (no re-execution)")
    ap.add_argument("notebooks", nargs="+")
    args = ap.parse_args(argv)
    for arg in args.notebooks:
        p = Path(arg)
        if args.trim:
            nb = nbformat.read(p, as_version=4)
            before = len(json.dumps(nb.metadata.get("widgets", {})))
            trim_widget_state(nb)
            nbformat.write(nb, p)
            print(f"{p}: widget state {before / 1e3:.1f} -> "
                  f"{len(json.dumps(nb.metadata.get('widgets', {}))) / 1e3:.1f} kB", flush=True)
        else:
            print(f"{p}: {execute(p):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the stored lessons weigh, and what they keep for the site and for a lesson not yet run:
every frame of every stepper and slider, a preview, and only the widget state that is used
(scripts/execute_notebooks.py trims the rest)."""
from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
from pathlib import Path

import nbformat
import pytest

from memlab.viz.flipbook import MIME, decode_frames

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted(Path(os.environ.get("MEMLAB_SITE_LESSONS", ROOT / "lessons")).glob("*.ipynb"))
#: the most the stored lessons may weigh together (each re-execution rewrites them in git)
LIMIT = 10_000_000


def _script():
    spec = importlib.util.spec_from_file_location("execute_notebooks",
                                                  ROOT / "scripts" / "execute_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ex = _script()


def test_the_stored_lessons_weigh_under_the_limit():
    total = sum(p.stat().st_size for p in LESSONS)
    print(f"\nstored lessons: {total / 1e6:.2f} MB in all")
    assert len(LESSONS) > 10 and total < LIMIT, f"{total / 1e6:.2f} MB"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem[:2] for p in LESSONS])
def test_every_flipbook_keeps_every_frame_and_a_preview(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if MIME not in data:
                continue
            book = data[MIME]
            grid = math.prod(len(a["labels"]) for a in book["axes"])
            frames = decode_frames(book["frames"])
            assert len(frames) == grid, f"{path.name} cell {i}: {len(frames)} of {grid} frames"
            assert all(frames), f"{path.name} cell {i}: an empty frame"
            preview = "".join(data.get("text/html", ""))
            assert 'class="memlab-preview"' in preview and "Run this cell" in preview, \
                f"{path.name} cell {i}: no preview for a notebook not yet run"


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem[:2] for p in LESSONS])
def test_only_the_widget_state_in_use_is_stored(path):
    nb = nbformat.read(path, as_version=4)
    trimmed = copy.deepcopy(nb)
    ex.trim_widget_state(trimmed)
    assert trimmed.metadata == nb.metadata, \
        f"{path.name}: stores widget state nothing uses (scripts/execute_notebooks.py --trim)"


def _stepper_and_bar() -> nbformat.NotebookNode:
    """A notebook with a stepper (a flipbook beside its widget) and a progress bar."""
    model = lambda name, **state: {"model_name": name, "model_module": "@jupyter-widgets/x",
                                   "model_module_version": "2", "state": state}
    state = {
        "box": model("VBoxModel", children=["IPY_MODEL_play", "IPY_MODEL_out"]),
        "play": model("PlayModel", layout="IPY_MODEL_lay1"),
        "out": model("OutputModel", outputs=[{"output_type": "display_data",
                                              "data": {"image/svg+xml": "<svg>a</svg>"}}]),
        "lay1": model("LayoutModel"),
        "bar": model("IntProgressModel", value=7, max=7, layout="IPY_MODEL_lay2",
                     style="IPY_MODEL_sty"),
        "lay2": model("LayoutModel"),
        "sty": model("ProgressStyleModel"),
        "orphan": model("LayoutModel"),
    }
    view = lambda m: {ex.VIEW: {"model_id": m, "version_major": 2, "version_minor": 0}}
    nb = nbformat.v4.new_notebook()
    shown = lambda data: nbformat.v4.new_output("display_data", data=data)
    nb.cells = [nbformat.v4.new_code_cell("s", outputs=[shown(
                    {**view("box"), MIME: {"frames": []}, "text/plain": "S"})]),
                nbformat.v4.new_code_cell("b", outputs=[shown(
                    {**view("bar"), "text/plain": "IntProgress(value=0)"})])]
    nb.metadata["widgets"] = {ex.STATE: {"state": state, "version_major": 2, "version_minor": 0}}
    return nb


def test_the_trim_keeps_each_plain_widget_whole_and_drops_the_rest():
    nb = _stepper_and_bar()
    ex.trim_widget_state(nb)
    assert set(nb.metadata["widgets"][ex.STATE]["state"]) == {"bar", "lay2", "sty"}
    assert nb.metadata["widgets"][ex.STATE]["version_major"] == 2
    only_stepper = _stepper_and_bar()
    only_stepper.cells.pop()
    ex.trim_widget_state(only_stepper)
    assert "widgets" not in only_stepper.metadata
    json.dumps(nb)   # still a notebook


def test_a_widget_output_holding_a_figure_twice_is_caught():
    state = _stepper_and_bar().metadata["widgets"][ex.STATE]["state"]
    assert ex.twice_stored_figures(state) == []
    state["out"]["state"]["outputs"].append(copy.deepcopy(state["out"]["state"]["outputs"][0]))
    assert ex.twice_stored_figures(state) == ["widget output out: the same figure is stored twice"]

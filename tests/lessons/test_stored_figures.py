"""Stored lesson outputs show each figure once, as a figure.

A function that returns a matplotlib figure it left open is stored twice, once as the cell's
value and once by the inline backend at the end of the cell; HTML text returned without
``HTML(...)`` is stored as a quoted string that no browser draws; a node left unnamed shows as
``matmul_11804``. All three are caught here, on the notebooks as they are stored.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

LESSONS = sorted((Path(__file__).resolve().parents[2] / "lessons").glob("[0-9][0-9]_*.ipynb"))
PICTURES = ("image/svg+xml", "image/png", "text/html")
RAW_MARKUP = ("'<svg", "'<div", '"<svg', '"<div', "'<?xml", "'<table")


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def problems(cells: list[dict]) -> list[str]:
    """One line per cell that stores a picture twice or markup as a plain string."""
    out = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        seen = set()
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            for mime in PICTURES:
                if mime in data:
                    body = _text(data[mime])
                    if (mime, body) in seen:
                        out.append(f"cell {i}: the same {mime} output is stored twice")
                    seen.add((mime, body))
            plain = _text(data.get("text/plain", "")).lstrip()
            if not any(m in data for m in PICTURES) and plain.startswith(RAW_MARKUP):
                out.append(f"cell {i}: an output is raw markup text ({plain[:30]!r}...), "
                           "not a picture: wrap it in IPython.display.HTML")
    return out


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_each_figure_is_stored_once_and_drawn(path):
    bad = problems(json.loads(path.read_text())["cells"])
    assert not bad, f"{path.name}:\n" + "\n".join(bad)


def _code(*outputs: dict) -> dict:
    return {"cell_type": "code", "source": "", "outputs": list(outputs)}


def test_the_rule_catches_a_double_figure_and_a_raw_string():
    svg = {"image/svg+xml": "<svg>fig</svg>", "text/plain": "<Figure size 80x80 with 1 Axes>"}
    twice = _code({"output_type": "execute_result", "data": svg},
                  {"output_type": "display_data", "data": dict(svg)})
    raw = _code({"output_type": "execute_result",
                 "data": {"text/plain": "'<div class=\"memlab-row\"><svg>...'"}})
    fine = _code({"output_type": "display_data", "data": svg},
                 {"output_type": "display_data",
                  "data": {"image/svg+xml": "<svg>other</svg>", "text/plain": "x"}},
                 {"output_type": "stream", "name": "stdout", "text": "'<div' in a print is text"})
    assert problems([twice]) == ["cell 0: the same image/svg+xml output is stored twice"]
    assert len(problems([raw])) == 1 and "raw markup" in problems([raw])[0]
    assert problems([fine]) == []


# Widget Outputs holding a figure twice are refused when a lesson is executed (the rule is
# scripts/execute_notebooks.py's twice_stored_figures, tested in tests/site/test_stored_weight.py),
# and no stored lesson keeps an Output model's state.


#: op names whose auto-generated node names (``matmul_11804``) must not reach a stored output
OPS = ("add", "sub", "mul", "div", "copy", "neg", "exp", "log", "sigmoid", "tanh", "relu",
       "relu_grad", "broadcast_to", "sum_to", "matmul", "sum", "mean", "reshape", "concat",
       "slice", "pad", "softmax", "onehot", "softmax_xent", "pool", "conv", "conv_wgrad",
       "embedding", "embedding_grad", "accumulate", "full", "conv2d", "fc", "batchnorm")
AUTO_NAME = re.compile(r"(?<![\w.#/-])(?:" + "|".join(OPS) + r")_\d+(?![\w.])")
#: lessons allowed to show such names for now (none)


def auto_names(cells: list[dict]) -> list[str]:
    """``cell i: name`` for each auto-generated node name in a stored text or picture."""
    out = []
    for i, cell in enumerate(cells):
        for o in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            texts = [_text(o.get("text", ""))] + [_text(v) for v in o.get("data", {}).values()
                                                  if isinstance(v, (str, list))]
            out += [f"cell {i}: {m}" for t in texts for m in sorted(set(AUTO_NAME.findall(t)))]
    return out


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_no_auto_generated_node_name_is_shown(path):
    bad = auto_names(json.loads(path.read_text())["cells"])
    assert not bad, f"{path.name}: name the nodes the lesson shows:\n" + "\n".join(bad)


def test_the_rule_catches_an_auto_name_and_not_a_figure_id():
    cell = _code({"output_type": "stream", "name": "stdout", "text": "in-place on softmax_30: x"},
                 {"output_type": "display_data",
                  "data": {"image/svg+xml": '<g id="text_10"><g id="patch_12">',
                           "text/plain": "f"}})
    assert auto_names([cell]) == ["cell 0: softmax_30"]

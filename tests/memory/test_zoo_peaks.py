"""The default order and both planners never use more bytes than main did at f2bc0f2, before the
one-rule liveness, on any graph of the zoo (zoo_graphs.py): the table zoo_peaks_f2bc0f2.json was
computed by that commit's code (an independent route: another implementation of the orders, the
rule and the planners), not by this one. Peaks may only go down; on average they stay within 5%."""
from __future__ import annotations

import json
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
from zoo_graphs import graphs, peaks  # noqa: E402

BEFORE = json.loads((HERE / "zoo_peaks_f2bc0f2.json").read_text())
GRAPHS = graphs()


def test_the_table_covers_the_zoo():
    assert sorted(BEFORE) == sorted(name for name, _ in GRAPHS)


@pytest.mark.parametrize("name,outputs", GRAPHS, ids=[name for name, _ in GRAPHS])
def test_never_more_bytes_than_before(name, outputs):
    now = peaks(outputs)
    for key, before in BEFORE[name].items():
        assert now[key] <= before, (name, key, now[key], before)


def test_within_five_percent_on_average():
    ratios = [peaks(outs)[key] / BEFORE[name][key] for name, outs in GRAPHS for key in BEFORE[name]]
    assert sum(ratios) / len(ratios) <= 1.05

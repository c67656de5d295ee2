"""The README's public API, checked against the package.

The names come from the README's table "Public API (`import memlab as ml`)" itself, so a name added
there cannot be forgotten here: each must resolve right after ``import memlab as ml``, and each
callable must answer generic bad arguments (None, a string, a negative number, an empty list), one
positional parameter at a time, with a :class:`~memlab.MemlabError` -- or with a result this table
documents as valid, with the reason. The table gives each callable one good call to vary.
"""
from __future__ import annotations

import inspect
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import memlab as ml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "docs" / "api.md"     # the library's public API table


# ---------------------------------------------------------------------------------------------
# The README's table, read


def api_rows(text: str | None = None) -> list[str]:
    """First cells of the rows of the README's "Public API" table."""
    text = README.read_text() if text is None else text
    section = text.split("## Public API (`import memlab as ml`)", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return [re.split(r"(?<!\\)\|", row)[1].strip() for row in rows[1:]]  # row 0 is the header


def _strip_calls(segment: str) -> str:
    """``ml.Executor(outputs).run(feed)`` -> ``ml.Executor.run``: the path, without arguments."""
    while True:
        stripped = re.sub(r"\([^()]*\)", "", segment)
        if stripped == segment:
            return segment
        segment = stripped


def names_in_cell(cell: str) -> list[str]:
    """Dotted names of one first cell, each starting with ``ml.``.

    A backticked segment lists names (``ml.add, sub``: siblings, also split on ``/``); backticked
    names in parentheses after a segment are members of it when it is a module (``ml.trees``
    (``Tree``, ``peak``)), otherwise its siblings (``ml.MemlabError`` (and ``GraphError``));
    members starting with ``.`` are attributes of a result and are left to the call table. A
    name without ``ml.`` (``sharing.conditions``) is looked up from the previous name's package
    outwards, like a Python name.
    """
    out: list[str] = []
    depth, last_full = 0, "ml"
    for m in re.finditer(r"`([^`]*)`|\(|\)", cell):
        tok = m.group(0)
        if tok == "(":
            depth += 1
            continue
        if tok == ")":
            depth -= 1
            continue
        for i, part in enumerate(re.split(r",|\s/\s", _strip_calls(m.group(1)))):
            part = part.strip().replace("memlab.", "ml.", 1)
            if not part or part.startswith("."):
                continue
            if part.startswith("ml."):
                name = part
            elif depth and _is_module(last_full):
                name = f"{last_full}.{part}"
            else:
                name = _lookup(last_full.rsplit(".", 1)[0], part)
            out.append(name)
            if depth == 0 and i == 0:
                last_full = name
    return out


def _resolve(name: str) -> Any:
    obj: Any = ml
    for attr in name.split(".")[1:]:
        obj = getattr(obj, attr)
    return obj


def _is_module(name: str) -> bool:
    try:
        return inspect.ismodule(_resolve(name))
    except AttributeError:
        return False


def _lookup(package: str, part: str) -> str:
    """``part`` relative to ``package`` or the nearest enclosing package that has it."""
    while True:
        name = f"{package}.{part}"
        if package == "ml" or _has(name):
            return name
        package = package.rsplit(".", 1)[0]


def _has(name: str) -> bool:
    try:
        _resolve(name)
        return True
    except AttributeError:
        return False


API_NAMES = sorted({n for cell in api_rows() for n in names_in_cell(cell)})


def test_the_readme_table_is_read():
    """The reader finds the names it should, in every form the table writes them."""
    for name in ("ml.placeholder", "ml.sub", "ml.pad_axis", "ml.Executor.run", "ml.trees.peak",
                 "ml.execute.ArenaRunner", "ml.GraphError", "ml.memory.sharing.conditions",
                 "ml.models.opennmt", "ml.checkpoint.parallel.bubble_fraction",
                 "ml.cuda.available", "ml.checkpoint.optimal_rematerialization"):
        assert name in API_NAMES
    assert len(API_NAMES) > 80


@pytest.mark.parametrize("cell,names", [
    ("`ml.add, sub`", ["ml.add", "ml.sub"]),
    ("`ml.Executor(outputs).run(feed)`", ["ml.Executor.run"]),
    ("`ml.execute.NaiveRunner / PoolRunner`", ["ml.execute.NaiveRunner", "ml.execute.PoolRunner"]),
    ("`ml.trees` (`Tree`, `peak`)", ["ml.trees", "ml.trees.Tree", "ml.trees.peak"]),
    ("`ml.MemlabError` (and `GraphError`)", ["ml.MemlabError", "ml.GraphError"]),
    ("`ml.models.seq2seq(a, b)` (`.loss`), `ml.scope(m)`", ["ml.models.seq2seq", "ml.scope"]),
    ("`ml.memory.plan_sharing(o)`, `sharing.conditions`, `models.opennmt`",
     ["ml.memory.plan_sharing", "ml.memory.sharing.conditions", "ml.models.opennmt"]),
    ("`memlab.cuda.available()`", ["ml.cuda.available"]),
])
def test_the_reading_rules(cell, names):
    assert names_in_cell(cell) == names


# ---------------------------------------------------------------------------------------------
# Item 5: every name works right after ``import memlab as ml``


def test_every_readme_name_resolves_in_a_fresh_interpreter():
    """``ml.checkpoint.parallel``, ``ml.models.opennmt``... without importing them first."""
    code = ("import memlab as ml, sys\nbad = []\nfor n in sys.argv[1:]:\n    obj = ml\n"
            "    try:\n        [obj := getattr(obj, a) for a in n.split('.')[1:]]\n"
            "    except AttributeError as e:\n        bad.append(f'{n}: {e}')\nprint('\\n'.join(bad))")
    out = subprocess.run([sys.executable, "-c", code, *API_NAMES], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.strip()
    assert out == "", f"README names that fail after `import memlab as ml`:\n{out}"


def test_one_version_from_the_package_metadata():
    """``memlab.__version__`` is pyproject.toml's version (read from the metadata once installed)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert ml.__version__ == declared


# ---------------------------------------------------------------------------------------------
# Item 4: generic bad arguments, from one table

BAD = {"None": None, "str": "abc", "negative": -1, "empty list": []}


@dataclass
class Call:
    """One good call of a public name: ``args()`` gives its positional arguments, each of which
    the test replaces by every bad value; ``valid`` documents (position, bad value) pairs that are
    correct calls, with the reason; ``fn`` calls something other than the name itself."""

    args: Callable[[], tuple]
    valid: dict[tuple[int, str], str] = field(default_factory=dict)
    fn: Callable[..., Any] | None = None


def _x(shape=(2, 3)):
    return ml.placeholder("x", shape)


def _graph():
    x, w = ml.placeholder("x", (2, 3)), ml.placeholder("w", (3, 4))
    return ml.relu(ml.matmul(x, w)) * 2.0


def _loss():
    x, w = ml.placeholder("x", (2, 3)), ml.placeholder("w", (3, 4))
    return ml.sum(ml.tanh(ml.matmul(x, w)))


def _step():
    """A training step: the loss and its gradient (what the checkpointing rewrites take)."""
    loss = _loss()
    return [loss, *ml.gradients(loss, [n for n in ml.topo_order(loss) if n.name == "w"])]


def _tree():
    return ml.trees.Tree([-1, 0, 0, 1], [1.0, 2.0, 3.0, 1.0])


def _chain():
    return ml.checkpoint.hetero_chain([2, 1, 1, 1], [1.0, 2.0, 1.0])


def _model():
    return ml.checkpoint.parallel.uniform_model(4, 10, 8.0)


def _enter(module, step=None):
    with ml.scope(module, step):
        return ml.placeholder("s")


def _run(feed):
    x = ml.placeholder("x", (2,))
    return ml.Executor(ml.exp(x)).run(feed)


def _ints():
    return ml.placeholder("y", (2,), dtype=np.int64)


NAME_OK = {(2, "None"): "name=None picks a name", (2, "str"): "any string is a name"}
UNARY_NAME_OK = {(1, "None"): "name=None picks a name", (1, "str"): "any string is a name"}
EMPTY_OUTPUTS = "no outputs: an empty order or plan"
NONE_DEFAULT = "None is the documented default"
ERROR_OK = {(0, k): "an exception's message may be anything" for k in BAD}


def _elementwise_binary():
    return Call(lambda: (_x(), _x(), "n"), {**NAME_OK, (0, "negative"): "a number broadcasts",
                                             (1, "negative"): "a number broadcasts"})


EMPTY_ARRAY = "[] is an empty array operand: the op maps it to an empty array"


def _unary():
    return Call(lambda: (_x(), "n"), {**UNARY_NAME_OK, (0, "empty list"): EMPTY_ARRAY})


CALLS: dict[str, Call] = {
    "ml.placeholder": Call(lambda: ("x", (2, 3), np.float32),
                           {(0, "str"): "any non-empty string is a name",
                            (1, "empty list"): "shape [] is a scalar"}),
    "ml.constant": Call(lambda: ([1.0, 2.0], "c", np.float32),
                        {(0, "negative"): "a number is a constant", (0, "empty list"):
                         "an empty array is a constant", (1, "None"): NONE_DEFAULT,
                         (1, "str"): "any string is a name", (2, "None"): "dtype inferred"}),
    **{f"ml.{n}": _elementwise_binary() for n in ("add", "sub", "mul", "div")},
    **{f"ml.{n}": _unary() for n in ("neg", "exp", "log", "sigmoid", "tanh", "relu", "softmax")},
    "ml.matmul": Call(lambda: (_x(), ml.placeholder("w", (3, 4)), False, False)),
    "ml.sum": Call(lambda: (_x(), 1, False), {(1, "None"): "axis=None reduces every axis",
                                              (1, "negative"): "axis -1 is the last axis",
                                              (1, "empty list"): "no axes: nothing reduced"}),
    "ml.mean": Call(lambda: (_x(), 1, False), {(1, "None"): "axis=None reduces every axis",
                                               (1, "negative"): "axis -1 is the last axis",
                                               (1, "empty list"): "no axes: nothing reduced"}),
    "ml.reshape": Call(lambda: (_x(), (3, 2))),
    "ml.concat": Call(lambda: (_x(), _x())),
    "ml.slice_axis": Call(lambda: (_x(), 1, 0, 2), {(1, "negative"): "axis -1 is the last axis"}),
    "ml.pad_axis": Call(lambda: (_x(), 1, 1, 1), {(1, "negative"): "axis -1 is the last axis"}),
    "ml.softmax_cross_entropy": Call(lambda: (_x(), _ints())),
    "ml.onehot": Call(lambda: (_ints(), 4, np.float32),
                      {(0, "negative"): "a number is one label (its range is checked when run)"}),
    "ml.pool": Call(lambda: (_x(), 3), {(0, "empty list"): EMPTY_ARRAY}),
    "ml.conv": Call(lambda: (_x(), ml.placeholder("k", (3,))),
                    {(0, "empty list"): EMPTY_ARRAY, (1, "None"): NONE_DEFAULT}),
    "ml.topo_order": Call(lambda: (_graph(),), {(0, "empty list"): EMPTY_OUTPUTS}),
    "ml.last_readers": Call(lambda: (_graph(), None), {(0, "empty list"): EMPTY_OUTPUTS,
                                                       (1, "None"): NONE_DEFAULT}),
    "ml.gradients": Call(lambda: (_loss(), [_x()]), {(1, "empty list"): "no xs: no gradients"}),
    "ml.Executor": Call(lambda: (_graph(), None, "pool", "cpu"),
                        {(0, "empty list"): EMPTY_OUTPUTS, (1, "None"): NONE_DEFAULT,
                         (2, "None"): NONE_DEFAULT}),
    "ml.Executor.run": Call(lambda: ({"x": np.ones(2, np.float32)},), fn=_run),
    "ml.MemoryPool": Call(lambda: (True,)),
    "ml.memory.CachingAllocator": Call(lambda: (False, 1 << 30, None),
                                       {(1, "None"): NONE_DEFAULT, (2, "None"): NONE_DEFAULT}),
    "ml.memory.BFCAllocator": Call(lambda: (1 << 30, True), {(0, "None"): NONE_DEFAULT}),
    "ml.memory_order": Call(lambda: (_graph(), "greedy"), {(0, "empty list"): EMPTY_OUTPUTS}),
    "ml.order_peak": Call(lambda: (_graph(), None), {(0, "empty list"): EMPTY_OUTPUTS,
                                                     (1, "None"): NONE_DEFAULT}),
    "ml.plan_memory": Call(lambda: (_graph(), True, True, 1, None),
                           {(0, "empty list"): EMPTY_OUTPUTS, (4, "None"): NONE_DEFAULT}),
    "ml.plan_offsets": Call(lambda: (_graph(), None, True, "greedy", 64),
                            {(0, "empty list"): EMPTY_OUTPUTS, (1, "None"): NONE_DEFAULT}),
    "ml.plan_tags_by_size": Call(lambda: (_graph(), None, True, 64),
                                 {(0, "empty list"): EMPTY_OUTPUTS, (1, "None"): NONE_DEFAULT}),
    "ml.live_bytes_lower_bound": Call(lambda: (ml.plan_memory(_graph()),)),
    "ml.check_plan": Call(lambda: (ml.plan_memory(_graph()),)),
    **{name: Call(lambda: ([y := _graph()], ml.topo_order(y)),
                  {(1, "None"): "order=None: the topological order"})
       for name in ("ml.Runner", "ml.execute.NaiveRunner", "ml.execute.PoolRunner")},
    "ml.execute.ArenaRunner": Call(lambda: ([y := _graph()], ml.plan_memory(y))),
    "ml.accumulate": Call(lambda: (_x(), _x(), "n"), dict(NAME_OK)),
    "ml.priority_order": Call(lambda: (_graph(), lambda n: n.id),
                              {(0, "empty list"): EMPTY_OUTPUTS}),
    "ml.scope": Call(lambda: ("enc", 0), {(0, "str"): "any non-empty string names a module",
                                          (1, "None"): "step=None: outside a recurrence"},
                     fn=_enter),
    "ml.cuda.available": Call(lambda: ()),
    "ml.cuda.attention_forward": Call(lambda: (*[np.ones(s, np.float32) for s in (
        (1, 2, 2), (1, 2, 2), (1, 2, 2), (1, 2, 2), (1, 2))], False)),
    "ml.trees.Tree": Call(lambda: ([-1, 0, 0], [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]),
                          {(2, "None"): "m=None: no execution files"}),
    "ml.trees.peak": Call(lambda: (_tree(), [3, 1, 2, 0])),
    "ml.scheduling.iovolume.io_volume": Call(lambda: (ml.taskgraph.sequential_example(),
                                                      list("ACBEDF"), 5.0, "furthest")),
    "ml.scheduling.iovolume.io_floor": Call(lambda: (ml.taskgraph.sequential_example(),
                                                     list("ACBEDF"))),
    "ml.scheduling.iovolume.tree_taskgraph": Call(lambda: (_tree(),)),
    "ml.trees.best_postorder": Call(lambda: (_tree(),)),
    "ml.trees.optimal_traversal": Call(lambda: (_tree(),)),
    "ml.trees.brute_force": Call(lambda: (_tree(), 10)),
    "ml.trees.postorder_counterexample": Call(lambda: (2, 2, 10.0, 1.0)),
    **{f"ml.mapping.{n}": Call(lambda: (_tree(), [1.0, 1.0, 1.0, 1.0], 2, 1.0),
                               {(1, "None"): "w=None: unit work"})
       for n in ("all_to_all", "proportional")},
    "ml.mapping.memory_aware": Call(lambda: (_tree(), [1.0, 1.0, 1.0, 1.0], 2, 20.0, 1.0),
                                    {(1, "None"): "w=None: unit work",
                                     (3, "None"): "M_B=None: no memory bound"}),
    "ml.mapping.processor_peaks": Call(lambda: (_tree(), ml.mapping.proportional(_tree(), None, 2),
                                                True)),
    "ml.scheduling.dask.to_dask": Call(lambda: (_tree(), 8)),
    "ml.scheduling.dask.run": Call(lambda: (_tree(), "best_postorder"),
                                   {(1, "None"): "order=None: Dask's own order"}),
    "ml.scheduling.dask.run_mapping": Call(lambda: (_tree(), "proportional", 2, [1.0] * 4, None,
                                                    0.0),
                                           {(3, "None"): "w=None: unit work",
                                            (4, "None"): "M_B=None: no memory bound"}),
    "ml.scheduling.dask.dask_order": Call(lambda: (_tree(),)),
    "ml.scheduling.dask.followed_order": Call(lambda: (_tree(), [3, 1, 2, 0])),
    "ml.scheduling.dask.LocalDask": Call(lambda: (1, None),
                                         {(1, "None"): "memory_limit=None: no limit"}),
    "ml.scheduling.dask.simulated_worker_peaks": Call(
        lambda: (_tree(), ml.mapping.proportional(_tree(), None, 2))),
    **{f"ml.checkpoint.{n}": Call(lambda: (5,))
       for n in ("store_all", "recompute_all", "sqrt_schedule")},
    "ml.checkpoint.store_some": Call(lambda: (5, [2], "recompute"),
                                     {(1, "empty list"): "keep nothing but x0"}),
    "ml.checkpoint.periodic": Call(lambda: (6, 2)),
    "ml.checkpoint.recursive": Call(lambda: (6, 2)),
    "ml.checkpoint.optimal": Call(lambda: (6, 3)),
    "ml.checkpoint.revolve": Call(lambda: (6, 2)),
    "ml.checkpoint.simulate": Call(lambda: (ml.checkpoint.store_all(3).actions, 3, True)),
    "ml.checkpoint.optimal_hetero": Call(lambda: (_chain(), 6)),
    "ml.checkpoint.multilevel_optimal": Call(lambda: (5, [3, None], [0.0, 1.0], [0.0, 1.0], 1.0),
                                             {(2, "empty list"): "no costs: every level free",
                                              (3, "empty list"): "no costs: every level free"}),
    "ml.checkpoint.disk_curves": Call(lambda: (5, [3, 4], {"disk": 1.0, "none": None})),
    "ml.checkpoint.run_schedule": Call(lambda: (ml.checkpoint.optimal(3, 3),
                                                ml.checkpoint.mlp_chain(3))),
    "ml.checkpoint.recompute_graph": Call(lambda: (ls := _step(), ml.checkpoint.every_k(ls, 2)),
                                          {(1, "empty list"): "keep nothing: recompute all"}),
    "ml.checkpoint.every_k": Call(lambda: (_step(), 2)),
    "ml.checkpoint.sqrt_checkpoints": Call(lambda: (_step(),)),
    "ml.checkpoint.memonger": Call(lambda: (_step(), 1000), {(1, "None"): NONE_DEFAULT}),
    "ml.checkpoint.recursive_checkpoints": Call(lambda: (_step(), 2)),
    "ml.checkpoint.optimal_rematerialization": Call(
        lambda: ([_loss()], 1000.0, None, None, 10.0),
        {(2, "None"): NONE_DEFAULT, (3, "None"): NONE_DEFAULT}),
    "ml.checkpoint.optimum_curve": Call(lambda: ([_loss()], [1000.0], None, 10.0),
                                        {(2, "None"): NONE_DEFAULT}),
    "ml.checkpoint.rounded_rematerialization": Call(
        lambda: ([_loss()], 1000.0), {}),
    "ml.checkpoint.parallel.pipeline_memory": Call(lambda: (_model(), 2, 2, 4, False)),
    "ml.checkpoint.parallel.data_parallel_memory": Call(lambda: (_model(), 2, 4, "plain")),
    "ml.checkpoint.parallel.bubble_fraction": Call(lambda: (2, 4)),
    "ml.checkpoint.parallel.intra_layer_memory": Call(lambda: (4, 6, 8, 2, "column", 4)),
    "ml.models.seq2seq": Call(lambda: (3, 3, 4, 2, 5)),
    "ml.checkpoint.MixedPrecisionAdam": Call(lambda: ([np.ones(3, np.float32)], 1e-3)),
    "ml.checkpoint.ZeroAdam": Call(lambda: ([np.ones(4, np.float32)], 2, "zero-1")),
    "ml.models.activations.parallel_model": Call(
        lambda: (ml.models.transformer(1, 3, 4, 2, 1, 5, 0.1),)),
    "ml.layernorm": Call(lambda: (_x(), ml.placeholder("g", (3,)), ml.placeholder("b", (3,)), 1e-5)),
    "ml.gelu": _unary(),
    "ml.dropout": Call(lambda: (_x(), 0.5, 1, 2), {(0, "empty list"): EMPTY_ARRAY}),
    "ml.bmatmul": Call(lambda: (_x((2, 2, 3)), _x((2, 3, 4)), False, False)),
    "ml.transpose": Call(lambda: (_x(), (1, 0))),
    "ml.causal_mask": Call(lambda: (_x(), -1e9), {(1, "negative"): "any number can fill"}),
    "ml.tiled_attention": Call(lambda: (_x(), _x(), _x(), False, 2)),
    "ml.graph.ops.flash.tile_traffic": Call(lambda: (8, 2, 4), {(2, "None"): "no block: plain"}),
    "ml.models.transformer": Call(lambda: (1, 3, 4, 2, 1, 5, 0.1)),
    "ml.models.gpt2": Call(lambda: ("small", 8)),
    "ml.models.gpt_7b": Call(lambda: (8,)),
    "ml.models.gpt.train": Call(lambda: (ml.models.transformer(1, 3, 4, 2, 1, 5), 1)),
    "ml.models.activations.formula_terms": Call(lambda: (4, 1, 8, 2)),
    "ml.models.activations.formula_total": Call(lambda: (4, 1, 8, 2)),
    "ml.models.activations.saved_terms": Call(lambda: (ml.models.transformer(1, 3, 4, 2, 1, 5), 0)),
    "ml.models.activations.policy_keep": Call(lambda: (ml.models.transformer(1, 3, 4, 2, 1, 5),
                                                       "full")),
    "ml.models.activations.recompute_policies": Call(
        lambda: (ml.models.transformer(1, 3, 4, 2, 1, 5, 0.1),)),
    "ml.memory.plan_sharing": Call(lambda: (_graph(), None), {(0, "empty list"): EMPTY_OUTPUTS,
                                                              (1, "None"): NONE_DEFAULT}),
    "ml.memory.sharing.conditions": Call(lambda: _conditions_args()),
    "ml.memory.sharing.usage_table": Call(lambda: _usage_args(),
                                          {(1, "empty list"): "no gradients: forward values only"}),
    "ml.memory.kvcache.request_stream": Call(lambda: (5, 0)),
    "ml.memory.kvcache.serve": Call(lambda: (ml.memory.kvcache.request_stream(3, 0, (1, 4), (1, 4)),
                                             ml.memory.kvcache.PagedAllocator(20, 2))),
    "ml.memory.kvcache.ContiguousAllocator": Call(lambda: (100, 1, 10)),
    "ml.memory.kvcache.PoolAllocator": Call(lambda: (100, 1)),
    "ml.memory.kvcache.PagedAllocator": Call(lambda: (10, 4)),
    "ml.conv2d": Call(lambda: (_x((1, 2, 5, 5)), ml.placeholder("w", (4, 1, 3, 3)), None, (1, 1),
                               (1, 1, 1, 1), (1, 1), 2, "c"),
                      {(2, "None"): "no bias", (3, "None"): NONE_DEFAULT, (4, "None"): NONE_DEFAULT,
                       (5, "None"): NONE_DEFAULT, (7, "None"): "name=None picks a name",
                       (7, "str"): "any string is a name"}),
    "ml.pool2d": Call(lambda: (_x((1, 2, 5, 5)), (3, 3), "max", (2, 2), (1, 1, 1, 1), (1, 1),
                               False, False, "p"),
                      {(3, "None"): NONE_DEFAULT, (4, "None"): NONE_DEFAULT,
                       (5, "None"): NONE_DEFAULT, (8, "None"): "name=None picks a name",
                       (8, "str"): "any string is a name"}),
    "ml.lrn": Call(lambda: (_x((1, 4, 2, 2)), 3, 1e-4, 0.75, 1.0, "l"),
                   {(5, "None"): "name=None picks a name", (5, "str"): "any string is a name"}),
    "ml.batchnorm": Call(lambda: (_x((2, 3, 2, 2)), *(ml.placeholder(k, (3,)) for k in "sbmv"),
                                  1e-5, "bn"),
                         {(6, "None"): "name=None picks a name", (6, "str"): "any string is a name"}),
    "ml.models.from_onnx": Call(lambda: ("squeezenet", 1, 48, True),
                                {(1, "None"): "the file's batch", (2, "None"): "the file's size"}),
    "ml.models.onnx_zoo": Call(lambda: ()),
    "ml.models.densenet": Call(lambda: ((1, 2), 1, 32, 4, 5)),
    "ml.models.pleiss_variants": Call(lambda: (ml.models.densenet((1, 2), 1, 32, 4, 5), None),
                                      {(1, "None"): NONE_DEFAULT}),
    "ml.graph.set_workspace": Call(lambda: (_graph(), {"matmul": 8}),
                                   {(0, "empty list"): EMPTY_OUTPUTS}),
    "ml.models.conv_workspace.mxnet_gemm": Call(lambda: (1024,)),
    "ml.models.conv_workspace.columns_per_image": Call(
        lambda: (ml.models.shape_only.conv2d(ml.placeholder("x", (1, 2, 4, 4)), 2, 3),)),
    "ml.models.conv_workspace.runtime_totals": Call(
        lambda: ([{"x": 4, "sharing": 0.1}], lambda d: ml.models.vgg(batch=1), {}),
        {(0, "empty list"): "no rows: no totals", (2, "None"): NONE_DEFAULT}),
    "ml.memory.fragmentation.oversized": Call(lambda: (ml.plan_memory(_graph()), 4.0)),
    "ml.models.every_k_curve": Call(
        lambda: (ml.models.training_outputs(ml.models.mlp(depth=2, batch=2, n_in=2, hidden=2,
                                                          n_out=2)), [1, 2])),
    "ml.models.layer_inputs": Call(lambda: (ml.models.vgg(batch=1),)),
    "ml.models.pytorch_saves.agreement": Call(lambda: ()),
    "ml.TaskGraph": Call(lambda: ()),
    **{f"ml.{e}": Call(lambda: ("message",), ERROR_OK)
       for e in ("MemlabError", "GraphError", "CycleError", "ShapeError", "FeedError", "PlanError",
                 "BudgetError", "ScheduleError", "TreeError", "GradingError", "DeviceError")},
}


def _conditions_args():
    m = ml.models.seq2seq(3, 3, 4, 2, 5)
    order = m.order([m.loss, *ml.gradients(m.loss, m.params)])
    computed = [n for n in order if not n.is_leaf]
    return (m.loss, order, computed[0], computed[1])


def _usage_args():
    m = ml.models.seq2seq(3, 3, 4, 2, 5)
    return (m.loss, ml.gradients(m.loss, m.params), "module")


#: names the README lists that are not called, with the reason
NOT_CALLED = {"ml.Plan": "a typing.Protocol, for isinstance checks: never called"}


def test_plan_is_a_protocol_every_plan_meets():
    g = _graph()
    assert isinstance(ml.plan_memory(g), ml.Plan) and isinstance(ml.plan_offsets(g), ml.Plan)
    assert not isinstance(object(), ml.Plan)


def test_every_callable_of_the_table_has_a_good_call():
    callables = {n for n in API_NAMES if not inspect.ismodule(_resolve(n))} - set(NOT_CALLED)
    assert callables - set(CALLS) == set(), "add a good call to CALLS for each new README name"
    assert set(CALLS) - set(API_NAMES) == set(), "CALLS names a function the README does not"


def _fn(name: str) -> Callable[..., Any]:
    return CALLS[name].fn or _resolve(name)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_good_call_works(name):
    _fn(name)(*CALLS[name].args())


CASES = [(name, pos, bad) for name in sorted(CALLS) for pos in range(len(CALLS[name].args()))
         for bad in BAD]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name,pos,bad", CASES, ids=[f"{n}-{p}-{b}" for n, p, b in CASES])
def test_generic_bad_argument(name, pos, bad):
    call = CALLS[name]
    args = list(call.args())
    args[pos] = BAD[bad]
    if (pos, bad) in call.valid:
        _fn(name)(*args)   # documented valid: it must run
        return
    with pytest.raises(ml.MemlabError):
        _fn(name)(*args)

"""memlab: how deep-learning and task-graph systems save memory, runnable.

The package follows the course's parts, each layer importing only the ones below it:

* :mod:`memlab.errors` -- the errors every layer raises;
* :mod:`memlab.plaindata` -- the registry where structures put their plain-data codecs (what the
  grader's judge and the kernel exchange);
* :mod:`memlab.graph` -- nodes, ops and autodiff by extending the graph (lecture 7, p.5-13, p.26);
* :mod:`memlab.memory` -- pools, liveness, the tag planner, offsets, colouring, a verifier (p.14-25);
* :mod:`memlab.cuda` -- Numba CUDA kernels and device memory (imported only when asked for:
  ``import memlab.cuda`` or ``Executor(..., device="cuda")``);
* :mod:`memlab.execute` -- one run loop behind the naive, pool and arena runners (p.10-22);
* :mod:`memlab.checkpoint` -- trading computation for memory: checkpoints on graphs and chains,
  Revolve, heterogeneous chains, several memory levels, parallel memory models (p.30-37, the scheduling slides);
* :mod:`memlab.models` -- the model zoo and the slides' comparisons (p.22-23, p.28-29, p.35-36);
* :mod:`memlab.scheduling` -- task graphs and trees (scheduling slides), apart from the op graph;
* :mod:`memlab.exercise_helpers` -- helpers the exercises hand students (``TagLayout``, random graphs);
* :mod:`memlab.testing` -- checks shared by the tests and the exercises' hidden tests;
* :mod:`memlab.viz` (drawings, widgets) and :mod:`memlab.grading` (the grader) on top.

``import memlab`` loads no drawing library, so it stays fast and headless.
"""
from .errors import (MemlabError, GraphError, CycleError, ShapeError, UnknownOpError, FeedError,
                     PlanError, BudgetError, ScheduleError, TreeError, GradingError, DeviceError,
                     OutOfMemoryError)
from . import graph, memory, execute, models, scheduling
from .graph import ops
# the graph's names of the README's API table, and its node types; the rest of memlab.graph
# (rewrite helpers such as rebuilt_from, gradient parts such as relu_grad) stays in its modules
from .graph import (Node, Op, PLACEHOLDER, CONSTANT, placeholder, constant, topo_order,
                    last_readers, priority_order, scope, gradients, add, sub, mul, div, neg, exp,
                    log, sigmoid, tanh, relu, matmul, sum, mean, reshape, concat, slice_axis,
                    pad_axis, softmax, onehot, softmax_cross_entropy, pool, conv, accumulate,
                    layernorm, gelu, dropout, bmatmul, transpose, causal_mask, tiled_attention,
                    conv2d, pool2d, lrn, batchnorm)

_graph_all = ["Node", "Op", "PLACEHOLDER", "CONSTANT", "placeholder", "constant", "topo_order",
              "last_readers", "priority_order", "scope", "gradients", "add", "sub", "mul", "div",
              "neg", "exp", "log", "sigmoid", "tanh", "relu", "matmul", "sum", "mean", "reshape",
              "concat", "slice_axis", "pad_axis", "softmax", "onehot", "softmax_cross_entropy",
              "pool", "conv", "accumulate", "layernorm", "gelu", "dropout", "bmatmul", "transpose",
              "causal_mask", "tiled_attention", "conv2d", "pool2d", "lrn", "batchnorm"]
from .execute import Executor, RunStats, Step, Runner
from .memory import (MemoryPool, plan_memory, TagPlan, PlanStep, plan_offsets, plan_tags_by_size,
                     live_bytes_lower_bound, OffsetPlan, check_plan, Plan, coloring, memory_order,
                     order_peak)
from .scheduling import trees, taskgraph, listsched, mapping, Tree, TaskGraph
from . import testing, checkpoint


def _version() -> str:
    """The version in the package metadata; in a source checkout, its ``pyproject.toml`` (the
    metadata of an editable install is written once, at install, and can be older)."""
    import re
    from importlib import metadata
    from pathlib import Path

    source = Path(__file__).resolve().parents[1] / "pyproject.toml"
    if source.is_file():
        found = re.search(r'^name = "memlab"\nversion = "([^"]+)"', source.read_text(), re.M)
        if found:
            return found.group(1)
    try:
        return metadata.version("memlab")
    except metadata.PackageNotFoundError:
        return "0+unknown"


__version__ = _version()
__all__ = ["MemlabError", "GraphError", "CycleError", "ShapeError", "UnknownOpError", "FeedError",
           "PlanError", "BudgetError", "ScheduleError", "TreeError", "GradingError", "DeviceError",
           "OutOfMemoryError",
           "graph", "ops", "memory", "execute", "checkpoint", "models", "scheduling", "testing",
           "Executor", "RunStats", "Step", "Runner",
           "MemoryPool", "plan_memory", "TagPlan", "PlanStep", "plan_offsets", "plan_tags_by_size",
           "live_bytes_lower_bound", "OffsetPlan", "check_plan", "Plan", "coloring", "memory_order",
           "order_peak", "trees", "taskgraph", "listsched", "mapping", "Tree", "TaskGraph",
           *_graph_all]


def __getattr__(name: str):
    """``ml.cuda``: imported on first use, since it imports numba (``import memlab`` stays light)."""
    if name == "cuda":
        import importlib

        return importlib.import_module(".cuda", __name__)
    raise AttributeError(f"module 'memlab' has no attribute {name!r}")

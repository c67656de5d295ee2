"""memlab: how deep-learning and task-graph systems save memory, runnable.

Build a graph (:mod:`memlab.graph`, :mod:`memlab.ops`), differentiate it by
extending it (:mod:`memlab.autodiff`), run it and measure its memory
(:mod:`memlab.executor`). Drawing and widgets live in :mod:`memlab.viz`,
which this package does not import, so ``import memlab`` stays fast.
"""
from .errors import (MemlabError, GraphError, CycleError, ShapeError, UnknownOpError, FeedError,
                     PlanError, BudgetError, TreeError, GradingError)
from .graph import Node, placeholder, constant, topo_order, consumers, check_order
from .ops import *  # noqa: F401,F403  (the op functions: add, mul, exp, matmul, pool, ...)
from .ops import __all__ as _ops_all
from .autodiff import gradients
from .executor import Executor, RunStats, Step
# Trees and task graphs (seed 002) stand apart from the op graph; import them as modules.
from . import trees, taskgraph, listsched, mapping  # noqa: E402
from .trees import Tree  # noqa: E402
from .taskgraph import TaskGraph  # noqa: E402

__version__ = "0.1.0"
__all__ = ["MemlabError", "GraphError", "CycleError", "ShapeError", "UnknownOpError", "FeedError",
           "PlanError", "BudgetError", "TreeError", "GradingError", "Node", "placeholder", "constant",
           "topo_order", "consumers", "check_order", "gradients", "Executor", "RunStats", "Step",
           "trees", "taskgraph", "listsched", "mapping", "Tree", "TaskGraph",
           *_ops_all]

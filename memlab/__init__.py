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
# Memory planning (CSE599G1 lecture 7, p.14-29): pools, tag planner, offsets, verifier.
from .mempool import MemoryPool  # noqa: E402
from .planner import plan_memory, MemoryPlan, PlanStep  # noqa: E402
from .offsets import plan_offsets, plan_tags_by_size, live_bytes_lower_bound, OffsetPlan  # noqa: E402
from .checkplan import check_plan  # noqa: E402
from . import coloring, models  # noqa: E402
# Trees and task graphs (seed 002) stand apart from the op graph; import them as modules.
from . import trees, taskgraph, listsched, mapping  # noqa: E402
from .trees import Tree  # noqa: E402
from .taskgraph import TaskGraph  # noqa: E402

__version__ = "0.1.0"
__all__ = ["MemlabError", "GraphError", "CycleError", "ShapeError", "UnknownOpError", "FeedError",
           "PlanError", "BudgetError", "TreeError", "GradingError", "Node", "placeholder", "constant",
           "topo_order", "consumers", "check_order", "gradients", "Executor", "RunStats", "Step",
           "MemoryPool", "plan_memory", "MemoryPlan", "PlanStep", "plan_offsets", "plan_tags_by_size",
           "live_bytes_lower_bound",
           "OffsetPlan", "check_plan", "coloring", "models",
           "trees", "taskgraph", "listsched", "mapping", "Tree", "TaskGraph",
           *_ops_all]

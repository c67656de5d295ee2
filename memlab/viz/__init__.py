"""Pictures and widgets for the lessons, on top of the algorithms.

Nothing in the algorithm modules imports this package: graphs are drawn with
Graphviz (:mod:`.graphs`), curves and Gantt charts with matplotlib
(:mod:`.plots`), slide steppers and sliders are ipywidgets (:mod:`.stepper`,
:mod:`.explorer`) that also carry a static flipbook of their frames (:mod:`.flipbook`).
One palette (:data:`PALETTE`) colours storages in every lesson:
same colour = same memory, as in the CSE599G1 figures.
"""
from .palette import PALETTE, color
from .render import to_svg, setup, show
from .graphs import draw_graph
from .plots import memory_plot, gantt
from .stepper import Frame, Stepper
from .explorer import Explorer, interact
from .claims import ClaimError, claim, claims

__all__ = ["PALETTE", "color", "to_svg", "setup", "show", "draw_graph", "memory_plot", "gantt",
           "Frame", "Stepper", "Explorer", "interact", "ClaimError", "claim", "claims"]
from .trees import (fronts_by_depth, draw_tree, draw_taskgraph, traversal_bars,  # noqa: E402
                    traversal_frames, side_by_side, tree_gantt)

__all__ += ["fronts_by_depth", "draw_tree", "draw_taskgraph", "traversal_bars", "traversal_frames",
            "side_by_side", "tree_gantt"]
from . import training  # noqa: E402,F401  (p.28 mirrored plans, p.35-36 tables)
from .scheduling import (taskgraph_stepper, tree_stepper, formula_frames,  # noqa: E402
                         counterexample_explorer, svg_gantt, mapping_frames, mapping_explorer,
                         subtree_colors, schedule_figure, mapping_figure, pareto_points,
                         tradeoff_plot)

__all__ += ["taskgraph_stepper", "tree_stepper", "formula_frames", "counterexample_explorer",
            "svg_gantt", "mapping_frames", "mapping_explorer", "subtree_colors", "schedule_figure",
            "mapping_figure", "pareto_points", "tradeoff_plot"]
from .taskgraphs import (schedules_figure, schedule_points, search_cost_figure,  # noqa: E402
                         io_curves)

__all__ += ["schedules_figure", "schedule_points", "search_cost_figure", "io_curves"]
from .snapshots import draw_snapshot, memory_over_time, allocator_frames  # noqa: E402
from . import snapshots  # noqa: E402,F401  (PyTorch-style memory snapshots)

__all__ += ["draw_snapshot", "memory_over_time", "allocator_frames", "snapshots"]

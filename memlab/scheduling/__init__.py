"""Memory-aware scheduling of task graphs and trees (seed 002, "Memory-aware scheduling").

Task graphs with durations and memory demands, the peak of an order and the exact minimum-peak
search (:mod:`.taskgraph`), list scheduling on P processors (:mod:`.listsched`); trees: the model,
peaks and the reversal theorem (:mod:`.treebase`), post-orders and Liu's best post-order
(:mod:`.postorder`), Liu's optimal traversal by hills and valleys (:mod:`.liu`), random and
counterexample trees (:mod:`.treegen`), assembly trees of sparse matrices (:mod:`.assembly`), the
seed's table (:mod:`.trees_table`); parallel traversals: the simulator (:mod:`.treesim`) and the
mappings (:mod:`.mapping`); the I/O volume of an order under memory shortage (:mod:`.iovolume`);
the same trees and graphs run on Dask (:mod:`.dask`, the extra ``memlab[dask]``, imported only when
called). :mod:`.trees` gathers the tree functions lessons call. This package stands apart from the
op graph: it imports only :mod:`memlab.errors`.
"""
from . import taskgraph, listsched, trees, mapping, iovolume, dask
from .taskgraph import TaskGraph
from .trees import Tree

__all__ = ["taskgraph", "listsched", "trees", "mapping", "iovolume", "dask", "TaskGraph", "Tree"]

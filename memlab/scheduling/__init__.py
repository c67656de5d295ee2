"""Memory-aware scheduling of task graphs and trees.

The source is the course's scheduling slides: J. Herrmann, "Memory-aware scheduling", ENSEEIHT
3SN-B (HPC algorithms), December 2023. The modules cite them as (scheduling slides, "title"), the
title of the slide; ``lessons/SLIDES.md`` lists every slide with the lesson that reproduces it. The
tree algorithms also cite their papers: J. W. H. Liu, "On the storage requirement in the out-of-core
multifrontal method for sparse factorization", ACM TOMS 12(3), 1986 (the best post-order), and
J. W. H. Liu, "An application of generalized tree pebbling to sparse matrix factorization", SIAM J.
Algebraic Discrete Methods 8(3), 1987 (the optimal traversal).

Task graphs with durations and memory demands, the peak of an order and the exact minimum-peak
search (:mod:`.taskgraph`), list scheduling on P processors (:mod:`.listsched`); trees: the model,
peaks and the reversal theorem (:mod:`.treebase`), post-orders and Liu's best post-order
(:mod:`.postorder`), Liu's optimal traversal by hills and valleys (:mod:`.liu`), random and
counterexample trees (:mod:`.treegen`), assembly trees of sparse matrices (:mod:`.assembly`), the
slides' table (:mod:`.trees_table`); parallel traversals: the simulator (:mod:`.treesim`) and the
mappings (:mod:`.mapping`); the I/O volume of an order under memory shortage (:mod:`.iovolume`);
the same trees and graphs run on Dask (:mod:`.dask`, the extra ``memlab[dask]``, imported only when
called). :mod:`.trees` gathers the tree functions lessons call. This package stands apart from the
op graph: it imports only :mod:`memlab.errors`.
"""
from . import taskgraph, listsched, trees, mapping, iovolume, dask
from .taskgraph import TaskGraph
from .trees import Tree

__all__ = ["taskgraph", "listsched", "trees", "mapping", "iovolume", "dask", "TaskGraph", "Tree"]

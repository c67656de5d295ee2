"""Trading computation for memory (CSE599G1 lecture 7, p.30-37; the scheduling slides, "Backpropagation graphs").

Chains: the slot model and the replay of a schedule (:mod:`.chain`), the binomial arithmetic of
optimal checkpointing (:mod:`.binomial`), and the strategies as explicit schedules
(:mod:`.chain_strategies`: store all, recompute all, store some, every k, sqrt(l), Chen et al.'s recursion,
the optimum, Revolve); chains with uneven costs and sizes (:mod:`.hetero`, rotor's dynamic
program) and several storage levels (:mod:`.levels`, disk and H-Revolve); any schedule run on real
gradients in its simulated slots (:mod:`.realchain`). Op graphs: the training graph rewritten to
recompute dropped values in the backward pass (:mod:`.rewrite`, p.31-32) and the choice of values to
keep (:mod:`.graph_strategies`: every k, sqrt(N), memonger; p.31-34), and the exact optimum on small graphs
(:mod:`.remat_milp`, Checkmate's integer program) and its relaxation rounded for large graphs
(:mod:`.remat_lp`); mixed-precision Adam and its ZeRO shards (:mod:`.zero`). Imports :mod:`memlab.errors`, and, to run
schedules on real gradients, the graph and execute layers.
"""
from .chain import Action, Forward, Backward, Free, Schedule, Simulation, simulate
from .binomial import revolve_advances, optimal_forwards, minimum_budget
from .chain_strategies import (store_all, recompute_all, store_some, periodic, sqrt_schedule, recursive,
                         optimal, revolve, RevolveSchedule)
from .hetero import HeteroChain, HeteroSchedule, hetero_chain, optimal_hetero
from .levels import LevelSchedule, multilevel_optimal, time_against_memory, disk_curves
from .realchain import ChainModel, mlp_chain, run_schedule
from .rewrite import recompute_graph, recomputed_nodes, forward_nodes as forward_nodes_of
from .graph_strategies import every_k, sqrt_checkpoints, memonger, recursive_checkpoints, drop_cheap
from .remat_milp import RematResult, optimal_rematerialization, optimum_curve
from . import parallel, zero
from .zero import MixedPrecisionAdam, ZeroAdam
from .remat_lp import rounded_rematerialization

__all__ = ["Action", "Forward", "Backward", "Free", "Schedule", "Simulation", "simulate",
           "revolve_advances", "optimal_forwards", "minimum_budget", "store_all", "recompute_all",
           "store_some", "periodic", "sqrt_schedule", "recursive", "optimal", "revolve",
           "RevolveSchedule", "HeteroChain", "HeteroSchedule", "hetero_chain", "optimal_hetero",
           "LevelSchedule", "multilevel_optimal", "time_against_memory", "disk_curves",
           "ChainModel", "mlp_chain",
           "run_schedule", "recompute_graph", "recomputed_nodes", "forward_nodes_of", "every_k", "sqrt_checkpoints",
           "memonger", "recursive_checkpoints", "drop_cheap", "RematResult", "optimal_rematerialization", "optimum_curve",
           "rounded_rematerialization", "parallel", "zero", "MixedPrecisionAdam", "ZeroAdam"]

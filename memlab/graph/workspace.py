"""Workspace: scratch memory an op holds while it runs, and only then.

A GPU library asks the caller for scratch memory per call. cuDNN's
``cudnnConvolutionForward`` (and its backward-data and backward-filter versions) takes a
``workSpace`` pointer and ``workSpaceSizeInBytes``; how many bytes the chosen algorithm needs is
returned by ``cudnnGetConvolutionForwardWorkspaceSize`` (``...BackwardDataWorkspaceSize``,
``...BackwardFilterWorkspaceSize``), and differs from algorithm to algorithm (the implicit-GEMM
algorithm needs none); the memory is used for that call only. cuBLAS's GEMMs likewise take a
workspace (``cublasSetWorkspace``). Lecture 7's p.35 panel (b), "runtime total memory", counts such
scratch; panel (a) does not.

memlab does not invent these sizes: an op's workspace is ``node.attrs["workspace"]`` (bytes,
default 0, :meth:`memlab.graph.Op.workspace`), set by the model or the lesson, usually through a
table by op name with :func:`set_workspace`. Every planner, the verifier, the lower bound, the
order's peak, the executors and the rematerialisation solvers count a workspace as alive during
its op's step alone: allocated with the output, released before the next op runs.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

from ..errors import GraphError
from .node import Node
from .traverse import as_list, topo_order

Size = int | Callable[[Node], int]


def set_workspace(outputs: Node | Iterable[Node], table: Mapping[str, Size]) -> int:
    """Give every op of the graph ``outputs`` need whose op name is in ``table`` a workspace:
    ``table[name]`` bytes, or ``table[name](node)`` for a size that depends on the node (its
    shapes). Names are ops' ``op.name`` (``"conv"``, ``"conv_wgrad"``, ``"matmul"``, and the
    shape-only ``"conv2d"``, ``"conv2d_grad"``, ``"fc"``...). A recomputed copy takes its original's
    workspace. A name no node of the graph has is refused (a misspelt op would set nothing), unless
    another name of the table matches and it names one of memlab's ops (a table written for
    several graphs). Returns how many ops got a workspace above 0. Sets ``node.attrs`` in place: the
    same graph planned again sees it."""
    if not isinstance(table, Mapping):
        raise GraphError(f"set_workspace: table must map op names to bytes (or to a function of a "
                         f"node), got {type(table).__name__}")
    for name, size in table.items():
        if not isinstance(name, str):
            raise GraphError(f"set_workspace: table keys must be op names (strings), got {name!r}")
        if not callable(size):
            check_bytes(size, f"set_workspace: table[{name!r}]")
    nodes = topo_order(as_list(outputs))
    has = {_op_name(n) for n in nodes if n.op.computes}
    known = known_op_names() | has | {name + "_grad" for name in has}
    unknown = [name for name in table if name not in known]
    if has and (unknown or table and not has & set(table)):   # (an empty graph: nothing to set)
        bad = unknown[0] if unknown else next(iter(table))
        raise GraphError(f"set_workspace: table key {bad!r} is the op name of no node of this "
                         f"graph; its ops are {', '.join(map(repr, sorted(has)))}")
    count = 0
    for n in nodes:
        name = _op_name(n)
        if not n.op.computes or name not in table:
            continue
        size = table[name]
        nbytes = check_bytes(size(n) if callable(size) else size,
                             f"set_workspace: table[{name!r}] for node {n.name!r}")
        n.attrs["workspace"] = nbytes
        count += nbytes > 0
    return count


def _op_name(n: Node) -> str:
    """The op name a table looks up: a recomputed copy goes by its original's."""
    return n.op.name if n.op.name != "recompute" else n.attrs["of"].op.name


def known_op_names() -> set[str]:
    """The names of memlab's ops and of the shape-only ops made so far: a table may name one that
    a given graph happens not to have, as :func:`memlab.models.conv_workspace.mxnet_gemm` names
    every convolution op, forward and backward."""
    import sys

    from .plain import _registry
    names = set(_registry())
    shape_only = sys.modules.get("memlab.models.shape_only")
    if shape_only is not None:
        names |= {key[0] for key in shape_only._OPS}
    return names


def check_bytes(value: object, what: str) -> int:
    """``value`` if it is an integer >= 0, else :class:`GraphError` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) and not (
            hasattr(value, "__index__") and type(value).__module__ == "numpy"):
        raise GraphError(f"{what} must be a number of bytes (an integer >= 0), got {value!r}")
    if int(value) < 0:
        raise GraphError(f"{what} must be a number of bytes (an integer >= 0), got {value!r}")
    return int(value)


def workspace_of(node: Node) -> int:
    """The bytes ``node``'s op holds while it runs (0 for given values)."""
    return node.op.workspace(node) if node.op.computes else 0

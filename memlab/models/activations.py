"""The activation memory of a transformer layer, from liveness, against Korthikanti et al. 2022.

"Reducing Activation Recomputation in Large Transformer Models" (section 4.1) counts the bytes a
layer stores for its backward pass at 16 bits with dropout and no parallelism: ``sbh(34 + 5as/h)``
(``s`` sequence, ``b`` batch, ``h`` hidden, ``a`` heads), term by term (:func:`formula_terms`).
:func:`saved_terms` reads the same terms off memlab's liveness: the values of a layer alive when
the forward pass ends and the backward pass begins, the values its gradient ops read. Then
:func:`recompute_policies` rewrites the training graph with :func:`~memlab.checkpoint.
recompute_graph` for **full** recomputation (keep each layer's input) and **selective**
recomputation (drop only the attention core, the ``5as/h`` term; section 5), and counts the bytes
kept and the FLOPs recomputed.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..checkpoint import recompute_graph, recomputed_nodes
from ..checkpoint.rewrite import forward_nodes
from ..errors import MemlabError, check_choice, check_int
from ..graph import Node, topo_order
from ..memory.order import order_peak, plan_liveness
from .gpt import Transformer

#: (role of the node in block ``l``: its name after ``l<l>.``, the paper's term)
ROLES = [("input", "layernorm 1 input"), ("ln1", "QKV input"), ("q", "QK^T: Q"),
         ("k", "QK^T: K"), ("softmax", "softmax output"), ("attn_drop.mask", "softmax dropout mask"),
         ("attn_drop", "attention over V: dropout output"), ("v", "attention over V: V"),
         ("proj_in", "projection input"), ("proj_drop.mask", "attention dropout mask"),
         ("res1", "layernorm 2 input"), ("ln2", "fc1 input"), ("fc1", "GELU input"),
         ("gelu", "fc2 input"), ("mlp_drop.mask", "MLP dropout mask")]
TERMS = [term for _, term in ROLES]
#: the attention core that selective recomputation drops (Korthikanti et al., section 5)
CORE = ("scores", "scaled", "masked", "softmax", "attn_drop.mask", "attn_drop")


def formula_terms(seq: int, batch: int, hidden: int, heads: int) -> dict[str, int]:
    """Bytes of each stored activation of one layer as the paper lists them (16-bit values, 1-byte
    dropout masks); they add up to ``s b h (34 + 5 a s / h)``."""
    s, b, h, a = (check_int(v, f"formula_terms: {n}", 1) for n, v in
                  (("seq", seq), ("batch", batch), ("hidden", hidden), ("heads", heads)))
    sbh, as2b = s * b * h, a * s * s * b
    paper = {"layernorm 1 input": 2 * sbh, "QKV input": 2 * sbh, "QK^T: Q": 2 * sbh,
             "QK^T: K": 2 * sbh, "softmax output": 2 * as2b, "softmax dropout mask": as2b,
             "attention over V: dropout output": 2 * as2b, "attention over V: V": 2 * sbh,
             "projection input": 2 * sbh, "attention dropout mask": sbh,
             "layernorm 2 input": 2 * sbh, "fc1 input": 2 * sbh, "GELU input": 8 * sbh,
             "fc2 input": 8 * sbh, "MLP dropout mask": sbh}
    return paper


def formula_total(seq: int, batch: int, hidden: int, heads: int) -> float:
    """``s b h (34 + 5 a s / h)``: the paper's bytes of activations per layer (equation 1)."""
    for name, v in (("seq", seq), ("batch", batch), ("hidden", hidden), ("heads", heads)):
        check_int(v, f"formula_total: {name}", 1)
    return seq * batch * hidden * (34 + 5 * heads * seq / hidden)


def _check(model: object, what: str) -> Transformer:
    if not isinstance(model, Transformer):
        raise MemlabError(f"{what}: model must be a Transformer (models.transformer or gpt2), "
                          f"got {type(model).__name__}")
    return model


def boundary_values(outputs: Sequence[Node]) -> tuple[set[Node], int]:
    """The forward values alive when the backward pass starts, and the peak of live bytes.

    The values: those alive after the last forward op in the order "every forward op, then the
    rest" (what a framework saves for the backward pass; the backward order does not change it).
    The peak: in the order the library runs and plans, :func:`~memlab.memory.memory_order`'s
    default (:func:`~memlab.memory.order_peak`), not "forward, then depth-first": a depth-first
    backward pass holds every input gradient of a chain before the weight gradients, and hides
    what recomputation saves."""
    forward = topo_order(outputs[0])
    seen = set(forward)
    live = plan_liveness(outputs, forward + [n for n in topo_order(outputs) if n not in seen])
    end = len(forward) - 1
    alive = {n for n, (first, last) in live.lifetimes().items() if first <= end < last}
    return alive, order_peak(outputs)


def saved_terms(model: Transformer, layer: int = 0, outputs: Sequence[Node] | None = None
                ) -> dict[str, int]:
    """Bytes of each term of :data:`TERMS` that block ``layer`` holds at the forward/backward
    boundary (its input, and its values the backward pass reads), from liveness; values of the
    layer under no term of the paper are summed under ``"other"``. ``outputs``: a rewritten
    training graph (default ``model.training_outputs()``)."""
    model = _check(model, "saved_terms")
    check_int(layer, "saved_terms: layer", 0)
    if layer >= model.layers:
        raise MemlabError(f"saved_terms: layer {layer} is out of range: the model has "
                          f"{model.layers} layers")
    alive, _ = boundary_values(outputs or model.training_outputs())
    return _layer_terms(model, layer, alive)


def _layer_terms(model: Transformer, layer: int, alive: set[Node]) -> dict[str, int]:
    roles = dict(ROLES)
    terms = dict.fromkeys(TERMS, 0) | {"other": 0}
    pre = f"l{layer}."
    x = model.layer_inputs[layer]
    for n in alive:
        if n is x:
            terms[roles["input"]] += n.nbytes
        elif n.scope is not None and n.scope.module == "layer" and n.scope.step == layer \
                and not n.scope.backward and n is not model.layer_outputs[layer]:
            role = n.name[len(pre):] if n.name.startswith(pre) else None
            terms[roles.get(role, "other")] += n.nbytes
    return terms


def policy_keep(model: Transformer, policy: str) -> set[Node] | None:
    """Forward values to keep: ``"none"`` (None: no rewrite), ``"full"`` (each layer's input and
    everything outside the layers) or ``"selective"`` (all but the attention core :data:`CORE`)."""
    model = _check(model, "policy_keep")
    check_choice(policy, "policy_keep: policy", ("none", "full", "selective"))
    if policy == "none":
        return None
    forward = forward_nodes(model.training_outputs())
    if policy == "full":
        in_layer = {n for n in forward if n.scope is not None and n.scope.module == "layer"}
        return (set(forward) - in_layer) | set(model.layer_inputs) | set(model.layer_outputs)
    core = {f"l{l}.{role}" for l in range(model.layers) for role in CORE}
    return {n for n in forward if n.name not in core}


def flops(node: Node) -> int:
    """Floating-point operations of one op: ``2 n k m`` per matrix product (batched too, as the
    paper counts), one per output element for anything else; a recomputed copy costs its original."""
    node = node.attrs.get("of", node) if node.op.name == "recompute" else node
    if node.op.name in ("matmul", "bmatmul"):
        a, b = node.inputs
        k = a.shape[-2] if node.attrs["trans_a"] else a.shape[-1]
        return 2 * node.size * k
    return node.size if node.op.computes else 0


def recompute_policies(model: Transformer, policies: Sequence[str] = ("none", "selective", "full"),
                       mask: str = "seed") -> dict[str, dict[str, float]]:
    """For each policy: ``bytes`` of activations held at the forward/backward boundary by all
    layers, ``per_layer`` (layer 0's), ``peak`` of live bytes in the order the library runs and
    plans (:func:`~memlab.memory.memory_order`'s default), ``recomputed_flops`` and ``overhead``
    (recomputed FLOPs over the training step's FLOPs). ``mask``: how dropped dropout masks are
    recomputed (:func:`~memlab.checkpoint.recompute_graph`): ``"seed"`` (Megatron's RNG tracker)
    or ``"replay"`` (a fused dropout rerun with its input, as ``torch.utils.checkpoint`` pays)."""
    model = _check(model, "recompute_policies")
    check_choice(mask, "recompute_policies: mask", ("seed", "replay"))
    base = model.training_outputs()
    step_flops = sum(flops(n) for n in topo_order(base))
    table = {}
    for policy in policies:
        keep = policy_keep(model, policy)
        outputs = base if keep is None else recompute_graph(base, keep, mask=mask)
        alive, peak = boundary_values(outputs)
        layers = [sum(_layer_terms(model, l, alive).values()) for l in range(model.layers)]
        extra = sum(flops(n) for n in recomputed_nodes(outputs))
        table[policy] = {"bytes": sum(layers), "per_layer": layers[0], "peak": peak,
                         "recomputed_flops": extra, "overhead": extra / step_flops}
    return table


def parallel_model(model: Transformer) -> Any:
    """The transformer as a :class:`~memlab.checkpoint.parallel.Model` for the pipeline and ZeRO
    estimates: per block its parameters (the embeddings and last layernorm added to block 0) and
    its activation bytes per sample at the forward/backward boundary, from liveness."""
    from ..checkpoint import parallel
    model = _check(model, "parallel_model")
    alive, _ = boundary_values(model.training_outputs())
    params = [sum(p.size for n, p in model.params.items() if n.startswith(f"l{l}."))
              for l in range(model.layers)]
    params[0] += model.param_count() - sum(params)
    acts = [sum(_layer_terms(model, l, alive).values()) / model.batch for l in range(model.layers)]
    out = parallel.from_sizes(params, acts)
    out.boundary = [x.nbytes / model.batch for x in model.layer_inputs]
    return out


def outside_layers(model: Transformer, alive: set[Node]) -> list[Node]:
    """The values of ``alive`` (:func:`boundary_values`) that belong to no block's terms: the
    embeddings' dropout mask, the last block's output, the last layernorm's output, the logits;
    largest first, ties in the order they were made. Blocks' inputs are counted by their block
    (``saved_terms``), the loss is not an activation."""
    model = _check(model, "outside_layers")
    inputs = set(model.layer_inputs)
    last = model.layer_outputs[-1]
    outside = (n for n in alive if n is not model.loss and n not in inputs and (
        n.scope is None or n.scope.module != "layer" or n is last))
    return sorted(outside, key=lambda n: (-n.nbytes, n.id))

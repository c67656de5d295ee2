"""A decoder-only transformer built from memlab ops (GPT-2: Radford et al. 2019), and its training.

:func:`transformer` builds one training step: token and position embeddings, ``layers`` pre-norm
blocks (layernorm, causal multi-head attention, residual; layernorm, MLP with GELU, residual), a
final layernorm and a projection tied to the token table, then the mean cross-entropy. Every node
of block ``l`` is built in ``scope("layer", l)`` and named ``l<l>.<role>`` (``l3.softmax``), so the
planners' liveness can be read term by term (:mod:`.activations`). Nothing is allocated until a
graph runs, so the same builder gives the shape-only GPT-2 and 7B-parameter models
(:func:`gpt2`, :func:`gpt_7b`; float16 as in Korthikanti et al. 2022) and a tiny float64 model
whose gradients can be checked by differences. :func:`train` learns a toy task (reverse a
sequence) with Adam (Kingma and Ba 2015).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import MemlabError, ShapeError, check_int, check_number
from ..graph import (Node, add, bmatmul, causal_mask, dropout, embedding, gelu, gradients,
                     layernorm, matmul, mul, placeholder, reshape, scope, slice_axis, softmax,
                     softmax_cross_entropy, transpose)

#: published configurations: (layers, hidden, heads, vocab, positions). GPT-2 (Radford et al. 2019);
#: "7b": a 7B-parameter model of LLaMA's shape (Touvron et al. 2023) with GPT-2's blocks
CONFIGS = {"small": (12, 768, 12, 50257, 1024), "medium": (24, 1024, 16, 50257, 1024),
           "large": (36, 1280, 20, 50257, 1024), "xl": (48, 1600, 25, 50257, 1024),
           "7b": (32, 4096, 32, 32000, 4096)}


@dataclass
class Transformer:
    """One training step of :func:`transformer`: ``loss`` (scalar), ``logits`` (b*s, vocab),
    ``params`` (name -> placeholder), the int placeholders ``tokens``, ``targets``, ``positions``
    (b*s,) and ``seed`` (the dropout seed, a scalar), and each block's ``layer_inputs`` and
    ``layer_outputs``."""

    layers: int
    seq: int
    hidden: int
    heads: int
    batch: int
    vocab: int
    dropout: float
    dtype: np.dtype
    loss: Node
    logits: Node
    params: dict[str, Node]
    tokens: Node
    targets: Node
    positions: Node
    seed: Node
    layer_inputs: list[Node]
    layer_outputs: list[Node]
    _grads: list[Node] = field(default_factory=list, repr=False)

    def grads(self) -> list[Node]:
        """The gradient of the loss for every parameter, in ``params`` order (built once)."""
        if not self._grads:
            self._grads = gradients(self.loss, list(self.params.values()))
        return self._grads

    def training_outputs(self) -> list[Node]:
        """``[loss, *grads()]``: the training graph planners and ``recompute_graph`` take."""
        return [self.loss, *self.grads()]

    def param_count(self) -> int:
        """Number of parameters (a tied output projection counted once)."""
        return sum(p.size for p in self.params.values())

    def init_params(self, seed: int = 0, std: float = 0.02) -> dict[Node, np.ndarray]:
        """GPT-2's initialisation: weights normal with deviation ``std`` (the residual
        projections ``std / sqrt(2 layers)``), biases 0, layernorm scales 1."""
        rng = np.random.default_rng(seed)
        feed = {}
        for name, p in self.params.items():
            if name.endswith((".b", "_b")) or name.endswith(".beta"):
                value = np.zeros(p.shape)
            elif name.endswith(".gamma"):
                value = np.ones(p.shape)
            else:
                scale = std / math.sqrt(2 * self.layers) if name.endswith(("proj.w", "fc2.w")) \
                    else std
                value = rng.normal(0.0, scale, p.shape)
            feed[p] = value.astype(self.dtype)
        return feed

    def data(self, seed: int = 0) -> dict[Node, np.ndarray]:
        """A batch of the toy task: each row holds ``m`` random words then the words reversed;
        the target of a position is the next token once the words are all read (0 before, which
        the model learns from the position alone). Dropout's seed is drawn too."""
        rng = np.random.default_rng(seed)
        b, s = self.batch, self.seq
        m = (s + 1) // 2
        words = rng.integers(1, self.vocab, (b, m))
        tokens = np.zeros((b, s), np.int64)
        targets = np.zeros((b, s), np.int64)
        tokens[:, :m] = words
        tokens[:, m:2 * m - 1] = words[:, ::-1][:, :-1]
        targets[:, m - 1:2 * m - 1] = words[:, ::-1]
        return {self.tokens: tokens.reshape(-1).astype(np.int32),
                self.targets: targets.reshape(-1).astype(np.int32),
                self.positions: np.tile(np.arange(s, dtype=np.int32), b),
                self.seed: np.int64(rng.integers(2**62))}


def _linear(x: Node, params: dict[str, Node], name: str, width: int) -> Node:
    w = params.setdefault(f"{name}.w", placeholder(f"{name}.w", (x.shape[1], width), x.dtype))
    b = params.setdefault(f"{name}.b", placeholder(f"{name}.b", (width,), x.dtype))
    return add(matmul(x, w, name=f"{name}.mm"), b, name=name)


def _norm(x: Node, params: dict[str, Node], name: str) -> Node:
    h = x.shape[-1]
    g = params.setdefault(f"{name}.gamma", placeholder(f"{name}.gamma", (h,), x.dtype))
    b = params.setdefault(f"{name}.beta", placeholder(f"{name}.beta", (h,), x.dtype))
    return layernorm(x, g, b, name=name)


def _block(x: Node, l: int, m: dict[str, Any], params: dict[str, Node],
           seed: Node) -> Node:
    """One pre-norm block on ``x`` (b*s, h): attention and MLP, each with its residual."""
    b, s, h, a, p = m["batch"], m["seq"], m["hidden"], m["heads"], m["dropout"]
    d, pre = h // a, f"l{l}."
    ln1 = _norm(x, params, pre + "ln1")
    qkv = _linear(ln1, params, pre + "qkv", 3 * h)
    heads = []
    for i, role in enumerate("qkv"):
        flat = slice_axis(qkv, 1, i * h, (i + 1) * h, name=pre + role + "_flat")
        heads.append(transpose(reshape(flat, (b, s, a, d)), (0, 2, 1, 3), name=pre + role))
    q, k, v = heads
    scores = bmatmul(q, k, trans_b=True, name=pre + "scores")
    scaled = mul(scores, 1.0 / math.sqrt(d), name=pre + "scaled")
    probs = softmax(causal_mask(scaled, name=pre + "masked"), name=pre + "softmax")
    probs = dropout(probs, p, seed, key=4 * l + 1, name=pre + "attn_drop")
    ctx = transpose(bmatmul(probs, v, name=pre + "ctx"), (0, 2, 1, 3), name=pre + "ctx_t")
    proj = _linear(reshape(ctx, (b * s, h), name=pre + "proj_in"), params, pre + "proj", h)
    x = add(x, dropout(proj, p, seed, key=4 * l + 2, name=pre + "proj_drop"), name=pre + "res1")
    fc1 = _linear(_norm(x, params, pre + "ln2"), params, pre + "fc1", 4 * h)
    fc2 = _linear(gelu(fc1, name=pre + "gelu"), params, pre + "fc2", h)
    return add(x, dropout(fc2, p, seed, key=4 * l + 3, name=pre + "mlp_drop"), name=pre + "out")


def transformer(layers: int, seq: int, hidden: int, heads: int, batch: int, vocab: int,
                dropout: float = 0.0, dtype: Any = np.float32, positions: int | None = None
                ) -> Transformer:
    """A decoder-only transformer's training step (loss of next-token prediction), from memlab ops.

    ``hidden`` must be a multiple of ``heads``; ``positions`` (default ``seq``) is the size of the
    learned position table (1024 for GPT-2). The output projection reuses the token table (tied,
    as GPT-2's). With ``dtype=float16`` the graph is the one Korthikanti et al. count.
    """
    for name, value in (("layers", layers), ("seq", seq), ("hidden", hidden), ("heads", heads),
                        ("batch", batch), ("vocab", vocab)):
        check_int(value, f"transformer: {name}", 1, ShapeError)
    if hidden % heads:
        raise ShapeError(f"transformer: heads={heads} does not divide hidden={hidden}")
    positions = seq if positions is None else check_int(positions, "transformer: positions", 1,
                                                        ShapeError)
    if positions < seq:
        raise ShapeError(f"transformer: positions={positions} is less than seq={seq}")
    p = check_number(dropout, "transformer: dropout", low=0, error=ShapeError)
    if p >= 1:
        raise ShapeError(f"transformer: dropout must be in [0, 1), got {dropout!r}")
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ShapeError(f"transformer: dtype must be a float dtype, got {dtype}")
    config = {"batch": batch, "seq": seq, "hidden": hidden, "heads": heads, "dropout": p}
    n = batch * seq
    tokens = placeholder("tokens", (n,), np.int32)
    targets = placeholder("targets", (n,), np.int32)
    pos = placeholder("positions", (n,), np.int32)
    seed = placeholder("dropout_seed", (), np.int64)
    params = {"wte": placeholder("wte", (vocab, hidden), dtype),
              "wpe": placeholder("wpe", (positions, hidden), dtype)}
    with scope("embedding"):
        x = add(embedding(params["wte"], tokens), embedding(params["wpe"], pos), name="embed")
        x = _drop(x, p, seed, 0, "embed_drop")
    ins, outs = [], []
    for l in range(layers):
        with scope("layer", l):
            ins.append(x)
            x = _block(x, l, config, params, seed)
            outs.append(x)
    with scope("head"):
        final = _norm(x, params, "lnf")
        logits = matmul(final, params["wte"], trans_b=True, name="logits")
        loss = softmax_cross_entropy(logits, targets, name="loss")
    return Transformer(layers, seq, hidden, heads, batch, vocab, p, dtype, loss, logits, params,
                       tokens, targets, pos, seed, ins, outs)


def _drop(x: Node, p: float, seed: Node, key: int, name: str) -> Node:
    return dropout(x, p, seed, key=key, name=name)


def gpt2(size: str = "small", seq: int = 1024, batch: int = 1, dropout: float = 0.1,
         dtype: Any = np.float16) -> Transformer:
    """GPT-2 ``"small"``, ``"medium"``, ``"large"`` or ``"xl"`` (or ``"7b"``) as a graph only:
    float16, dropout 0.1, nothing allocated (Radford et al. 2019, table 2)."""
    if not isinstance(size, str) or size not in CONFIGS:
        raise MemlabError(f"gpt2: size must be one of {', '.join(map(repr, CONFIGS))}, "
                          f"got {size!r}")
    layers, hidden, heads, vocab, positions = CONFIGS[size]
    return transformer(layers, seq, hidden, heads, batch, vocab, dropout, dtype,
                       max(positions, check_int(seq, "gpt2: seq", 1, ShapeError)))


def gpt_7b(seq: int = 2048, batch: int = 1, dropout: float = 0.1) -> Transformer:
    """The 7B-parameter model (32 layers, hidden 4096, 32 heads) as a float16 graph only."""
    check_int(seq, "gpt_7b: seq", 1, MemlabError)
    check_int(batch, "gpt_7b: batch", 1, MemlabError)
    check_number(dropout, "gpt_7b: dropout", low=0, error=MemlabError)
    return gpt2("7b", seq, batch, dropout)


def train(model: Transformer, steps: int = 100, lr: float = 3e-3, seed: int = 0,
          betas: tuple[float, float] = (0.9, 0.98), eps: float = 1e-8, std: float = 0.1
          ) -> list[float]:
    """Train ``model`` on its toy task with Adam for ``steps`` batches, from weights drawn with
    deviation ``std`` (:meth:`Transformer.init_params`); the loss of each step."""
    from ..execute import Executor
    if not isinstance(model, Transformer):
        raise MemlabError(f"train: model must be a Transformer (models.transformer), got "
                          f"{type(model).__name__}")
    check_int(steps, "train: steps", 1)
    check_number(lr, "train: lr", above=0)
    run = Executor(model.training_outputs())
    params = model.init_params(seed, check_number(std, "train: std", above=0))
    moments = {p: (np.zeros(p.shape), np.zeros(p.shape)) for p in model.params.values()}
    losses = []
    for t in range(1, steps + 1):
        loss, *grads = run.run({**params, **model.data(seed + t)})
        for p, g in zip(model.params.values(), grads):
            m1, m2 = moments[p]
            m1 = betas[0] * m1 + (1 - betas[0]) * g
            m2 = betas[1] * m2 + (1 - betas[1]) * g * g
            moments[p] = (m1, m2)
            step = lr * (m1 / (1 - betas[0] ** t)) / (np.sqrt(m2 / (1 - betas[1] ** t)) + eps)
            params[p] = (params[p] - step).astype(model.dtype)
        losses.append(float(loss))
    return losses

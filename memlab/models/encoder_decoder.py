"""A sequence-to-sequence model that trains: LSTM encoder, bridge, LSTM decoder and generator.

The model of OpenNMT's "Further Memory Optimization" (OpenNMT's notes, "Memory Usage"): four networks,
the two recurrent ones replicated once per timestep. Every node is built in a
:func:`~memlab.graph.scope` (module and timestep), so plans, drawings and tables can group by
them, and :mod:`memlab.memory.sharing` can apply the seed's techniques. Two of the techniques
change the graph itself and are switches here:

* ``share_params=False`` gives every replica its own copy of the parameters (and so its own
  parameter gradients, summed only at the end), as unshared clones would;
* ``connect=False`` makes every module keep its own copy of each input it receives from another
  module, instead of reading the producer's output storage.

The task is to reverse (or copy) a sequence of tokens with teacher forcing; OpenNMT's defaults
are used where they fit: uniform initialisation in [-0.1, 0.1], SGD with learning rate 1 and
gradients clipped to norm 5, a forget-gate bias of 1 (added as a constant: the local trick).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..errors import MemlabError
from ..memory.plan import Plan
from ..graph import (Node, add, copy, embedding, full, gradients, matmul, mul, placeholder,
                     priority_order, scope, sigmoid, slice_axis, softmax_cross_entropy,
                     tanh)
from ..graph import sum as reduce_sum

MODULES = ("encoder", "bridge", "decoder", "generator")  #: the seed's four networks, in run order
BOS = 1            #: the begin-of-sentence token that starts the decoder's input
FIRST_WORD = 2     #: tokens 0 (padding) and 1 (BOS) are never words


@dataclass
class Seq2Seq:
    """One training step of :func:`seq2seq`: ``loss`` (a scalar node), ``params`` (every
    parameter node; with unshared parameters, one per replica), ``groups`` (parameter name ->
    its replicas' nodes), the id placeholders ``src``, ``tgt_in``, ``tgt_out`` (one per step)."""

    src_len: int
    tgt_len: int
    hidden: int
    batch: int
    vocab: int
    share_params: bool
    connect: bool
    loss: Node
    params: list[Node]
    groups: dict[str, list[Node]]
    src: list[Node]
    tgt_in: list[Node]
    tgt_out: list[Node]
    task: str = "reverse"

    def data(self, seed: int = 0) -> dict[Node, np.ndarray]:
        """A batch of the task: random words, the target the reversed (or copied) source,
        repeated to the target length; the decoder reads BOS then the target shifted by one."""
        rng = np.random.default_rng(seed)
        words = rng.integers(FIRST_WORD, self.vocab, (self.src_len, self.batch)).astype(np.int32)
        seq = words[::-1] if self.task == "reverse" else words
        target = seq[np.arange(self.tgt_len) % self.src_len]
        dec_in = np.concatenate([np.full((1, self.batch), BOS, np.int32), target[:-1]])
        feed = {n: words[t] for t, n in enumerate(self.src)}
        feed.update({n: dec_in[t] for t, n in enumerate(self.tgt_in)})
        feed.update({n: target[t] for t, n in enumerate(self.tgt_out)})
        return feed

    def init_params(self, seed: int = 0) -> dict[Node, np.ndarray]:
        """Parameters uniform in [-0.1, 0.1] (OpenNMT's ``param_init``); replicas get equal
        values, so shared and unshared models compute the same function."""
        rng = np.random.default_rng(seed)
        feed = {}
        for name, nodes in self.groups.items():
            value = rng.uniform(-0.1, 0.1, nodes[0].shape).astype(np.float32)
            feed.update({n: value for n in nodes})
        return feed

    def feed(self, seed: int = 0) -> dict[Node, np.ndarray]:
        """Parameters and a batch of data, all drawn from ``seed``."""
        return {**self.init_params(seed), **self.data(seed)}

    def order(self, outputs: Node | list[Node]) -> list[Node]:
        """The order a module framework runs the step in: each module's forward replicas in
        time order (encoder, bridge, decoder and generator interleaved by step), then the
        backward from the last step to the first, each replica's work kept together."""
        return priority_order(outputs, run_key)

    def grads(self) -> list[Node]:
        """The loss's gradient for every parameter node. Shared parameters accumulate their
        replicas' contributions in place (``ml.gradients(loss, params, addto=True)``)."""
        return gradients(self.loss, self.params, addto=self.share_params)


def run_key(node: Node) -> tuple:
    """Sort key of :meth:`Seq2Seq.order`: the forward pass by module and timestep, then the
    backward pass in reverse; a parameter's gradient contributions are summed as soon as they
    are ready, so each replica's contribution dies at once (gradients accumulated)."""
    s = node.scope
    if s is None:
        return (1, 0, 0, 0)
    phase = {"encoder": 0, "bridge": 1, "decoder": 2, "generator": 2}.get(s.module, 3)
    rank = int(s.module == "generator")
    step = -1 if s.step is None else s.step
    if not s.backward:
        return (0, phase, step, rank)
    if s.step is None and s.module != "bridge":
        return (2, -10 ** 9, 0, 0)
    return (2, -phase, -step, -rank)


def _lstm_step(x: Node, h: Node, c: Node, p: dict[str, Node], hidden: int) -> tuple[Node, Node]:
    """One LSTM cell (Hochreiter and Schmidhuber): gates from ``x @ Wx + h @ Wh + b``."""
    a = add(add(matmul(x, p["Wx"]), matmul(h, p["Wh"])), p["b"])
    gate = [slice_axis(a, 1, k * hidden, (k + 1) * hidden) for k in range(4)]
    i, f = sigmoid(gate[0]), sigmoid(add(gate[1], 1.0))    # forget bias 1: adds a constant
    g, o = tanh(gate[2]), sigmoid(gate[3])
    c2 = add(mul(f, c), mul(i, g))
    return mul(o, tanh(c2)), c2


def _rnn_step(x: Node, h: Node, c: None, p: dict[str, Node], hidden: int) -> tuple[Node, None]:
    """One vanilla RNN cell (Elman): ``tanh(x @ Wx + h @ Wh + b)``; no cell state."""
    return tanh(add(add(matmul(x, p["Wx"]), matmul(h, p["Wh"])), p["b"])), c


CELLS = {"lstm": (_lstm_step, 4), "rnn": (_rnn_step, 1)}  #: cell -> (step, gates per unit)


def _check(src_len: int, tgt_len: int, hidden: int, batch: int, vocab: int, task: str) -> None:
    for name, value, least in [("src_len", src_len, 1), ("tgt_len", tgt_len, 1),
                               ("hidden", hidden, 1), ("batch", batch, 1),
                               ("vocab", vocab, FIRST_WORD + 1)]:
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < least:
            raise MemlabError(f"seq2seq: {name} must be an int >= {least}, got {value!r}"
                              + (" (tokens 0 and 1 are padding and BOS, so at least one word "
                                 "needs vocab >= 3)" if name == "vocab" else ""))
    if task not in ("reverse", "copy"):
        raise MemlabError(f"seq2seq: task must be 'reverse' or 'copy', got {task!r}")


def _check_cell(cell: str) -> None:
    if cell not in CELLS:
        raise MemlabError(f"seq2seq: cell must be one of {', '.join(map(repr, CELLS))}, "
                          f"got {cell!r}")


def seq2seq(src_len: int, tgt_len: int, hidden: int = 32, batch: int = 16, vocab: int = 8, *,
            embed: int | None = None, share_params: bool = True, connect: bool = True,
            task: str = "reverse", cell: str = "lstm") -> Seq2Seq:
    """Build one training step of an LSTM encoder-decoder (OpenNMT's notes' model) with memlab ops.

    ``src_len`` and ``tgt_len`` unroll the encoder and the decoder; ``hidden`` is the LSTM size
    (``embed`` the word vectors', default ``hidden``), ``batch`` the sentences per step, and
    ``vocab`` the words (ids 0 and 1 are padding and BOS). The loss is the mean over target
    steps of the generator's softmax cross-entropy. ``cell="rnn"`` uses vanilla RNN cells
    instead (fewer values for the backward pass to keep). See the module docstring for the
    switches.
    """
    _check(src_len, tgt_len, hidden, batch, vocab, task)
    _check_cell(cell)
    step, gates = CELLS[cell]
    embed = hidden if embed is None else embed
    _check(1, 1, embed, 1, vocab, task)
    recurrent = {"emb": (vocab, embed), "Wx": (embed, gates * hidden),
                 "Wh": (hidden, gates * hidden), "b": (gates * hidden,)}
    bridge = {"Wh": (hidden, hidden), "bh": (hidden,)}
    if cell == "lstm":
        bridge.update(Wc=(hidden, hidden), bc=(hidden,))
    shapes = {"encoder": recurrent, "bridge": bridge, "decoder": recurrent,
              "generator": {"W": (hidden, vocab), "b": (vocab,)}}
    groups: dict[str, list[Node]] = {}

    def params(module: str, step: int | None) -> dict[str, Node]:
        """The module's parameters: one shared set, or (unshared) a set per replica."""
        if share_params and f"{module}.{next(iter(shapes[module]))}" in groups:
            return {k: groups[f"{module}.{k}"][0] for k in shapes[module]}
        with scope(module, None if share_params else step):
            tag = "" if share_params or step is None else f"@{step}"
            made = {k: placeholder(f"{module}.{k}{tag}", s) for k, s in shapes[module].items()}
        for k, n in made.items():
            groups.setdefault(f"{module}.{k}", []).append(n)
        return made

    def keep(x: Node | None) -> Node | None:
        """A module's own copy of an input from another module (unless connected)."""
        return x if connect or x is None else copy(x)

    with scope("encoder"):
        h = full((batch, hidden), 0.0, name="enc.h0")
        c = h if cell == "lstm" else None
    src = []
    for t in range(src_len):
        p = params("encoder", t)
        with scope("encoder", t):
            src.append(placeholder(f"src[{t}]", (batch,), np.int32))
            x = embedding(p["emb"], src[-1])
            h, c = step(x, keep(h), keep(c), p, hidden)
    p = params("bridge", None)
    with scope("bridge"):
        h = tanh(add(matmul(keep(h), p["Wh"]), p["bh"]), name="bridge.h")
        if c is not None:
            c = tanh(add(matmul(keep(c), p["Wc"]), p["bc"]), name="bridge.c")
    tgt_in, tgt_out, total = [], [], None
    for t in range(tgt_len):
        p = params("decoder", t)
        with scope("decoder", t):
            tgt_in.append(placeholder(f"tgt_in[{t}]", (batch,), np.int32))
            h, c = step(embedding(p["emb"], tgt_in[-1]), keep(h), keep(c), p, hidden)
        g = params("generator", t)
        with scope("generator", t):
            tgt_out.append(placeholder(f"tgt_out[{t}]", (batch,), np.int32))
            logits = add(matmul(keep(h), g["W"]), g["b"], name=f"logits[{t}]")
            xent = softmax_cross_entropy(logits, tgt_out[-1], name=f"xent[{t}]")
            total = xent if total is None else add(total, xent)
    with scope("generator"):
        loss = mul(total, 1.0 / tgt_len, name="loss")
    every = [n for nodes in groups.values() for n in nodes]
    return Seq2Seq(src_len, tgt_len, hidden, batch, vocab, share_params, connect, loss, every,
                   groups, src, tgt_in, tgt_out, task)


def train(model: Seq2Seq, steps: int = 300, lr: float = 2.0, clip: float = 5.0, seed: int = 0,
          plan: Plan | None = None, progress: bool = False) -> list[float]:
    """Train ``model`` with plain SGD for ``steps`` batches; returns the loss of each step.

    Gradients are clipped to global norm ``clip`` (OpenNMT's ``max_grad_norm``); unshared
    replicas are updated with their summed gradient, so they stay equal. With ``plan``, every
    step runs in that memory plan's arena (it must plan ``[loss, *grads()]``). ``progress=True``
    shows a progress bar (tqdm: a widget in JupyterLab, text in a terminal).
    """
    from ..execute import Executor
    if not isinstance(steps, int) or steps < 1:
        raise MemlabError(f"train: steps must be an int >= 1, got {steps!r}")
    if not lr > 0:
        raise MemlabError(f"train: lr must be positive, got {lr!r}")
    outputs = [model.loss, *model.grads()] if plan is None else list(plan.outputs)
    if plan is not None and (len(outputs) != len(model.params) + 1 or outputs[0] is not model.loss):
        raise MemlabError("train: plan must plan [model.loss, *gradients for model.params]")
    run = Executor(outputs, plan=plan)
    params = model.init_params(seed)
    if not isinstance(progress, bool):
        raise MemlabError(f"train: progress must be True or False, got {progress!r}")
    losses: list[float] = []
    steps_done: Iterable[int] = range(steps)
    if progress:
        from tqdm.auto import tqdm  # only here: the library itself stays free of widgets
        steps_done = tqdm(steps_done, desc="training", unit="step")
    for step in steps_done:
        loss, *grads = run.run({**params, **model.data(seed + 1 + step)})
        by_node = dict(zip(model.params, grads))
        summed = {name: sum(by_node[n] for n in nodes) for name, nodes in model.groups.items()}
        norm = float(np.sqrt(sum(float(np.sum(g * g)) for g in summed.values())))
        scale = lr * min(1.0, clip / norm) if norm > 0 else 0.0
        for name, nodes in model.groups.items():
            value = params[nodes[0]] - scale * summed[name]
            params.update({n: value for n in nodes})
        losses.append(float(loss))
    return losses


def vertical_sharing_cases() -> dict[str, dict]:
    """The seed's vertical-sharing diagram as four small training graphs, one per outcome.

    In each, ``first`` is a linear layer's output and ``later`` the next node's output; with all
    three conditions met ``later`` can take ``first``'s storage, and each other case breaks one:
    ``"read later"`` reads ``first`` again downstream (condition 1), ``"backward needs it"`` feeds
    ``first`` to a second linear layer, whose weight gradient reads its input (the seed's Linear,
    condition 2), ``"sizes differ"`` sums a row (3). Each case holds ``loss``, ``params``,
    ``first`` and ``later``.
    """
    cases = {}
    for case in ("all hold", "read later", "backward needs it", "sizes differ"):
        x, w = placeholder("input_1", (8, 16)), placeholder("W", (16, 16))
        params = [w]
        with scope("net", 0):
            first = matmul(x, w, name="output_1")
            if case == "backward needs it":
                params.append(placeholder("W2", (16, 16)))
                later = matmul(first, params[1], name="output_2")
            elif case == "sizes differ":
                later = reduce_sum(first, axis=1, keepdims=True, name="output_2")
            else:
                later = sigmoid(first, name="output_2")
            loss = reduce_sum(mul(later, later))
            if case == "read later":
                loss = add(loss, reduce_sum(first))
        cases[case] = {"loss": loss, "params": params, "first": first, "later": later}
    return cases

"""memlab's memory model against a real framework: what each op keeps for the backward pass
beside PyTorch's documented choice; the peaks of none / selective / full recomputation on a small
GPT in the order the library runs (memory_order's default) and in the forward-then-depth-first
order that hid them; full recomputation's FLOPs when a dropped dropout mask is drawn from its seed
or replayed with its input; and, where a Python with torch is named by MEMLAB_TORCH_PYTHON, the
bytes PyTorch saves (bench/torch_saved.py) beside memlab's. Prints tables; run with `make bench`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from _progress import row, sweep

import memlab as ml
from memlab.graph import saved_for_backward, topo_order
from memlab.memory.order import order_peak, plan_liveness
from memlab.models import activations as act

#: the small GPT of the tests (tests/models/test_activations.py) and of bench/torch_saved.py
SMALL_GPT = dict(layers=2, seq=128, hidden=256, heads=8, batch=2, vocab=1000, dropout=0.1)
MB = 1e6

#: op -> (how to build it on placeholders, PyTorch's derivatives.yaml entry: what it saves)
OPS = {
    "relu": (lambda x, y: ml.relu(x), "result (threshold_backward(grad, result, 0))"),
    "sigmoid": (lambda x, y: ml.sigmoid(x), "result (sigmoid_backward(grad, result))"),
    "tanh": (lambda x, y: ml.tanh(x), "result (tanh_backward(grad, result))"),
    "exp": (lambda x, y: ml.exp(x), "result (grad * result)"),
    "softmax": (lambda x, y: ml.softmax(x), "result (_softmax_backward_data(grad, result))"),
    "log": (lambda x, y: ml.log(x), "self (grad / self)"),
    "gelu": (lambda x, y: ml.gelu(x), "self (gelu_backward(grad, self))"),
    "matmul": (lambda x, y: ml.matmul(x, y), "self, mat2 (mm)"),
    "mul": (lambda x, y: x * y, "self, other"),
    "div": (lambda x, y: x / y, "self, other (-grad * self / other^2)"),
    "add": (lambda x, y: x + y, "nothing"),
    "dropout": (lambda x, y: ml.dropout(x, 0.5), "mask (native_dropout_backward)"),
    "layernorm": (lambda x, y: ml.layernorm(x, ml.placeholder("g", (4,)), ml.placeholder("b", (4,))),
                  "input, weight, bias, mean, rstd"),
    "conv": (lambda x, y: ml.conv(x, ml.placeholder("k", (3,))),
             "input, weight (convolution_backward)"),
    "pool (average)": (lambda x, y: ml.pool(x), "self (for its shape only)"),
    "causal_mask": (lambda x, y: ml.causal_mask(x), "mask (masked_fill)"),
    "softmax_cross_entropy": (lambda x, y: ml.softmax_cross_entropy(
        x, ml.placeholder("labels", (x.shape[0],), np.int32)),
        "log_softmax's result, target (nll_loss)"),
}


def _kind(node: ml.Node) -> str:
    saved = saved_for_backward(node)
    names = []
    for n in saved:
        if n is node:
            names.append("output")
        elif n.dtype.kind != "f":
            names.append("mask")
        else:
            names.append(f"input {node.inputs.index(n)}")
    return ", ".join(names) or "nothing"


def saved_table() -> None:
    row("1. What each op's gradient reads (memlab.graph.saved_for_backward) beside what PyTorch "
        "saves (tools/autograd/derivatives.yaml)")
    row(f"{'op':<22}{'memlab keeps':<22}{'PyTorch saves'}")
    for name, (build, torch_saves) in OPS.items():
        x = ml.placeholder("x", (4, 4))
        y = ml.placeholder("y", (4, 4))
        row(f"{name:<22}{_kind(build(x, y)):<22}{torch_saves}")
    row("   differences: layernorm recomputes mean and rstd (PyTorch keeps 8 bytes a row more); "
        "average pooling and the causal mask keep nothing (PyTorch keeps the input for its shape, "
        "the boolean mask); the fused loss keeps the logits, PyTorch log_softmax's output (same "
        "bytes)")


def _forward_then_dfs_peak(outputs) -> int:
    forward = topo_order(outputs[0])
    seen = set(forward)
    return plan_liveness(outputs, forward + [n for n in topo_order(outputs)
                                             if n not in seen]).peak()


def peaks_and_flops() -> None:
    row()
    row(f"2. Small GPT ({', '.join(f'{k}={v}' for k, v in SMALL_GPT.items())}, float32): peak "
        f"of live bytes (MB) by order, and recomputed FLOPs (millions)")
    row(f"{'policy':<11}{'mask':<8}{'default':>9}{'autograd':>10}{'fwd+dfs':>9}{'held MB':>9}"
        f"{'recomp MFLOP':>14}{'overhead':>10}")
    m = ml.models.transformer(**SMALL_GPT)
    base = m.training_outputs()
    for policy, mask in sweep([("none", "seed"), ("selective", "seed"), ("selective", "replay"),
                               ("full", "seed"), ("full", "replay")], "policies"):
        keep = act.policy_keep(m, policy)
        outs = base if keep is None else ml.checkpoint.recompute_graph(base, keep, mask=mask)
        t = act.recompute_policies(m, (policy,), mask=mask)[policy]
        assert t["peak"] == order_peak(outs)
        row(f"{policy:<11}{mask if keep is not None else '-':<8}{t['peak'] / MB:>9.2f}"
            f"{order_peak(outs, 'autograd') / MB:>10.2f}{_forward_then_dfs_peak(outs) / MB:>9.2f}"
            f"{t['bytes'] / MB:>9.2f}{t['recomputed_flops'] / 1e6:>14.1f}{t['overhead']:>10.1%}")
    row("   default: memory_order's default (what every planner and executor runs); fwd+dfs: the "
        "order recompute_policies reported before (every forward op, then depth-first)")


def _boundary(outputs) -> int:
    alive, _ = act.boundary_values(outputs)
    return sum(n.nbytes for n in alive if n is not outputs[0])


def relu_mlp(layers: int = 8, width: int = 256, batch: int = 64, classes: int = 10) -> list:
    x = ml.placeholder("x", (batch, width))
    y = ml.placeholder("y", (batch,), np.int32)
    ws = [ml.placeholder(f"w{i}", (width, width)) for i in range(layers - 1)]
    ws.append(ml.placeholder("w_out", (width, classes)))
    h = x
    for w in ws[:-1]:
        h = ml.relu(ml.matmul(h, w))
    loss = ml.softmax_cross_entropy(ml.matmul(h, ws[-1]), y)
    return [loss, *ml.gradients(loss, ws)]


def against_pytorch() -> None:
    row()
    row("3. Bytes saved at the forward/backward boundary: memlab's liveness against PyTorch's "
        "saved tensors (saved_tensors_hooks, distinct storages, parameters and inputs left out)")
    torch_py = os.environ.get("MEMLAB_TORCH_PYTHON")
    measured: dict = {}
    if torch_py:
        script = Path(__file__).with_name("torch_saved.py")
        out = subprocess.run([torch_py, str(script)], capture_output=True, text=True, timeout=600)
        if out.returncode == 0:
            measured = json.loads(out.stdout.strip().splitlines()[-1])
        else:
            row(f"   bench/torch_saved.py failed: {out.stderr.strip()[-300:]}")
    row(f"{'model':<34}{'memlab bytes':>14}{'PyTorch bytes':>15}{'ratio':>8}")
    models = {"relu_mlp": ("8-layer ReLU MLP, 256 wide, batch 64", relu_mlp()),
              "small_gpt": ("small GPT (section 2), float32",
                            ml.models.transformer(**SMALL_GPT).training_outputs())}
    for key, (label, outs) in models.items():
        mine = _boundary(outs)
        theirs = measured.get(key)
        cell = f"{theirs:>15,}{mine / theirs:>8.3f}" if theirs else f"{'not measured':>15}{'':>8}"
        row(f"{label:<34}{mine:>14,}{cell}")
    if measured:
        row(f"   PyTorch {measured['torch']} on the CPU, run by {torch_py}")
    else:
        row("   set MEMLAB_TORCH_PYTHON to a Python with torch to measure PyTorch's column")


if __name__ == "__main__":
    saved_table()
    peaks_and_flops()
    against_pytorch()

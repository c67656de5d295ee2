"""PyTorch's saved tensors for the models of bench/memory_model.py, measured, to set beside
memlab's bytes. Needs torch (not a dependency of memlab: run it with a Python that has torch;
bench/memory_model.py runs it when ``MEMLAB_TORCH_PYTHON`` names one, or skips it).

Method: ``torch.autograd.graph.saved_tensors_hooks`` sees every tensor the forward pass saves for
the backward pass; tensors are deduplicated by storage (a relu's result and the next product's
input are one storage), and parameters and the batch's inputs are left out (memlab does not plan
given values either). Prints one JSON object: model -> bytes saved at the forward/backward
boundary.
"""
from __future__ import annotations

import json
import math
import sys

import torch
import torch.nn.functional as F


def saved_bytes(step, leaves) -> int:
    """Bytes of the distinct storages ``step()`` saves for backward, leaves excluded."""
    skip = {t.untyped_storage().data_ptr() for t in leaves}
    seen: dict[int, int] = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in skip:
            seen[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = step()
    del loss
    return sum(seen.values())


def relu_mlp(layers: int = 8, width: int = 256, batch: int = 64, classes: int = 10) -> int:
    """``layers`` products without bias, a relu after each but the last (to ``classes``), mean
    cross-entropy: the 8-layer ReLU MLP of the issue's check."""
    torch.manual_seed(0)
    x = torch.randn(batch, width)
    y = torch.randint(0, classes, (batch,))
    ws = [torch.randn(width, width, requires_grad=True) for _ in range(layers - 1)]
    ws.append(torch.randn(width, classes, requires_grad=True))

    def step():
        h = x
        for w in ws[:-1]:
            h = torch.relu(h @ w)
        return F.cross_entropy(h @ ws[-1], y)

    return saved_bytes(step, [x, y, *ws])


def small_gpt(layers=2, seq=128, hidden=256, heads=8, batch=2, vocab=1000, p=0.1) -> int:
    """memlab's ``models.transformer`` op for op (pre-norm blocks, tanh GELU, dropout after the
    attention softmax, the projection and the MLP; embeddings' dropout; tied output projection),
    float32, training mode. Dropout is ``torch.native_dropout``, the fused kernel with a boolean
    mask (one byte an element) that CUDA runs; on the CPU, ``F.dropout`` multiplies by a float
    mask (four bytes an element) instead."""
    torch.manual_seed(0)
    d = hidden // heads
    wte = torch.randn(vocab, hidden, requires_grad=True)
    wpe = torch.randn(seq, hidden, requires_grad=True)
    params = [wte, wpe]

    def lin(i, o):
        w, b = torch.randn(i, o, requires_grad=True), torch.zeros(o, requires_grad=True)
        params.extend([w, b])
        return w, b

    def norm():
        g, b = torch.ones(hidden, requires_grad=True), torch.zeros(hidden, requires_grad=True)
        params.extend([g, b])
        return g, b

    blocks = [dict(ln1=norm(), qkv=lin(hidden, 3 * hidden), proj=lin(hidden, hidden), ln2=norm(),
                   fc1=lin(hidden, 4 * hidden), fc2=lin(4 * hidden, hidden))
              for _ in range(layers)]
    lnf = norm()
    tokens = torch.randint(0, vocab, (batch * seq,))
    targets = torch.randint(0, vocab, (batch * seq,))
    pos = torch.arange(seq).repeat(batch)
    mask = torch.ones(seq, seq, dtype=torch.bool).triu(1)

    def drop(t):
        return torch.native_dropout(t, p, True)[0]

    def step():
        x = drop(wte[tokens] + wpe[pos])
        for blk in blocks:
            h = F.layer_norm(x, (hidden,), *blk["ln1"])
            qkv = h @ blk["qkv"][0] + blk["qkv"][1]
            q, k, v = (t.reshape(batch, seq, heads, d).transpose(1, 2)
                       for t in qkv.split(hidden, dim=1))
            s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
            a = drop(torch.softmax(s.masked_fill(mask, float("-inf")), -1))
            ctx = (a @ v).transpose(1, 2).reshape(batch * seq, hidden)
            x = x + drop(ctx @ blk["proj"][0] + blk["proj"][1])
            h = F.layer_norm(x, (hidden,), *blk["ln2"])
            h = F.gelu(h @ blk["fc1"][0] + blk["fc1"][1], approximate="tanh")
            x = x + drop(h @ blk["fc2"][0] + blk["fc2"][1])
        logits = F.layer_norm(x, (hidden,), *lnf) @ wte.t()
        return F.cross_entropy(logits, targets)

    return saved_bytes(step, [tokens, targets, pos, mask, *params])


if __name__ == "__main__":
    out = {"torch": torch.__version__, "relu_mlp": relu_mlp(), "small_gpt": small_gpt()}
    json.dump(out, sys.stdout)
    print()

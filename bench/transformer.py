"""Memory in transformers (lesson 15): activation bytes per layer from memlab's liveness
against Korthikanti et al. 2022's sbh(34 + 5as/h); full against selective recomputation; plain
against tiled attention (FlashAttention); the KV cache of serving under three allocators (vLLM).
Prints tables; run with `make bench`."""
from __future__ import annotations

import numpy as np
from _progress import row, sweep

import memlab as ml
from memlab.graph.ops.flash import tile_traffic
from memlab.memory import kvcache as kv
from memlab.models import activations as act
from memlab.models.gpt import CONFIGS

MB = 2 ** 20


def model(name: str, seq: int) -> ml.models.Transformer:
    return ml.models.gpt2(name, seq=seq) if name != "7b" else ml.models.gpt_7b(seq=seq)


def activations() -> None:
    row("1. Activation bytes per layer, b = 1, float16 with dropout: memlab's liveness against "
        "sbh(34 + 5as/h)")
    row(f"{'model':<8}{'s':>6}{'memlab MiB':>12}{'formula MiB':>13}{'5as/h share':>13}"
        f"{'whole model MiB':>17}{'L x formula':>13}")
    for name, seq in sweep([(n, s) for n in ("small", "7b") for s in (512, 2048, 8192)], "act"):
        m = model(name, seq)
        L, h, a = CONFIGS[name][:3]
        alive, _ = act.boundary_values(m.training_outputs())
        layer = sum(act._layer_terms(m, 0, alive).values())
        whole = sum(n.nbytes for n in alive if n is not m.loss)
        formula = act.formula_total(seq, 1, h, a)
        row(f"{name:<8}{seq:>6}{layer / MB:>12.1f}{formula / MB:>13.1f}"
            f"{5 * a * seq / h / (34 + 5 * a * seq / h):>13.0%}{whole / MB:>17.1f}"
            f"{L * formula / MB:>13.1f}")
    row("   whole model - L x formula: the embeddings' dropout mask, the last layernorm's "
        "input and output, the logits (s x vocab)")


def recomputation() -> None:
    row()
    row("2. Full against selective recomputation (recompute_graph), b = 1: bytes held per layer "
        "at the forward/backward boundary, and recomputed FLOPs over the step's FLOPs")
    row(f"{'model':<8}{'s':>6}{'none MiB':>10}{'selective':>11}{'full':>8}{'sel. extra':>12}"
        f"{'full extra':>12}{'peak none':>11}{'peak sel.':>11}{'peak full':>11}")
    for name, seq in sweep([("small", 512), ("small", 2048), ("small", 8192), ("7b", 2048)],
                           "recompute"):
        t = act.recompute_policies(model(name, seq))
        row(f"{name:<8}{seq:>6}{t['none']['per_layer'] / MB:>10.1f}"
            f"{t['selective']['per_layer'] / MB:>11.1f}{t['full']['per_layer'] / MB:>8.1f}"
            f"{t['selective']['overhead']:>12.1%}{t['full']['overhead']:>12.1%}"
            f"{t['none']['peak'] / MB:>11.0f}{t['selective']['peak'] / MB:>11.0f}"
            f"{t['full']['peak'] / MB:>11.0f}")


def attention() -> None:
    row()
    row("3. One attention layer (b = 1, 12 heads of 64, float16, causal): bytes held for the "
        "backward pass, and slow-memory traffic of the forward per head (block 128)")
    row(f"{'s':>7}{'plain MiB':>11}{'tiled MiB':>11}{'ratio':>8}{'plain M elems':>15}"
        f"{'tiled M elems':>15}")
    for s in sweep([512, 1024, 2048, 4096, 8192, 16384], "attention"):
        xs = [ml.placeholder(n, (1, 12, s, 64), np.float16) for n in "qkv"]
        scores = ml.bmatmul(xs[0], xs[1], trans_b=True) * 0.125
        plain = ml.bmatmul(ml.softmax(ml.causal_mask(scores)), xs[2])
        held = []
        for y in (plain, ml.tiled_attention(*xs, causal=True, block=128)):
            loss = ml.sum(y)
            alive, _ = act.boundary_values([loss, *ml.gradients(loss, xs)])
            held.append(sum(n.nbytes for n in alive if n is not loss))
        p, f = (sum(tile_traffic(s, 64, b, causal=True).values()) for b in (None, 128))
        row(f"{s:>7}{held[0] / MB:>11.1f}{held[1] / MB:>11.2f}{held[0] / held[1]:>8.0f}"
            f"{p / 1e6:>15.1f}{f / 1e6:>15.1f}")


def kv_cache() -> None:
    row()
    row("4. KV cache of GPT-2 small (fp16: 36 KiB a token) under a 2 GiB budget, 400 requests, "
        "prompt and output uniform in 16..512 tokens, one every step on average")
    row(f"{'allocator':<16}{'block':>6}{'waste':>8}{'frag.':>7}{'max at once':>13}"
        f"{'tokens/step':>13}{'preempted':>11}{'steps':>7}")
    tb = 2 * 2 * 12 * 768
    budget = 2 * 2 ** 30
    stream = kv.request_stream(400, seed=0, prompt=(16, 512), output=(16, 512), per_step=1.0)
    allocators = [kv.ContiguousAllocator(budget, tb, 1024), kv.PoolAllocator(budget, tb)]
    allocators += [kv.PagedAllocator(budget // (bs * tb), bs, tb) for bs in (1, 8, 16, 64, 256)]
    for alloc in sweep(allocators, "kv"):
        r = kv.serve(stream, alloc)
        row(f"{alloc.name:<16}{getattr(alloc, 'block_size', '-'):>6}{r['waste']:>8.1%}"
            f"{r['fragmentation']:>7.1%}{r['max_running']:>13}{r['throughput']:>13.1f}"
            f"{r['preemptions']:>11}{r['steps']:>7}")
    row("   vLLM (Kwon et al. 2023): 60-80% of KV memory wasted by contiguous reservation, "
        "under 4% with paging")


def zero() -> None:
    row()
    row("5. The 7B model (s = 2048, one sequence per device): GB per device, mixed-precision "
        "Adam (16 bytes a parameter), formula = simulator")
    par = ml.checkpoint.parallel
    m = act.parallel_model(ml.models.gpt_7b(seq=2048))
    row(f"{'devices':>8}" + "".join(f"{s:>10}" for s in par.ZERO))
    for n in (8, 16, 32, 64):
        values = [par.data_parallel_memory(m, n, n, s) for s in par.ZERO]
        assert all(abs(v - par.simulate_data_parallel(m, n, n, s)) < 1e-3 * v
                   for v, s in zip(values, par.ZERO))
        row(f"{n:>8}" + "".join(f"{v / 1e9:>10.1f}" for v in values))


if __name__ == "__main__":
    activations()
    recomputation()
    attention()
    kv_cache()
    zero()

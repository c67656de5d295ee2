"""The graphs whose default peaks tests/memory/test_zoo_peaks.py compares with the table
zoo_peaks_f2bc0f2.json (made by running ``python tests/memory/zoo_graphs.py`` on commit f2bc0f2
of main, before the one-rule liveness: ``PYTHONPATH=<that checkout> python zoo_graphs.py``)."""
from __future__ import annotations

import json
import random
import sys


def graphs():
    """(name, outputs) of every graph of the zoo, built the same way in every version."""
    import memlab as ml
    from memlab import checkpoint as ck
    from memlab.models import (alexnet, googlenet, lstm, mlp, resnet, training_outputs, vgg)
    from memlab.models.gpt import transformer
    from memlab.models.zoo import conv_resnet, slide22, slide23, slide24
    out = [("slide22", [slide22()["G"]]), ("slide23", [slide23()["A[8]"]])]
    out.append(("slide24", [slide24()["n7"]]))
    out.append(("mlp2", mlp(2)["outputs"]))
    out.append(("mlp8-relu", mlp(8, batch=16, n_in=32, hidden=32, act="relu")["outputs"]))
    out.append(("mlp200", mlp(200, batch=32, n_in=64, hidden=64)["outputs"]))
    out.append(("conv_resnet", training_outputs(conv_resnet())))
    for name, build in (("alexnet", alexnet), ("vgg", vgg), ("googlenet", googlenet)):
        out.append((name, training_outputs(build(2))))
    out.append(("resnet50", training_outputs(resnet(50, 2))))
    out.append(("resnet200", training_outputs(resnet(200, 1, 32))))
    out.append(("lstm16", training_outputs(lstm(16, 64, 64), wrt="data")))
    out.append(("gpt4", transformer(layers=4, seq=8, hidden=16, heads=2, batch=1,
                                    vocab=32).training_outputs()))
    m = mlp(12, batch=64, n_in=16, hidden=16, n_out=4)
    outs = training_outputs(m)
    out.append(("mlp12-sqrt", ck.recompute_graph(outs, ck.sqrt_checkpoints(outs))))
    for seed in range(3):
        out.append((f"random-{seed}", random_graph(300, seed)))
    return out


def random_graph(n, seed):
    """About ``n`` nodes of elementwise / pool ops, each reading one or two recent values."""
    import memlab as ml
    rng = random.Random(seed)
    nodes = [ml.placeholder(f"x{i}", (8, 8)) for i in range(4)]
    consumed = set()
    while len(nodes) < n:
        window = nodes[-30:]
        a = rng.choice(window)
        r = rng.random()
        if r < 0.35:
            b = rng.choice(window)
            new = ml.add(a, b) if rng.random() < 0.5 else ml.mul(a, b)
        elif r < 0.85:
            new = ml.sigmoid(a) if rng.random() < 0.5 else ml.tanh(a)
        else:
            new = ml.pool(a)
        consumed.update(new.inputs)
        nodes.append(new)
    return [x for x in nodes if x.op.computes and x not in consumed]


def peaks(outputs):
    """The default order's peak, the tag planner's and the offset planner's bytes."""
    import memlab as ml
    return {"order_peak": ml.order_peak(outputs),
            "plan_memory": ml.plan_memory(outputs).total_bytes,
            "plan_offsets": ml.plan_offsets(outputs).total_bytes}


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    json.dump({name: peaks(outs) for name, outs in graphs()}, sys.stdout, indent=1)

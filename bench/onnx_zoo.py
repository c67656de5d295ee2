"""The ONNX model zoo's real networks, imported and planned (lecture 7, p.29-35).

Prints two tables:

1. for each of the nine networks the ``onnx`` package ships (``ml.models.onnx_zoo()``): import
   time, ONNX nodes, parameters, forward activation bytes at batch 64 (every value the forward
   pass computes, none freed), and the training step's planned bytes (loss and every weight
   gradient; memory_order's default order) under none / in-place / sharing / both, then both
   after sqrt(N) checkpointing and after memonger (Chen et al. 2016);
2. memlab's reconstructions (``alexnet``, ``googlenet``, ``vgg``, ``resnet``) beside the
   imported networks they model: parameters, forward activation bytes, training bytes (both).

Run: ``.venv/bin/python bench/onnx_zoo.py`` (about two minutes; needs the onnx extra).
"""
from __future__ import annotations

import time

from _progress import row, sweep

import memlab as ml
from memlab.checkpoint import memonger, recompute_graph, sqrt_checkpoints
from memlab.models import alexnet, from_onnx, googlenet, onnx_zoo, resnet, training_outputs, vgg

BATCH = 64
GB = 1e9


def forward_bytes(model: dict) -> int:
    """Bytes of every value the forward pass computes (the loss's inputs, weights excluded)."""
    return sum(n.nbytes for n in ml.topo_order([model["loss"]]) if n.op.computes)


def planned(outs: list, inplace: bool = True, share: bool = True) -> float:
    return ml.plan_memory(outs, inplace=inplace, share=share, trace=False).total_bytes / GB


def zoo_table() -> None:
    row(f"Table 1: the ONNX model zoo at batch {BATCH}, 224 x 224 (GB; training step = loss and "
        f"every weight gradient)")
    head = (f"{'network':>13} {'import s':>8} {'nodes':>6} {'parameters':>12} {'fwd act':>8} | "
            f"{'none':>6} {'inplace':>7} {'sharing':>7} {'both':>6} {'sqrt(N)':>7} {'memonger':>8}")
    row(head)
    row("-" * len(head))
    for name in sweep(onnx_zoo(), "networks"):
        t = time.perf_counter()
        m = from_onnx(name, batch=BATCH)
        took = time.perf_counter() - t
        outs = training_outputs(m)
        cols = [planned(outs, ip, sh) for ip, sh in ((False, False), (True, False),
                                                       (False, True), (True, True))]
        for keep in (sqrt_checkpoints(outs), memonger(outs)):
            cols.append(planned(recompute_graph(outs, keep)))
        row(f"{name:>13} {took:8.2f} {len(m['nodes']):6d} {m['parameters']:12,d} "
            f"{forward_bytes(m) / GB:8.2f} | " + " ".join(
                f"{c:{w}.2f}" for c, w in zip(cols, (6, 7, 7, 6, 7, 8))))
    row()


#: reconstruction name -> (builder at batch 64, imported network it models)
PAIRS = {"alexnet()": (lambda: alexnet(BATCH), "bvlc_alexnet"),
         "googlenet()": (lambda: googlenet(BATCH), "inception_v1"),
         "vgg() (VGG-16)": (lambda: vgg(BATCH), "vgg19"),
         "vgg(2,2,4,4,4)": (lambda: vgg(BATCH, layers=(2, 2, 4, 4, 4)), "vgg19"),
         "resnet(50)": (lambda: resnet(50, BATCH), "resnet50")}


def reconstruction_table() -> None:
    row(f"Table 2: memlab's reconstructions beside the imported networks, batch {BATCH} (GB)")
    head = (f"{'reconstruction':>15} {'parameters':>12} {'fwd act':>8} {'train':>7} | "
            f"{'imported':>13} {'parameters':>12} {'trained':>12} {'fwd act':>8} {'train':>7}")
    row(head)
    row("-" * len(head))
    for name, (build, network) in sweep(PAIRS.items(), "pairs"):
        mine, real = build(), from_onnx(network, batch=BATCH)
        trained = sum(p.size for p in real["params"])
        row(f"{name:>15} {sum(p.size for p in mine['params']):12,d} "
            f"{forward_bytes(mine) / GB:8.2f} {planned(training_outputs(mine)):7.2f} | "
            f"{network:>13} {real['parameters']:12,d} {trained:12,d} "
            f"{forward_bytes(real) / GB:8.2f} {planned(training_outputs(real)):7.2f}")
    row("(parameters: every weight the file stores, batch-norm running statistics included; "
        "trained: those a training step updates)")


if __name__ == "__main__":
    zoo_table()
    reconstruction_table()

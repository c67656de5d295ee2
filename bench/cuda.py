"""Benchmark of memlab's CUDA kernels against numpy on the CPU and, with a GPU, CuPy.

One row per kernel: the size, numpy's time and rate on the CPU, and where a CUDA GPU is present
memlab's kernel (Numba CUDA) and CuPy's equivalent (when CuPy is installed), each as GB/s for
memory-bound kernels (bytes each must read and write once) or GFLOP/s for the matrix product,
with the fraction of the device's peak (memory bandwidth from the memory clock and bus width,
float32 FLOP/s from the SM count, cores per SM and clock; "n/a" where the driver does not say).

Without a GPU (or under the simulator, whose times mean nothing) it prints the numpy column,
says why the device columns are missing, and exits 0.

Run: ``.venv/bin/python bench/cuda.py`` (seconds on a GPU; about ten seconds on a CPU only).
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable

import numpy as np

# This file is named cuda.py and Python puts its folder first on sys.path, where it would shadow
# the `cuda` package (cuda-bindings) that numba-cuda imports: take the folder off the path.
_HERE = os.path.dirname(os.path.abspath(__file__))
from _progress import row, sweep  # noqa: E402  (before the folder leaves the path)

sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

#: float32 cores per SM by compute capability (CUDA C Programming Guide, "Arithmetic Instructions")
CORES_PER_SM = {(6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128,
                (8, 7): 128, (8, 9): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128}


def best_of(fn: Callable[[], Any], repeat: int = 5, sync: Callable[[], None] = lambda: None) -> float:
    """Best wall time of ``repeat`` calls (after one warm-up call), in seconds."""
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return min(times)


def cases(rng: np.random.Generator) -> list[dict[str, Any]]:
    """The kernels: host inputs, numpy's version, memlab's launcher, CuPy's, the work done."""
    n, rows, cols, mm = 1 << 24, 4096, 1024, 2048
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    r = rng.standard_normal((rows, cols)).astype(np.float32)
    a, b = (rng.standard_normal((mm, mm)).astype(np.float32) for _ in range(2))

    def softmax_np(v: np.ndarray) -> np.ndarray:
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def softmax_cp(cp: Any, v: Any) -> Any:
        e = cp.exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return [
        dict(name="add", size=f"{n:,}", inputs=[x, y], out=(n,), bytes=3 * 4 * n,
             numpy=lambda: np.add(x, y), memlab=lambda mc, d, o: mc.binary("add", d[0], d[1], o),
             cupy=lambda cp, d: cp.add(d[0], d[1])),
        dict(name="sigmoid", size=f"{n:,}", inputs=[x], out=(n,), bytes=2 * 4 * n,
             numpy=lambda: 1 / (1 + np.exp(-x)), memlab=lambda mc, d, o: mc.unary("sigmoid", d[0], o),
             cupy=lambda cp, d: 1 / (1 + cp.exp(-d[0]))),
        dict(name="sum (all)", size=f"{n:,}", inputs=[x], out=(), bytes=4 * n,
             numpy=lambda: x.sum(), memlab=lambda mc, d, o: mc.reduce_all(d[0], o),
             cupy=lambda cp, d: d[0].sum()),
        dict(name="sum (axis 0)", size=f"{rows}x{cols}", inputs=[r], out=(cols,), bytes=4 * r.size,
             numpy=lambda: r.sum(axis=0), memlab=lambda mc, d, o: mc.reduce_axes(d[0], o, [0]),
             cupy=lambda cp, d: d[0].sum(axis=0)),
        dict(name="softmax", size=f"{rows}x{cols}", inputs=[r], out=r.shape, bytes=2 * 4 * r.size,
             numpy=lambda: softmax_np(r), memlab=lambda mc, d, o: mc.softmax(d[0], o),
             cupy=lambda cp, d: softmax_cp(cp, d[0])),
        dict(name="pool (w=5)", size=f"{rows}x{cols}", inputs=[r], out=r.shape, bytes=2 * 4 * r.size,
             numpy=lambda: np.lib.stride_tricks.sliding_window_view(
                 np.pad(r, [(0, 0), (2, 2)]), 5, axis=-1).mean(-1),
             memlab=lambda mc, d, o: mc.pool(d[0], o, 5), cupy=None),
        dict(name="matmul", size=f"{mm}^3", inputs=[a, b], out=(mm, mm), flops=2 * mm ** 3,
             numpy=lambda: a @ b, memlab=lambda mc, d, o: mc.matmul(d[0], d[1], o),
             cupy=lambda cp, d: d[0] @ d[1]),
    ]


def device_peaks(cuda: Any) -> tuple[float | None, float | None, str]:
    """(peak GB/s, peak float32 GFLOP/s, device name); None where the driver does not say."""
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    try:
        gbs = 2 * dev.MEMORY_CLOCK_RATE * 1e3 * dev.GLOBAL_MEMORY_BUS_WIDTH / 8 / 1e9
    except Exception:
        gbs = None
    try:
        cores = CORES_PER_SM.get(tuple(dev.compute_capability))
        flops = dev.MULTIPROCESSOR_COUNT * cores * 2 * dev.CLOCK_RATE * 1e3 / 1e9 if cores else None
    except Exception:
        flops = None
    return gbs, flops, name


def rate(case: dict[str, Any], seconds: float) -> float:
    """GB/s (memory-bound kernels) or GFLOP/s (matmul)."""
    return case.get("flops", case.get("bytes", 0)) / seconds / 1e9


def fmt(v: float | None, spec: str = ".1f") -> str:
    return "n/a" if v is None else format(v, spec)


def main() -> int:
    rng = np.random.default_rng(0)
    table = cases(rng)
    sim = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
    gpu = False
    if not sim:
        try:
            from numba import cuda
            gpu = bool(cuda.is_available())
        except Exception as e:  # numba-cuda missing or broken: say so, measure the CPU only
            print(f"numba.cuda unavailable: {type(e).__name__}: {e}")
    why = ("NUMBA_ENABLE_CUDASIM is set: the simulator's times mean nothing" if sim else
           "no CUDA GPU found" if not gpu else "")
    print("memlab CUDA kernels against numpy (CPU)" + ("" if gpu else f"; {why}: device columns skipped"))
    print(f"{'kernel':14} {'size':>12} {'numpy ms':>9} {'numpy rate':>11}", end="")
    if not gpu:
        print()
        for c in sweep(table, "kernels"):
            t = best_of(c["numpy"], repeat=3)
            unit = "GFLOP/s" if "flops" in c else "GB/s"
            row(f"{c['name']:14} {c['size']:>12} {t * 1e3:9.2f} {rate(c, t):7.1f} {unit}")
        print("rates: GB/s = bytes each kernel must read and write once / time; GFLOP/s for matmul")
        return 0

    import memlab.cuda as mc
    from numba import cuda
    try:
        import cupy as cp
    except ImportError:
        cp = None
    gbs, gflops, name = device_peaks(cuda)
    print(f" {'memlab ms':>10} {'memlab rate':>12} {'% peak':>7} {'cupy ms':>8} {'cupy rate':>10}")
    for c in sweep(table, "kernels"):
        t_np = best_of(c["numpy"], repeat=3)
        d = [mc.to_device(v) for v in c["inputs"]]
        out = mc.device_empty(c["out"])
        t_ml = best_of(lambda: c["memlab"](mc, d, out), sync=cuda.synchronize)
        peak = gflops if "flops" in c else gbs
        frac = None if peak is None else 100 * rate(c, t_ml) / peak
        t_cp = None
        if cp is not None and c["cupy"] is not None:
            dc = [cp.asarray(v) for v in c["inputs"]]
            t_cp = best_of(lambda: c["cupy"](cp, dc), sync=cp.cuda.runtime.deviceSynchronize)
        unit = "GFLOP/s" if "flops" in c else "GB/s"
        row(f"{c['name']:14} {c['size']:>12} {t_np * 1e3:9.2f} {rate(c, t_np):7.1f} {unit:>3} "
            f"{t_ml * 1e3:10.3f} {rate(c, t_ml):8.1f} {unit:>3} {fmt(frac):>7} "
            f"{fmt(None if t_cp is None else t_cp * 1e3, '.3f'):>8} "
            f"{fmt(None if t_cp is None else rate(c, t_cp)):>10}")
    print(f"device: {name}; peak {fmt(gbs)} GB/s, {fmt(gflops)} GFLOP/s float32"
          + ("" if cp is not None else "; CuPy not installed (pip install cupy-cuda12x to compare)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

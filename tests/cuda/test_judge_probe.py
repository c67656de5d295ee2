"""The judge's ``answers.cuda_probe()``: a call runs under memlab.testing.cuda_probe in the kernel and
returns its counts with the result (exercise 14's hidden tests tell a kernel from numpy this way)."""
from __future__ import annotations

import textwrap

from memlab.grading.judge import run_local

ANSWERS = '''
import numpy as np
from numba import cuda

@cuda.jit
def double_kernel(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 2 * x[i]

def with_kernel(x):
    out = np.zeros_like(x)
    double_kernel[1, 32](x, out)
    return out

def with_numpy(x):
    return 2 * x
'''

JUDGE = '''
import numpy as np
from memlab.testing import check

def test_probe(answers):
    x = answers.rng.standard_normal(8).astype(np.float32)
    probed = answers.cuda_probe()
    with check(points=1, name="a kernel"):
        out, probe = probed.with_kernel(x)
        assert np.allclose(out, 2 * x) and probe["launches"] == {"double_kernel": 1}
    with check(points=1, name="numpy"):
        out, probe = probed.with_numpy(x)
        assert np.allclose(out, 2 * x) and probe["launches"], "no kernel was launched"
'''


def test_counts_come_back_with_the_result():
    ns: dict = {}
    exec(ANSWERS, ns)
    out = run_local(textwrap.dedent(JUDGE), ns)
    verdicts = {name: (ok, msg) for name, _, ok, msg in out["checks"]}
    assert out["error"] is None and verdicts["a kernel"][0] and not verdicts["numpy"][0], out
    assert "no kernel was launched" in verdicts["numpy"][1]

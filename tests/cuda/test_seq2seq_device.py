"""Lesson 10's model on the device: embeddings, copies and gradients accumulated in place
(a GEMM with beta = 1, an atomic scatter-add, a bias sum added in) against numpy."""
import numpy as np
import pytest

import memlab as ml
import memlab.cuda as mc
from memlab.cuda.embedding import gather, scatter_add
from memlab.cuda.matmul import matmul
from memlab.errors import FeedError
from numba import cuda


@pytest.mark.parametrize("rows,n,d", [(1, 1, 1), (5, 7, 3), (9, 33, 2)])
def test_gather_and_scatter_add_against_numpy(rows, n, d):
    rng = np.random.default_rng(rows + n)
    table = rng.standard_normal((rows, d)).astype(np.float32)
    ids = rng.integers(0, rows, n).astype(np.int32)
    g = rng.standard_normal((n, d)).astype(np.float32)
    out = cuda.device_array((n, d), np.float32)
    gather(cuda.to_device(table), cuda.to_device(ids), out)
    np.testing.assert_array_equal(out.copy_to_host(), table[ids])
    acc = rng.standard_normal((rows, d)).astype(np.float32)
    dev = cuda.to_device(acc)
    scatter_add(cuda.to_device(g), cuda.to_device(ids), dev)
    want = acc.copy()
    np.add.at(want, ids, g)
    np.testing.assert_allclose(dev.copy_to_host(), want, rtol=1e-5, atol=1e-6)


def test_ids_out_of_range_are_named():
    out = cuda.device_array((2, 2), np.float32)
    with pytest.raises(FeedError, match="id|label"):
        gather(cuda.to_device(np.ones((3, 2), np.float32)),
               cuda.to_device(np.array([0, 7], np.int32)), out)


def test_matmul_adds_into_its_output():
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((7, 5), (7, 3)))
    c = rng.standard_normal((5, 3)).astype(np.float32)
    dev = cuda.to_device(c)
    matmul(cuda.to_device(a), cuda.to_device(b), dev, trans_a=True, add=True)
    np.testing.assert_allclose(dev.copy_to_host(), c + a.T @ b, rtol=1e-5, atol=1e-5)


def test_seq2seq_training_step_in_one_device_arena():
    m = ml.models.seq2seq(1, 2, hidden=3, batch=2, vocab=5)
    outs = [m.loss, *m.grads()]
    plan = ml.memory.plan_sharing(outs, m.order(outs), local=True, vertical=True,
                                  horizontal=True, alignment=mc.DEVICE_ALIGN)
    assert any(n.op.name == "accumulate" for n in plan.order)
    feed = m.feed(0)
    got = ml.Executor(outs, plan=plan, device="cuda").run(feed)
    for g, w in zip(got, ml.Executor(outs).run(feed)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)

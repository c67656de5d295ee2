"""The transformer of memlab ops: forward against numpy written here, gradients against central
differences, a falling loss on the toy task, and the shape-only GPT-2 sizes against the published
parameter counts."""
from __future__ import annotations

import numpy as np
import pytest

import memlab as ml
from memlab.models.gpt import gpt2, gpt_7b, train, transformer
from memlab.testing import central_difference


def _np_forward(m, p, feed):
    """The same network in plain numpy (GPT-2's equations), dropout off: the mean loss."""
    b, s, h, a = m.batch, m.seq, m.hidden, m.heads
    d = h // a
    P = {name: p[node] for name, node in m.params.items()}

    def norm(x, name):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * P[name + ".gamma"] + P[name + ".beta"]

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))

    x = P["wte"][feed[m.tokens]] + P["wpe"][feed[m.positions]]
    future = np.triu(np.ones((s, s), bool), 1)
    for l in range(m.layers):
        pre = f"l{l}."
        qkv = norm(x, pre + "ln1") @ P[pre + "qkv.w"] + P[pre + "qkv.b"]
        q, k, v = (qkv[:, i * h:(i + 1) * h].reshape(b, s, a, d).transpose(0, 2, 1, 3)
                   for i in range(3))
        att = np.where(future, -np.inf, q @ k.transpose(0, 1, 3, 2) / np.sqrt(d))
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b * s, h)
        x = x + ctx @ P[pre + "proj.w"] + P[pre + "proj.b"]
        f = gelu(norm(x, pre + "ln2") @ P[pre + "fc1.w"] + P[pre + "fc1.b"])
        x = x + f @ P[pre + "fc2.w"] + P[pre + "fc2.b"]
    logits = norm(x, "lnf") @ P["wte"].T
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -logp[np.arange(b * s), feed[m.targets]].mean()


def test_forward_matches_numpy():
    m = transformer(2, 5, 8, 2, 3, 7, dtype=np.float64)
    params, feed = m.init_params(1, std=0.3), m.data(2)
    (loss,) = ml.Executor(m.loss).run({**params, **feed})
    assert np.isclose(loss, _np_forward(m, params, feed), rtol=1e-12)


def test_gradients_match_central_differences():
    """Every parameter of a two-layer model with dropout (the masks fixed by the fed seed)."""
    m = transformer(2, 3, 4, 2, 2, 5, dropout=0.2, dtype=np.float64)
    params, feed = m.init_params(3, std=0.5), m.data(4)
    nodes = list(m.params.values())
    grads = ml.Executor(m.grads()).run({**params, **feed})
    run = ml.Executor(m.loss)
    arrays = [params[n] for n in nodes]
    f = lambda arrs: float(run.run({**feed, **dict(zip(nodes, arrs))})[0])  # noqa: E731
    for i, (node, g) in enumerate(zip(nodes, grads)):
        np.testing.assert_allclose(g, central_difference(f, arrays, i), rtol=1e-5, atol=1e-7,
                                   err_msg=node.name)


def test_the_loss_falls_on_the_toy_task():
    m = transformer(1, 7, 32, 4, 16, 6, dropout=0.1)
    losses = train(m, 60, lr=1e-2)
    assert losses[0] > 1.5 and np.mean(losses[-10:]) < 0.25 * losses[0]


@pytest.mark.parametrize("size, published", [("small", 124_439_808), ("medium", 354_823_168),
                                              ("large", 774_030_080)])
def test_gpt2_sizes_have_the_published_parameter_counts(size, published):
    """Hugging Face's counts of OpenAI's GPT-2 checkpoints (tied output projection)."""
    assert gpt2(size, seq=128).param_count() == published


def test_shape_only_models_allocate_nothing():
    m = gpt_7b(seq=4096)
    outputs = m.training_outputs()
    nodes = ml.topo_order(outputs)
    assert all(n.value is None or n.value.size <= 1 for n in nodes)   # scalars only (the scale)
    assert m.logits.nbytes == 4096 * 32000 * 2 and m.logits.dtype == np.float16
    # 12 L h^2 + 13 L h + (V + positions) h + 2 h: the blocks, the tables and the last layernorm
    L, h = 32, 4096
    assert m.param_count() == 12 * L * h * h + 13 * L * h + (32000 + 4096) * h + 2 * h
    assert 6.5e9 < m.param_count() < 7e9


@pytest.mark.parametrize("kwargs, match", [
    (dict(hidden=10, heads=4), "heads=4 does not divide hidden=10"),
    (dict(seq=0), "seq"),
    (dict(dropout=1.0), "dropout"),
    (dict(layers=-1), "layers"),
])
def test_bad_sizes_raise(kwargs, match):
    args = dict(layers=1, seq=4, hidden=8, heads=2, batch=1, vocab=5) | kwargs
    with pytest.raises(ml.MemlabError, match=match):
        transformer(**args)

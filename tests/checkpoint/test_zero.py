"""Mixed-precision Adam holds 16 bytes a parameter in real arrays; ZeRO's shards hold what the
formulas of checkpoint.parallel say and update like one Adam; the 7B transformer on 8-64 devices."""
from __future__ import annotations

import numpy as np
import pytest

import memlab as ml
from memlab.checkpoint import parallel as par
from memlab.checkpoint.zero import MixedPrecisionAdam, ZeroAdam


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in ((6, 4), (4,), (3, 5, 2))]


def test_sixteen_bytes_a_parameter():
    params = _params()
    opt = MixedPrecisionAdam(params)
    psi = sum(p.size for p in params)
    got = opt.state_bytes()
    assert sum(got.values()) == 16 * psi == (4 + par.ADAM_STATES) * psi
    assert got["fp16 weights"] == got["fp16 gradients"] == 2 * psi


def test_mixed_precision_step_follows_adam_in_float64():
    """Three steps against Adam written here in float64, on fp16-rounded gradients."""
    params, rng = _params(1), np.random.default_rng(2)
    opt = MixedPrecisionAdam(params, lr=1e-2, loss_scale=128.0)
    ref = [p.astype(np.float64) for p in params]
    m = [np.zeros_like(p) for p in ref]
    v = [np.zeros_like(p) for p in ref]
    for t in range(1, 4):
        grads = [(rng.standard_normal(p.shape) * 128).astype(np.float16) for p in params]
        got = opt.step(grads)
        for i, g in enumerate(grads):
            g = g.astype(np.float64) / 128
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            ref[i] -= 1e-2 * (m[i] / (1 - 0.9 ** t)) / (np.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-8)
            assert got[i].dtype == np.float16
            np.testing.assert_allclose(opt.master[i], ref[i], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got[i], ref[i], rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("N", [1, 2, 4])
@pytest.mark.parametrize("stage", par.ZERO)
def test_zero_shards_hold_what_the_formula_says_and_update_like_one_adam(N, stage):
    params = _params(3) + [np.zeros(2, np.float32)]                 # 60 parameters
    psi = sum(p.size for p in params)
    assert psi % N == 0
    zero, one = ZeroAdam(params, N, stage, lr=1e-2), MixedPrecisionAdam(params, lr=1e-2)
    rng = np.random.default_rng(4)
    for _ in range(2):
        grads = [rng.standard_normal(p.shape).astype(np.float16) for p in params]
        for a, b in zip(zero.step(grads), one.step(grads)):
            np.testing.assert_array_equal(a, b)
    model = par.from_sizes([psi], [0.0])
    for d in range(N):
        assert zero.device_bytes(d) == par.data_parallel_memory(model, N, N, stage) \
            - (2 * psi if stage == "zero-3" else 0)   # zero-3's gathered layer: while it runs


def test_7b_transformer_on_8_to_64_devices():
    """Formulas equal the tick-by-tick simulator; activations per device are L sbh(34+5as/h)."""
    m = ml.models.gpt_7b(seq=2048, batch=1)
    model = ml.models.activations.parallel_model(m)
    assert sum(model.params) == m.param_count()
    per_sample = 32 * ml.models.activations.formula_total(2048, 1, 4096, 32)
    assert sum(model.activations) == per_sample
    for N in (8, 16, 32, 64):
        for stage in par.ZERO:
            assert par.data_parallel_memory(model, N, N, stage) == pytest.approx(
                par.simulate_data_parallel(model, N, N, stage), rel=1e-12)
        plain = par.data_parallel_memory(model, N, N, "plain")
        assert plain == pytest.approx(16 * m.param_count() + per_sample, rel=1e-12)


def test_bad_input():
    with pytest.raises(ml.MemlabError, match="stage"):
        ZeroAdam(_params(), 2, "zero-9")
    with pytest.raises(ml.MemlabError, match="params"):
        MixedPrecisionAdam([])
    with pytest.raises(ml.MemlabError, match="out of range"):
        ZeroAdam(_params(), 2).device_bytes(2)
    with pytest.raises(ml.MemlabError, match="one gradient per parameter"):
        MixedPrecisionAdam(_params()).step([np.zeros(3)])

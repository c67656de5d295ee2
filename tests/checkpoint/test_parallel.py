"""Parallel backpropagation: the memory formulas against step-by-step simulators, and the ZeRO
paper's own figures."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import memlab as ml
from memlab.checkpoint import parallel as par
from memlab.errors import MemlabError


@given(params=st.lists(st.integers(0, 10**6), min_size=1, max_size=12), data=st.data())
def test_formulas_equal_the_simulators(params, data):
    acts = data.draw(st.lists(st.floats(0, 1e6), min_size=len(params), max_size=len(params)))
    model = par.from_sizes(params, acts)
    N = data.draw(st.sampled_from([1, 2, 4, 8]))
    for stage in par.ZERO:
        assert par.data_parallel_memory(model, N, 8, stage) == pytest.approx(
            par.simulate_data_parallel(model, N, 8, stage))
    S = data.draw(st.integers(1, len(params)))
    M = data.draw(st.sampled_from([1, 2, 4, 8]))
    schedule = data.draw(st.sampled_from(par.SCHEDULES))
    for remat in (False, True):
        assert par.pipeline_memory(model, S, M, 8, remat, schedule) == pytest.approx(
            par.simulate_pipeline(model, S, M, 8, remat, schedule))


def test_the_zero_papers_figure():
    """Rajbhandari et al. 2020, Figure 1: 7.5B parameters on 64 devices, mixed-precision Adam."""
    model = par.uniform_model(7500, 10**6, 0.0)
    gb = {s: par.data_parallel_memory(model, 64, 64, s) / 1e9 for s in par.ZERO}
    assert gb["plain"] == pytest.approx(120, abs=0.1)
    assert gb["zero-1"] == pytest.approx(31.4, abs=0.1)
    assert gb["zero-2"] == pytest.approx(16.6, abs=0.1)
    assert gb["zero-3"] == pytest.approx(1.9, abs=0.1)


def test_pipeline_shapes():
    assert par.bubble_fraction(4, 4) == pytest.approx(3 / 7)
    assert par.bubble_fraction(1, 8) == 0
    model = par.uniform_model(24, 10**6, 1e6)
    plain = max(par.pipeline_memory(model, 4, 8, 32))
    remat = max(par.pipeline_memory(model, 4, 8, 32, remat=True))
    assert remat < plain
    # more micro-batches: the same activations in flight without remat, fewer with remat
    assert max(par.pipeline_memory(model, 4, 16, 32, remat=True)) < remat


def test_bad_input():
    model = par.uniform_model(4, 10, 10.0)
    with pytest.raises(ml.MemlabError, match="stages"):
        par.pipeline_memory(model, 5, 1, 8)
    with pytest.raises(ml.MemlabError, match="micro-batches"):
        par.pipeline_memory(model, 2, 3, 8)
    with pytest.raises(ml.MemlabError, match="stage must be"):
        par.data_parallel_memory(model, 2, 8, "zero-4")
    with pytest.raises(ml.MemlabError, match="devices"):
        par.data_parallel_memory(model, 3, 8)


@pytest.mark.parametrize("split", ["column", "row"])
@pytest.mark.parametrize("devices", [1, 2, 3, 5])
def test_intra_layer_split_computes_the_layer_and_its_formula_counts_the_simulation(split, devices):
    """The split product, replayed with explicit transfers, gives numpy's Y, dX and dW; the bytes
    it holds and receives per device are the formula's."""
    rng = np.random.default_rng(devices)
    X, W, dY = (rng.standard_normal(s) for s in ((4, 7), (7, 6), (4, 6)))
    Y, dX, dW, counted = par.simulate_intra_layer(X, W, dY, devices, split)
    assert np.allclose(Y, X @ W) and np.allclose(dX, dY @ W.T) and np.allclose(dW, X.T @ dY)
    assert counted == par.intra_layer_memory(4, 7, 6, devices, split, itemsize=8)


def test_intra_layer_by_hand_on_even_splits():
    b, n_in, n_out, D = 8, 12, 16, 4
    col = par.intra_layer_memory(b, n_in, n_out, D, "column")
    assert col.weights == [2 * n_in * n_out // D * 4] * D          # W and dW shards
    assert col.received_forward == [b * n_out * (D - 1) // D * 4] * D   # all-gather of Y
    assert col.received_backward == [2 * (D - 1) * b * n_in // D * 4] * D   # all-reduce of dX
    row = par.intra_layer_memory(b, n_in, n_out, D, "row")
    assert row.kept_input == [b * n_in // D * 4] * D
    assert row.received_forward == [2 * (D - 1) * b * n_out // D * 4] * D
    assert row.memory == [w + k + o for w, k, o in zip(row.weights, row.kept_input, row.output)]
    with pytest.raises(MemlabError, match="5 devices for a row split of 4 rows"):
        par.intra_layer_memory(2, 4, 8, 5, "row")
    with pytest.raises(MemlabError, match="split must be 'column' or 'row'"):
        par.intra_layer_memory(2, 4, 8, 2, "diagonal")


def test_stages_are_contiguous_and_cover_the_layers():
    m = par.uniform_model(10, 5, 1.0)
    got = par.stages(m, 3)
    assert [list(r) for r in got] == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9]]


def _greedy_1f1b(S, M, fwd=1, bwd=2):
    """1F1B by its rule, tick by tick, independently of ``stage_order``: an idle stage runs a
    backward whose gradient has arrived, else a forward whose input has arrived while it holds
    fewer than S - s micro-batches. Returns the most micro-batches each stage held and the
    makespan."""
    f_done = [[None] * M for _ in range(S)]
    b_done = [[None] * M for _ in range(S)]
    busy_until, task = [0] * S, [None] * S
    held, most, t = [0] * S, [0] * S, 0
    while any(b_done[0][m] is None for m in range(M)):
        for s in range(S):                       # tasks ending at t
            if task[s] and busy_until[s] == t:
                kind, m = task[s]
                (f_done if kind == "F" else b_done)[s][m] = t
                if kind == "B":
                    held[s] -= 1
                task[s] = None
        for s in range(S):                       # idle stages pick their next task
            if task[s]:
                continue
            ready_b = [m for m in range(M) if b_done[s][m] is None and f_done[s][m] is not None
                       and (s == S - 1 or b_done[s + 1][m] is not None)]
            ready_f = [m for m in range(M) if f_done[s][m] is None and all(
                f_done[s][k] is not None for k in range(m))
                and (s == 0 or f_done[s - 1][m] is not None)]
            if ready_b:
                task[s], busy_until[s] = ("B", min(ready_b)), t + bwd
            elif ready_f and held[s] < S - s:
                task[s], busy_until[s] = ("F", min(ready_f)), t + fwd
                held[s] += 1
                most[s] = max(most[s], held[s])
        t += 1
    return most, max(b_done[0])


@pytest.mark.parametrize("S", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("M", [1, 2, 3, 5, 8])
def test_1f1b_holds_at_most_S_minus_s_micro_batches_and_keeps_gpipes_bubble(S, M):
    most, span = _greedy_1f1b(S, M)
    assert most == [min(S - s, M) for s in range(S)] == par.in_flight(S, M, "1f1b")
    assert span == (M + S - 1) * 3                          # forward 1 + backward 2 per stage
    tasks = par.pipeline_timeline(S, M, "1f1b")
    assert max(t[4] for t in tasks) == span
    gpipe = par.pipeline_timeline(S, M, "gpipe")
    assert max(t[4] for t in gpipe) == span
    for schedule in par.SCHEDULES:
        assert par.measured_bubble(S, M, schedule) == pytest.approx(par.bubble_fraction(S, M))
    # the timeline keeps every dependency, and a device runs one task at a time
    end = {(s, k, m): e for s, k, m, _, e in tasks}
    for s, k, m, b, e in tasks:
        if k == "F" and s > 0:
            assert b >= end[s - 1, "F", m]
        if k == "B":
            assert b >= (end[s + 1, "B", m] if s < S - 1 else end[s, "F", m])
    for s in range(S):
        spans = sorted((b, e) for t_s, _, _, b, e in tasks if t_s == s)
        assert all(e1 <= b2 for (_, e1), (b2, _) in zip(spans, spans[1:]))


def test_1f1b_holds_less_than_gpipe_on_every_stage_but_the_last():
    model = par.uniform_model(8, 10**6, 1e6)
    g = par.pipeline_memory(model, 4, 8, 32)
    f = par.pipeline_memory(model, 4, 8, 32, schedule="1f1b")
    weights = 16 * 2 * 10**6
    assert [(x - weights) / 2e6 for x in g] == [8 * 4] * 4          # 2 layers x 4 samples x 8
    assert [(x - weights) / 2e6 for x in f] == [4 * 4, 3 * 4, 2 * 4, 1 * 4]
    for remat in (False, True):
        for schedule in par.SCHEDULES:
            assert par.pipeline_memory(model, 4, 8, 32, remat, schedule) == pytest.approx(
                par.simulate_pipeline(model, 4, 8, 32, remat, schedule))
    with pytest.raises(ml.MemlabError, match="schedule must be one of"):
        par.pipeline_memory(model, 4, 8, 32, schedule="pipedream")

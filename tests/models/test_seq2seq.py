"""The sequence-to-sequence model of seed 001 and OpenNMT's sharing techniques on it."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import memlab as ml
from memlab.memory.sharing import conditions, plan_sharing, usage_table
from memlab.models import seq2seq
from memlab.models.encoder_decoder import train, vertical_sharing_cases
from memlab.testing import check_plan_runs

SMALL = dict(hidden=8, batch=4, vocab=7)
RULES = [dict(zip(("local", "vertical", "horizontal"), bits))
         for bits in itertools.product([False, True], repeat=3)]


def _step(share_params=True, connect=True, src=3, tgt=4):
    m = seq2seq(src, tgt, share_params=share_params, connect=connect, **SMALL)
    outs = [m.loss, *m.grads()]
    return m, outs, m.order(outs)


def test_interface_works_with_gradients_planner_and_executor():
    m = seq2seq(3, 4, **SMALL)
    grads = ml.gradients(m.loss, m.params)
    plan = ml.plan_memory([m.loss, *grads])
    check_plan_runs(plan, m.feed(0))
    assert m.loss.shape == () and len(m.params) == 14


def test_every_node_knows_its_module_and_timestep():
    m, outs, order = _step()
    modules = {n.scope.module for n in order if n.scope}
    assert modules == {"encoder", "bridge", "decoder", "generator"}
    steps = {n.scope.step for n in order if n.scope and n.scope.module == "decoder"}
    assert steps == {None, 0, 1, 2, 3}        # None: the shared parameters and their gradients
    assert all(n.scope is not None for n in order if n.op.computes and n.name != "dloss")


@pytest.mark.parametrize("rules", RULES, ids=lambda r: "+".join(k for k, v in r.items() if v)
                         or "none")
def test_every_rule_gives_a_valid_plan_with_unchanged_results(rules):
    m, outs, order = _step()
    plan = plan_sharing(outs, order, **rules)
    check_plan_runs(plan, m.feed(1), rtol=1e-5)


def test_the_graph_switches_change_memory_not_results():
    m0, outs0, _ = _step()
    ref = ml.Executor(outs0).run(m0.feed(2))
    for share, connect in [(False, True), (True, False), (False, False)]:
        m, outs, order = _step(share, connect)
        got = ml.Executor(outs, plan=plan_sharing(outs, order, vertical=True)).run(m.feed(2))
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-5)
        by_node = dict(zip(m.params, got[1:]))
        for k, (name, nodes) in enumerate(m.groups.items()):
            want = ref[1 + m0.params.index(m0.groups[name][0])]
            summed = sum(np.asarray(by_node[n], np.float64) for n in nodes)
            np.testing.assert_allclose(summed, want, rtol=1e-4, atol=1e-6, err_msg=name)


def _bytes(share=True, connect=True, tgt=4, **rules):
    m, outs, order = _step(share, connect, tgt=tgt)
    return plan_sharing(outs, order, **rules).total_bytes


def test_each_technique_saves_memory_in_turn():
    steps = [_bytes(False, False), _bytes(True, False), _bytes(True, True),
             _bytes(local=True), _bytes(local=True, vertical=True),
             _bytes(local=True, vertical=True, horizontal=True)]
    assert all(a > b for a, b in zip(steps, steps[1:])), steps


def test_memory_is_linear_in_target_length_and_parameters_constant():
    for rules in [{}, dict(local=True, vertical=True, horizontal=True)]:
        b = [_bytes(tgt=t, **rules) for t in (4, 6, 8, 10)]
        d = np.diff(b)
        assert d.min() > 0 and d.max() - d.min() <= 0.02 * d.max(), (rules, b)
    params = [sum(r["params"] for r in usage_table(m.loss, m.grads()))
              for m in (seq2seq(3, t, **SMALL) for t in (4, 8, 16))]
    assert params[0] == params[1] == params[2]


def test_inference_keeps_nothing_from_earlier_timesteps():
    sizes = []
    for t in (4, 8, 16):
        m = seq2seq(3, t, **SMALL)
        sizes.append(plan_sharing(m.loss, m.order(m.loss), horizontal=True).total_bytes)
    assert sizes[0] == sizes[1] == sizes[2]
    m = seq2seq(3, 16, **SMALL)
    assert plan_sharing(m.loss, m.order(m.loss)).total_bytes > 3 * sizes[0]


def test_horizontal_sharing_pairs_replicas_only_when_backward_does_not_need_them():
    m, outs, order = _step(tgt=6)
    plan = plan_sharing(outs, order, horizontal=True)
    dec = [n for n in order if n.scope and n.scope.module == "decoder" and not n.scope.backward
           and n.scope.step is not None and n.op.computes]
    by_role: dict = {}
    for n in dec:
        by_role.setdefault(n.scope.role, []).append(n)
    tags = {n.op.name: len({plan.storage[x] for x in xs}) for xs in by_role.values()
            for n in xs[:1]}
    assert tags["embedding"] == 6        # the embedded word: Linear's backward needs its input
    assert tags["slice"] == 1            # a gate before its nonlinearity: dead once used


@pytest.mark.parametrize("case", list(vertical_sharing_cases()))
def test_each_condition_when_violated_prevents_vertical_sharing(case):
    c = vertical_sharing_cases()[case]
    outs = [c["loss"], *ml.gradients(c["loss"], c["params"])]
    order = ml.topo_order(outs)
    plan = plan_sharing(outs, order, vertical=True)
    ml.check_plan(plan)
    shared = plan.storage[c["first"]] == plan.storage[c["later"]]
    held = conditions(c["loss"], order, c["first"], c["later"])
    assert shared == (case == "all hold") == bool(held)
    broken = {"read later": 0, "backward needs it": 1, "sizes differ": 2}
    if case in broken:
        assert [not v for v in held] == [i == broken[case] for i in range(3)]


def test_usage_table_adds_up_to_the_unshared_plan():
    m, outs, order = _step()
    rows = usage_table(m.loss, outs[1:])
    computed = sum(r["outputs"] + r["grad_params"] + r["grad_inputs"] for r in rows)
    assert computed == sum(n.nbytes for n in order if n.op.computes)
    assert {r["module"] for r in rows if r["params"]} == {"encoder", "bridge", "decoder",
                                                          "generator"}
    by_op = {r["op"]: r for r in usage_table(m.loss, outs[1:], by="op")}
    assert by_op["accumulate"]["grad_params"] > 0 and by_op["matmul"]["outputs"] > 0


def test_the_model_learns_to_reverse_sequences():
    m = seq2seq(3, 3, hidden=64, batch=32, vocab=6)
    losses = train(m, steps=200, lr=2.0)
    assert np.mean(losses[:30]) > np.log(6) - 0.4
    assert np.mean(losses[-30:]) < 0.5 * np.mean(losses[:30])


def test_training_in_a_shared_plan_gives_the_same_losses():
    m = seq2seq(3, 3, **SMALL)
    outs = [m.loss, *m.grads()]
    plan = plan_sharing(outs, m.order(outs), local=True, vertical=True, horizontal=True)
    a, b = train(m, steps=5), train(m, steps=5, plan=plan)
    np.testing.assert_allclose(a, b, rtol=1e-5)


@pytest.mark.parametrize("kw, word", [(dict(src_len=0, tgt_len=3), "src_len"),
                                      (dict(src_len=2, tgt_len=0), "tgt_len"),
                                      (dict(src_len=2, tgt_len=2, vocab=1), "vocab"),
                                      (dict(src_len=2, tgt_len=2, batch=0), "batch"),
                                      (dict(src_len=2, tgt_len=2, task="sort"), "task")])
def test_bad_sizes_are_named(kw, word):
    with pytest.raises(ml.MemlabError, match=word):
        seq2seq(**kw)


def test_a_batch_of_the_wrong_size_is_named():
    m = seq2seq(2, 2, **SMALL)
    feed = m.feed(0)
    feed[m.src[1]] = np.zeros(SMALL["batch"] + 1, np.int32)
    with pytest.raises(ml.FeedError, match=r"src\[1\]"):
        ml.Executor(m.loss).run(feed)
    with pytest.raises(ml.MemlabError, match="steps"):
        train(m, steps=0)


def test_longest_fitting_agrees_with_trying_every_length():
    from memlab.models.opennmt import longest_fitting, step_bytes
    sizes = dict(SMALL, src_len=3)
    totals = [step_bytes(n, "+ vertical sharing", **sizes)["total"] for n in range(1, 13)]
    for budget in (totals[0], (totals[3] + totals[4]) // 2, totals[10]):
        want = max(n for n, b in enumerate(totals, start=1) if b <= budget)
        assert longest_fitting(budget, "+ vertical sharing", limit=12, **sizes) == want
    with pytest.raises(ml.BudgetError, match=str(totals[0])):
        longest_fitting(totals[0] - 1, "+ vertical sharing", **sizes)
    with pytest.raises(ml.MemlabError, match="unknown technique"):
        step_bytes(3, "magic")


def test_the_ladder_never_goes_up_and_no_plan_beats_the_lower_bound():
    from memlab.models.opennmt import LADDER, step_bytes
    rows = [step_bytes(12, name, src_len=3, **SMALL) for name, _, _ in LADDER]
    ladder = [r["total"] for r in rows[:6]]
    assert all(a >= b for a, b in zip(ladder, ladder[1:])) and ladder[0] > 3 * ladder[-1]
    assert all(r["total"] >= r["lower_bound"] for r in rows)
    assert rows[-1]["total"] <= rows[-2]["total"]


def test_a_vanilla_rnn_cell_keeps_less_for_the_backward_pass():
    sizes = dict(SMALL, src_len=3, tgt_len=6)
    plans = {}
    for cell in ("lstm", "rnn"):
        m = seq2seq(**sizes, cell=cell)
        outs = [m.loss, *m.grads()]
        plan = plan_sharing(outs, m.order(outs), local=True, vertical=True, horizontal=True)
        check_plan_runs(plan, m.feed(3), rtol=1e-5)
        plans[cell] = plan.total_bytes
    assert plans["rnn"] < plans["lstm"]
    rnn = seq2seq(2, 2, cell="rnn", **SMALL)
    assert "bridge.Wc" not in rnn.groups and rnn.groups["encoder.Wx"][0].shape == (8, 8)
    with pytest.raises(ml.MemlabError, match="cell"):
        seq2seq(2, 2, cell="gru")


def test_the_rnn_learns_too():
    losses = train(seq2seq(3, 3, hidden=32, batch=16, vocab=6, cell="rnn"), steps=300, lr=0.5)
    assert np.mean(losses[-20:]) < 0.6 * np.mean(losses[:20])


def test_constant_plus_constant_is_planned_like_any_value():
    with ml.scope("net", 0):
        y = ml.exp(ml.add(ml.constant(np.ones(4, np.float32)), 2.0))
    for rules in ({"local": True, "vertical": True}, {"local": True, "horizontal": True}):
        check_plan_runs(plan_sharing(y, **rules), {})

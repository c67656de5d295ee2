"""The sentences of lessons 05, 06, 09 and 15 that read a printed number, checked on the numbers
(small sizes where the lesson's own would be slow; the lesson's sizes where they are quick)."""
import math

import pytest

import memlab as ml
from memlab import checkpoint as ck
from memlab import models
from memlab.checkpoint import parallel as par
from memlab.memory.fragmentation import oversized
from memlab.models import activations as act, conv_workspace as cw, gpt, shape_only


@pytest.fixture(scope="module")
def p29():
    return ml.models.slide29_onnx_table(batch=64)


def test_lesson05_p29_naive_gap_is_the_activations(p29):
    """AlexNet and VGG: the slide's naive bar is nearer ours with activations in place than ours."""
    acts = {"relu", "relu_grad", "dropout", "dropout_grad"}
    for r in p29:
        assert r["naive"] > r["inplace"] > r["both"] and r["both"] < 1.01 * r["co-share"]
        if r["model"] == "googlenet" or r["mode"] != "training":
            continue
        m = ml.models.from_onnx(r["network"], batch=64)
        outs = ml.models.training_outputs(m)
        a = ml.plan_memory(outs, inplace=lambda n: n.op.name in acts, share=False).total_bytes / 1e9
        s = r["slide"]
        assert abs(a - s["naive"]) < abs(r["naive"] - s["naive"])
        ratio, slide = r["both"] / a, s["both"] / s["naive"]
        assert abs(ratio - slide) < abs(r["both"] / r["naive"] - slide)


def test_lesson05_panel_b_crosses_12_gb_between_200_and_400_layers():
    rows = models.resnet_curve((200, 400), batch=32, addto="all")
    tot = cw.runtime_totals(rows, lambda d: shape_only.resnet(d, 32), cw.mxnet_gemm())
    assert tot[0]["sharing total"] < 12 < tot[1]["sharing total"]
    assert tot[0]["workspace"] == tot[1]["workspace"] > 0


def test_lesson06_match_range_fragmentation():
    step = models.training_outputs(models.mlp(depth=36, batch=256, n_in=16, hidden=16, n_out=4))
    sq = ck.recompute_graph(step, ck.sqrt_checkpoints(step))
    best, exact = ml.plan_memory(step).total_bytes, ml.plan_memory(step, match="exact").total_bytes
    assert abs(best - ml.plan_offsets(step).total_bytes) < 0.01 * best < exact - best
    best, exact = ml.plan_memory(sq).total_bytes, ml.plan_memory(sq, match="exact").total_bytes
    offsets = ml.plan_offsets(sq)
    assert best > exact > offsets.total_bytes
    assert offsets.total_bytes - ml.live_bytes_lower_bound(offsets) < 0.01 * offsets.total_bytes
    assert (best - offsets.total_bytes) > 0.5 * (ml.plan_memory(step).total_bytes - offsets.total_bytes)
    assert any((h.nbytes, h.tag_bytes) == (1024, 16384) for h in oversized(ml.plan_memory(sq)))


def test_lesson06_tradeoff_least_near_sqrt_n_and_k2_saves_nothing():
    o = models.training_outputs(models.mlp(depth=64, batch=256, n_in=16, hidden=16, n_out=4))
    rows = models.every_k_curve(o, (1, 2, 4, 8, 11, 16, 22, 32, 64, 128))
    fm = {r["K"]: r["feature maps"] for r in rows}
    assert fm[1] == fm[2]
    least = min(fm, key=fm.get)
    assert math.sqrt(rows[0]["n"]) / 2 <= least <= 2 * math.sqrt(rows[0]["n"])
    assert fm[least] < fm[128] and fm[least] < fm[4]


def test_lesson06_least_memonger_budget_is_its_least_plan():
    """The least budget memonger can meet, found by brute force over the kept sets it returns
    for every budget between its least plan and store all, is the planned bytes of its own
    choice; a budget one byte below raises, and a larger budget never recomputes more."""
    o = models.training_outputs(models.mlp(depth=8, batch=16, n_in=8, hidden=8, n_out=4))
    planned = lambda keep: ml.plan_offsets(ck.recompute_graph(o, keep)).total_bytes  # noqa: E731
    least = planned(ck.memonger(o))
    with pytest.raises(ml.BudgetError):
        ck.memonger(o, budget=least - 1)
    store = ml.plan_offsets(o).total_bytes
    recs = []
    for budget in range(least, store + 1, max(1, (store - least) // 16)):
        keep = ck.memonger(o, budget=budget)
        assert planned(keep) <= budget
        recs.append(len(ck.recomputed_nodes(ck.recompute_graph(o, keep))))
    assert recs == sorted(recs, reverse=True) and recs[0] > 0


def test_lesson06_drop_bn_relu_between_sharing_and_sublinear():
    rows = models.resnet_curve((100, 200), batch=4, sublinear="memonger", addto="all",
                               drop_cheap=True)
    for r in rows:
        assert r["sharing"] > r["drop cheap"] > r["sublinear"]
    growth = {k: rows[1][k] / rows[0][k] for k in ("sharing", "drop cheap", "sublinear")}
    assert growth["drop cheap"] > growth["sublinear"]


def test_lesson06_every_2_recomputes_one_op_and_keeps_the_peak():
    t = models.training_outputs(models.mlp(depth=4, batch=32, n_in=4, hidden=4, n_out=3))
    new = ck.recompute_graph(t, ck.every_k(t, 2))
    assert len(ck.recomputed_nodes(new)) == 1
    peak = lambda o: ml.live_bytes_lower_bound(ml.plan_offsets(o))  # noqa: E731
    assert peak(new) == peak(t)


def test_lesson09_state_outweighs_activations_and_zero1_nearly_halves():
    m = models.vgg(batch=1)
    p, a = models.layer_sizes(m)
    vgg = par.from_sizes(p, a, models.layer_inputs(m))
    assert 16 * sum(p) > sum(a) * 8
    plain, z1 = (par.data_parallel_memory(vgg, 8, 64, s) for s in ("plain", "zero-1"))
    assert 0.5 * plain < z1 < 0.6 * plain
    fits = {(S, M): max(par.pipeline_memory(vgg, S, M, 64, remat=True)) <= 2e9
            for S in range(1, 17) for M in (1, 2, 4, 8, 16, 32, 64)}
    assert not fits[4, 64] and fits[8, 64]                    # the Try-it has an answer


def test_lesson15_mask_modes_and_logits():
    for q in (256, 2048):
        g = gpt.gpt2("small", seq=q)
        seed = act.recompute_policies(g)
        replay = act.recompute_policies(g, ("selective", "full"), mask="replay")
        assert replay["selective"]["overhead"] == seed["selective"]["overhead"]
        assert replay["full"]["overhead"] > seed["full"]["overhead"]
        layer = act.formula_total(q, 1, g.hidden, g.heads)
        assert (q * 50257 * 2 > layer) == (q < 2048)
    assert seed["full"]["peak"] < seed["selective"]["peak"] < seed["none"]["peak"]

"""Model zoo and the lecture's comparisons (p.28-29, p.35-36)."""
import numpy as np
import pytest

import memlab as ml
from memlab.memory.checkplan import check_plan
from memlab.models import (compare_strategies, lstm, lstm_curve, mlp2, resnet, resnet_curve,
                           slide29_table, training_outputs)
from memlab.models.shape_only import ShapeOnly, vgg
from memlab.memory.offsets import live_bytes_lower_bound, plan_offsets
from memlab.memory.planner import plan_memory


def test_mlp2_is_the_slide28_graph_and_runs():
    m = mlp2(batch=8, n_in=6, hidden=5, n_out=3)
    ops = [n.op.name for n in ml.topo_order(m["outputs"]) if n.op.computes]
    assert ops[:4] == ["matmul", "sigmoid", "matmul", "softmax_xent"]
    plan = plan_memory(m["outputs"])
    check_plan(plan)
    # fullc-forward -> sigmoid-forward in place, as on p.28
    assert any(x.op.name == "matmul" and y.op.name == "sigmoid" for x, y in plan.inplace_pairs)
    feed = m["make_feed"](0)
    got = ml.Executor(m["outputs"], plan=plan).run(feed)
    ref = ml.Executor(m["outputs"]).run(feed)
    assert all(np.allclose(a, b, atol=1e-6) for a, b in zip(got, ref))


def test_shape_only_nodes_plan_but_do_not_run():
    m = resnet(20, batch=2, image=32)
    outs = training_outputs(m)
    plan = plan_memory(outs, trace=False)
    check_plan(plan)
    check_plan(plan_offsets(outs))
    assert any(isinstance(n.op, ShapeOnly) for n in plan.order)
    with pytest.raises(ml.MemlabError, match="shape-only"):
        ml.Executor(outs).run({n: np.zeros(n.shape, n.dtype) for n in plan.order
                               if n.op is ml.PLACEHOLDER})


@pytest.mark.parametrize("layers", [11, 29, 1001])
def test_resnet_cifar_has_the_papers_layers_and_sizes(layers):
    """He et al. 2016 (CIFAR): 9 weighted layers per bottleneck unit in three stages, a stem
    conv and the classifier: ResNet-1001 has 1001 weighted layers on its main path; the
    stages run at 32, 16 and 8 pixels with 64, 128 and 256 channels."""
    m = ml.models.resnet_cifar(layers, batch=2)
    order = ml.topo_order(m["loss"])
    convs = [n for n in order if n.op.name == "conv2d"]
    shortcuts = [n for n in convs if n.inputs[1].shape[2:] == (1, 1)
                 and any(n.shape[1] == w for w in (64, 128, 256)) and
                 any(u.op.name == "add" and u.inputs[1] is n for u in order)]
    fcs = [n for n in order if n.op.name == "fc"]
    per = (layers - 2) // 9
    assert len(shortcuts) == 3 and len(convs) - len(shortcuts) + len(fcs) == 9 * per + 2 == layers
    adds = [n for n in order if n.op.name == "add"]
    assert [a.shape[1:] for a in (adds[0], adds[per], adds[2 * per])] == \
        [(64, 32, 32), (128, 16, 16), (256, 8, 8)]
    assert fcs[0].shape == (2, 10) and m["data"].shape == (2, 3, 32, 32)


def test_strategies_order_on_cnns():
    for m in (vgg(batch=2), resnet(50, batch=2)):
        for outs in ([m["loss"]], training_outputs(m)):
            c = compare_strategies(outs)
            assert c["both"] <= min(c["inplace"], c["co-share"]) <= max(c["inplace"], c["co-share"]) <= c["naive"]


def test_slide29_table_shape():
    rows = slide29_table(batch=8)
    assert {(r["model"], r["mode"]) for r in rows} == {(m, k) for m in ("alexnet", "googlenet", "vgg")
                                                      for k in ("forward", "training")}
    for r in rows:
        assert r["both"] < r["naive"]
        if r["mode"] == "forward":
            assert r["co-share"] < 0.5 * r["naive"]


def test_curves_are_linear_with_slide_ratios():
    rows = resnet_curve((100, 400), batch=32)
    for r in rows:
        assert 0.45 < r["inplace"] / r["none"] < 0.75
        assert 0.2 < r["sharing"] / r["none"] < 0.45
    assert 3 < rows[1]["none"] / rows[0]["none"] < 4.5
    rows = lstm_curve((10, 40), batch=64, hidden=64)
    for r in rows:
        assert r["sharing"] < 0.3 * r["none"] and r["inplace"] < 0.7 * r["none"]
    assert 3.5 < rows[1]["none"] / rows[0]["none"] < 4.5


def test_lstm_training_plan_valid():
    m = lstm(6, batch=4, hidden=8)
    outs = training_outputs(m, wrt="data")
    for plan in (plan_memory(outs), plan_offsets(outs)):
        check_plan(plan)
        assert plan.total_bytes >= live_bytes_lower_bound(plan)

"""memory.fragmentation: the tag planner's match range, seen on values in oversized tags."""
import pytest

import memlab as ml
from memlab import checkpoint as ck
from memlab import models
from memlab.errors import PlanError
from memlab.memory.fragmentation import oversized


def test_a_small_output_takes_a_freed_big_tag_within_the_match_range():
    x = ml.placeholder("x", (16, 16))                 # 1 KB values
    big = ml.exp(x)
    small = ml.sum(ml.exp(big), axis=1)               # 64 B (16 times smaller), made when
    #                                                   big's tag is free
    plan = ml.plan_memory([small], inplace=False)
    hits = oversized(plan)
    assert [h.node for h in hits] == [small] and hits[0].output
    assert hits[0].tag_bytes == 16 * 16 * 4 and hits[0].nbytes == 16 * 4
    assert oversized(ml.plan_memory([small], inplace=False, match="exact")) == []


def test_checkpointed_mlp_weight_gradients_sit_in_activation_tags():
    step = models.training_outputs(models.mlp(depth=36, batch=256, n_in=16, hidden=16, n_out=4))
    rewritten = ck.recompute_graph(step, ck.sqrt_checkpoints(step))
    plan = ml.plan_memory(rewritten)
    hits = oversized(plan)
    grads = set(rewritten[1:])
    held = [h for h in hits if h.output]
    assert held and all(h.node in grads for h in held)
    assert any((h.nbytes, h.tag_bytes) == (1024, 16384) for h in held)   # 1 KB in 16 KB
    # without the range (exact sizes only) the gradients open tags of their own size: smaller
    exact = ml.plan_memory(rewritten, match="exact")
    assert not [h for h in oversized(exact) if h.output]
    assert exact.total_bytes < plan.total_bytes


def test_bad_input():
    with pytest.raises(PlanError, match="tag plan"):
        oversized("plan")
    with pytest.raises(PlanError, match="factor"):
        oversized(ml.plan_memory([ml.exp(ml.placeholder("x", (4,)))]), factor=1)

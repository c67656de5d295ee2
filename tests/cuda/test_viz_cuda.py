"""Lesson 14's pictures: the tile stepper steps through the kernel's own schedule, headless."""
import memlab.cuda as mc
from memlab import viz
from memlab.viz import cuda as vc


def test_tile_stepper_moves_through_every_tile():
    n, k, m, tile = 5, 6, 3, 4
    schedule = mc.tile_schedule(n, k, m, tile)
    # blocks cover C (2 x 1 tiles), each walks the inner dimension in 2 steps
    assert len(schedule) == 2 * 1 * 2
    assert {s["block"] for s in schedule} == {(0, 0), (1, 0)}
    covered = sorted((r, c) for s in schedule if s["t"] == 0
                     for r in range(*s["rows"]) for c in range(*s["cols"]))
    assert covered == [(r, c) for r in range(n) for c in range(m)]
    stepper = viz.Stepper(vc.tile_frames(n, k, m, tile, schedule))
    seen = set()
    for i in range(len(schedule)):
        stepper.slider.value = i + 1
        html = stepper.shown_html()
        assert stepper.caption in html.replace("&#x27;", "'") or stepper.caption[:20] in html
        seen.add(html)
    assert len(seen) == len(schedule)
    assert "C[4:5, 0:3] is written" in stepper.caption


def test_thread_map_and_allocation_bars_draw():
    assert "<svg" in viz.to_svg(vc.thread_map(20, 8))
    assert "<svg" in viz.to_svg(vc.allocation_bars([("arena", 1, 2304), ("per tensor", 16, 3212)]))


def test_reduction_tree_draws_each_round():
    rounds = mc.tree_rounds([1.0, 2.0, 3.0, 4.0, 5.0], threads=4)
    svg = viz.to_svg(vc.reduction_tree(rounds))
    assert "<svg" in svg and "step 1" in svg and "15.00" in svg

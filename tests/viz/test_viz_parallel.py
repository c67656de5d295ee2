"""The pipeline pictures of lesson 09: one bar per task, placed where the timeline puts it."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from memlab.checkpoint import parallel as par
from memlab.viz import parallel as vp


@pytest.mark.parametrize("schedule", par.SCHEDULES)
def test_pipeline_timeline_draws_every_task_at_its_time(schedule):
    fig = vp.pipeline_timeline(4, 6, schedule)
    bars = [p for p in fig.axes[0].patches]
    assert len(bars) == 2 * 4 * 6
    drawn = sorted((round(b.get_x(), 6), round(b.get_width(), 6)) for b in bars)
    timed = sorted((round(t[3], 6), round(t[4] - t[3], 6))
                   for t in par.pipeline_timeline(4, 6, schedule))
    assert drawn == timed
    title = fig.axes[0].get_title()
    assert "bubble 33%" in title and f"at most {4 if schedule == '1f1b' else 6} in flight" in title
    plt.close(fig)


def test_schedule_bars_one_bar_per_device_and_schedule():
    values = {"gpipe": [4e9, 3e9], "1f1b": [2e9, 1e9]}
    fig = vp.schedule_bars(values, "t")
    heights = sorted(b.get_height() for b in fig.axes[0].patches)
    assert heights == [1, 2, 3, 4]
    plt.close(fig)

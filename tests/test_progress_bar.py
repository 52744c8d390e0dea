"""The run's progress bar at 80 and 120 columns: done of all, success so far, elapsed time,
rate and time left stay whole on the line whatever the step in flight says, and the bar left
on screen after the run carries no log fragment."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from sopgym.cli import progress
from sopgym.orchestration.steps import STEP_PREFIX

_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
STEP = STEP_PREFIX + "patient_intake-000 step 3: model call scripted:noisy 3179 in / 36 out"


@pytest.mark.parametrize("width", [80, 120])
def test_the_bar_keeps_its_figures_whole_and_ends_without_a_step(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.StringIO()
    screen = Console(file=out, width=width, force_terminal=True, color_system=None)
    monkeypatch.setattr(progress, "console", screen)
    bar = progress.progress_bar()
    bar.live.console = screen
    with bar:
        handle = bar.add_task("tasks", total=24, tsr="", step="")
        for done in range(1, 4):
            step = progress.step_text(STEP, width)
            bar.update(handle, advance=1, tsr=f"success {done}/{done}", step=step)
            bar.refresh()
        bar.update(handle, step="")  # as execute_with_progress leaves it
    frames = [f for f in _CONTROL.sub("", out.getvalue()).replace("\r", "\n").split("\n")
              if f.strip()]  # fmt: skip
    for frame in frames:
        assert len(frame.rstrip()) <= width, frame
        figures = r"\d+/24 +(success \d/\d)? +\d:\d\d:\d\d ([\d.]+|-)/min left (\d|-)"
        assert re.search(figures, frame), frame
    assert "step 3" not in frames[-1]
    if width == 120:
        assert any("step 3: model call" in frame for frame in frames)

"""The step lines ``sopgym run --verbose`` shows while workers log them
(:class:`~sopgym.orchestration.steps.StepFollower`)."""

from __future__ import annotations

from pathlib import Path

from sopgym.orchestration.steps import StepFollower


def test_the_steps_of_a_run_shorter_than_one_look_are_all_shown(tmp_path: Path) -> None:
    """A scripted run can finish inside the follower's first half second: the steps logged
    since its last look are shown when it stops, none twice, a half-written line not at all."""
    log = tmp_path / "worker-0.log"
    log.write_text("step task=t-1 n=1 purpose=act latency=0.01s\nworker ready\n")
    shown: list[str] = []
    with StepFollower(tmp_path, shown.append), log.open("a") as out:
        out.write("step task=t-1 n=2 purpose=act latency=0.01s\nstep task=t-2 n=1 pur")
    assert shown == [
        "step task=t-1 n=1 purpose=act latency=0.01s",
        "step task=t-1 n=2 purpose=act latency=0.01s",
    ]

"""A running run's progress for its live page: episodes recorded of the planned total, and
an estimate of the time left at the pace so far."""

from __future__ import annotations

import time
from datetime import datetime

from sopgym.orchestration.runs import RunReader
from sopgym.types import JSON


def planned(run: RunReader) -> int | None:
    """The episodes the run plans (tasks x trials), as its config recorded them; None when it
    did not (older runs)."""
    config = run.config()
    tasks = config.get("task_count")
    return int(tasks) * int(config.get("trials") or 1) if isinstance(tasks, int) else None


def eta_seconds(
    run: RunReader, recorded: int, total: int | None, now: float | None = None
) -> float | None:
    """Seconds left at the pace so far (time since the run was created per recorded
    episode); None before the first episode or without a planned total."""
    if not recorded or total is None:
        return None
    try:
        started = datetime.fromisoformat(run.created().replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
    elapsed = max(0.0, (time.time() if now is None else now) - started)
    return round(elapsed / recorded * max(0, total - recorded), 1)


def progress(run: RunReader, recorded: int) -> JSON:
    total = planned(run)
    return {"planned": total, "eta_s": eta_seconds(run, recorded, total)}


def progress_text(recorded: int, figures: JSON) -> str:
    """``12 of 96 episodes recorded, about 1 min 10 s left``."""
    total, eta = figures["planned"], figures["eta_s"]
    text = f"{recorded} of {total} episodes recorded" if total else f"{recorded} episodes recorded"
    if eta is not None:
        minutes, seconds = divmod(int(eta), 60)
        text += (
            f", about {minutes} min {seconds} s left" if minutes else f", about {seconds} s left"
        )
    return text

"""An agent worker's per-step log line: every model turn is one line on the worker's stderr
(its log), which :class:`sopgym.orchestration.steps.StepFollower` follows in the driving
process. The writer lives here, below agents and orchestration, so the agent's graph does not
import orchestration."""

from __future__ import annotations

import sys

from sopgym.types import JSON

STEP_PREFIX = "step "


def step_line(task_id: str, step: int, usage: JSON) -> str:
    """One model turn as a log line, from its usage record (:func:`sopgym.agents.llm`)."""
    error = f" error={usage['error']!r}" if usage.get("error") else ""
    return (
        f"{STEP_PREFIX}task={task_id} n={step} purpose={usage.get('purpose')} "
        f"latency={usage.get('latency_s', 0):.2f}s in={usage.get('input_tokens', 0)} "
        f"out={usage.get('output_tokens', 0)}{error}"
    )


def log_step(task_id: str, step: int, usage: JSON) -> None:
    """Write the step's line to stderr (a worker's stderr is its log)."""
    print(step_line(task_id, step, usage), file=sys.stderr, flush=True)

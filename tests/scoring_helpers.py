"""A minimal in-memory domain pack and task for scoring tests (no data, no processes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sopgym.core.domain import DomainPack, GeneratedData
from sopgym.core.tasks import Solution, Task
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation.scorers import Scorer


def pack(
    output_schema: dict[str, Any],
    dependencies: dict[str, list[str]] | None = None,
    scorers: list[Scorer] | None = None,
) -> DomainPack:
    return DomainPack(
        name="d",
        title="scoring test",
        folder=Path("."),
        tools=[],
        generate=lambda seed, files: GeneratedData({}, []),
        solve=lambda task, run: Solution({}),
        input_schema={"type": "object", "properties": {}},
        output_schema=output_schema,
        dependencies=dependencies or {},
        scorers=scorers,
    )


def task(kind: str = "tool_use") -> Task:
    return Task("t", "d", {}, kind=kind)


def trajectory(
    calls: list[CallRecord] | None = None,
    outputs: dict[str, Any] | None = None,
    finished: bool = True,
    final_state: Any = None,
) -> Trajectory:
    return Trajectory("t", "ep", calls or [], finished, outputs, final_state=final_state)

"""An episode as the scorer sees it, whichever source it was rebuilt from.

The gateway's own records and the evaluator's OpenTelemetry spans both produce this shape,
so the two independent paths are scored by the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sopgym.types import JSON


@dataclass
class CallRecord:
    name: str
    arguments: Any
    status: int
    error_code: str | None = None
    error_field: str | None = None
    result: Any = None
    duration_ms: float = 0.0
    in_catalog: bool = True
    distractor: bool = False
    warnings: list[str] = field(default_factory=list)  # e.g. a schema disagreement let through

    @property
    def ok(self) -> bool:
        return self.error_code is None

    def to_json(self) -> JSON:
        record = {
            "name": self.name,
            "arguments": self.arguments,
            "status": self.status,
            "error_code": self.error_code,
            "error_field": self.error_field,
            "result": self.result,
            "duration_ms": round(self.duration_ms, 3),
            "in_catalog": self.in_catalog,
            "distractor": self.distractor,
        }
        if self.warnings:
            record["warnings"] = self.warnings
        return record

    @classmethod
    def from_json(cls, data: JSON) -> CallRecord:
        return cls(
            name=data["name"],
            arguments=data.get("arguments"),
            status=data.get("status", 200),
            error_code=data.get("error_code"),
            error_field=data.get("error_field"),
            result=data.get("result"),
            duration_ms=data.get("duration_ms", 0.0),
            in_catalog=data.get("in_catalog", True),
            distractor=data.get("distractor", False),
            warnings=data.get("warnings", []),
        )


@dataclass
class Trajectory:
    task_id: str
    episode_id: str
    calls: list[CallRecord] = field(default_factory=list)
    finished: bool = False
    outputs: JSON | None = None
    catalog: list[str] = field(default_factory=list)
    # A conversation's turns in order: {"role": "agent" | "user", "content": str}
    messages: list[JSON] = field(default_factory=list)
    # Stateful domains: the episode's state as its tool service held it at finish
    final_state: JSON | None = None
    # Why the own domain's service could not hand the final state over (the state is unknown)
    state_error: str | None = None
    # False for an episode played elsewhere and scored from its outputs (``sopgym score``): no
    # service held its state, so a state scorer cannot judge it (never a pass, never a failure)
    state_observed: bool = True
    # The final reply's text, where the answer was read from text (``sopgym score``'s text
    # answers): a scorer that reads replies by another rule than ours reads it from here
    # (SOP-Maze's official grade); None when the answer came as an object
    reply: str | None = None

    def to_json(self) -> JSON:
        return {
            "task_id": self.task_id,
            "episode_id": self.episode_id,
            "calls": [c.to_json() for c in self.calls],
            "finished": self.finished,
            "outputs": self.outputs,
            "catalog": self.catalog,
            "messages": self.messages,
            "final_state": self.final_state,
            "state_error": self.state_error,
            **({} if self.state_observed else {"state_observed": False}),
            **({} if self.reply is None else {"reply": self.reply}),
        }

    @classmethod
    def from_json(cls, data: JSON) -> Trajectory:
        return cls(
            task_id=data["task_id"],
            episode_id=data["episode_id"],
            calls=[CallRecord.from_json(c) for c in data.get("calls", [])],
            finished=data.get("finished", False),
            outputs=data.get("outputs"),
            catalog=data.get("catalog", []),
            messages=data.get("messages", []),
            final_state=data.get("final_state"),
            state_error=data.get("state_error"),
            state_observed=data.get("state_observed", True),
            reply=data.get("reply"),
        )

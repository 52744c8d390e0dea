"""The task model: what an agent is given, and the gold derived for it by the reference policy.

One model carries every task family; ``kind`` says which (:data:`TASK_KINDS`):

- ``tool_use``: an agent works the SOP through tools and answers (SOP-Bench, TELLER-Bench);
- ``dialogue``: the same, in a conversation with a simulated user (TOD-ProcBench);
- ``json_answer``: no tools; one JSON answer against the output schema (SOP-Maze);
- ``graph``: one-shot, non-agentic: one structured model call (dependency-graph reconstruction).

``conversation`` holds turns given with the task (a dialogue so far); ``Gold.final_state``
holds the expected state of stateful domains.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Final

from sopgym.types import JSON

TASK_KINDS: Final = ("tool_use", "dialogue", "json_answer", "graph")
# kinds solved by one model call instead of an agent loop (sopgym.agents.oneshot)
ONE_SHOT_KINDS: Final = frozenset({"graph"})


@dataclass
class Task:
    id: str
    domain: str
    inputs: JSON
    kind: str = "tool_use"
    conversation: list[JSON] = field(default_factory=list)
    # Inputs that replace ``inputs`` under a named SOP variant (TELLER's stage 2 gives the
    # customer's record with the abstract SOP: banking's ``abstract_user_data``). Kept out of
    # the task line when empty, and never handed to an agent (``inputs_for``, ``Job``).
    input_variants: dict[str, JSON] = field(default_factory=dict)

    def to_json(self) -> JSON:
        data = asdict(self)
        if not self.input_variants:
            del data["input_variants"]
        return data

    def inputs_for(self, sop_variant: str) -> JSON:
        """The inputs an agent is given under ``sop_variant``."""
        return self.input_variants.get(sop_variant, self.inputs)

    def as_given(self, sop_variant: str) -> JSON:
        """The task as an agent worker receives it: the variant's inputs, no other variant's."""
        data = self.to_json()
        data.pop("input_variants", None)
        return {**data, "inputs": self.inputs_for(sop_variant)}

    @classmethod
    def from_json(cls, data: JSON) -> Task:
        return cls(
            id=data["id"],
            domain=data["domain"],
            inputs=data.get("inputs", {}),
            kind=data.get("kind", "tool_use"),
            conversation=data.get("conversation", []),
            input_variants=data.get("input_variants", {}),
        )


@dataclass
class ToolCall:
    name: str
    arguments: JSON

    def to_json(self) -> JSON:
        return {"name": self.name, "arguments": self.arguments}


@dataclass
class Gold:
    """The reference policy's answer for one task: never hand-written."""

    task_id: str
    calls: list[ToolCall]
    decisions: JSON
    outputs: JSON
    final_state: JSON | None = None
    # False when no reference policy made the calls (imported benchmarks): ``calls`` is empty
    # because nobody knows them, not because none are needed.
    reference_calls: bool = True
    # dialogue tasks: the user's private profile (for the user simulator only, never shown to
    # the agent) and the reference policy's conversation, agent turns with ``at_call``
    user: JSON | None = None
    messages: list[JSON] = field(default_factory=list)

    @cached_property
    def memo(self) -> dict[str, Any]:
        """What scorers derive from this gold once and reuse for every episode of its task
        (an evaluation scores thousands against one gold), keyed by the scorer's name. Not a
        field: never compared, copied by ``replace`` or serialised; a gold is never mutated
        after it is built, so nothing here goes stale."""
        return {}

    def to_json(self) -> JSON:
        return {
            "task_id": self.task_id,
            "calls": [c.to_json() for c in self.calls],
            "decisions": self.decisions,
            "outputs": self.outputs,
            "final_state": self.final_state,
            "reference_calls": self.reference_calls,
            "user": self.user,
            "messages": self.messages,
        }

    @classmethod
    def from_json(cls, data: JSON) -> Gold:
        return cls(
            task_id=data["task_id"],
            calls=[ToolCall(c["name"], c["arguments"]) for c in data["calls"]],
            decisions=data.get("decisions", {}),
            outputs=data["outputs"],
            final_state=data.get("final_state"),
            reference_calls=data.get("reference_calls", True),
            user=data.get("user"),
            messages=data.get("messages", []),
        )


@dataclass
class Solution:
    """What a reference policy returns; the calls it made are recorded separately."""

    outputs: JSON
    decisions: JSON = field(default_factory=dict)

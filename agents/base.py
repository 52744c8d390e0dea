"""What every agent is: something that drives one open episode to a final answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from sopgym.client import Episode
from sopgym.core.tasks import Task
from sopgym.types import JSON


@dataclass
class AgentContext:
    """Per-task facts an agent may use beyond the episode itself."""

    replay: JSON | None = None  # the gold the oracle replays (its jobs only: agents never see it)
    deadline: float | None = None  # time.monotonic() by which the task must end
    usage: list[JSON] = field(default_factory=list)  # per-LLM-call records, filled by agents
    seed: int | None = None  # the trial's seed, sent with every model call that takes one
    episode_id: str | None = None  # once opened: names the conversation on chat spans
    answered_without_tools: bool = False  # the model answered before any tool call
    copied_example: bool = False  # a final answer repeated the prompt's example answer
    untagged_answer: bool = False  # the final answer came as the bare object, without its tags
    tool_choice_refused: bool = False  # the endpoint refused a forced tool call (tool_choice)


class Agent(Protocol):
    name: str

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> JSON:
        """Work the task through ``episode``'s tools and return the final outputs."""
        ...

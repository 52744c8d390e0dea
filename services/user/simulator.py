"""The simulated users of dialogue domains, independent of HTTP.

Each dialogue task's private user profile lives in the domain's materialised gold
(``Gold.user``), which only this service (and the oracle) reads; the opening turns are the
task's public ``conversation``. The service is stateless: every request carries the
conversation exchanged so far, and the user's reply is a pure function of it (rule-based: the
pack's :data:`~sopgym.core.dialogue.UserBehaviour` with an RNG seeded from the seed, the task
and the turn), so any replica answers any request the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sopgym.core import dataset
from sopgym.core.dialogue import AGENT, MAX_MESSAGE_CHARS, USER, UserBehaviour, UserTurn, user_turn
from sopgym.core.errors import ToolError
from sopgym.core.exceptions import UsageError
from sopgym.core.registry import load_domain
from sopgym.types import JSON


class UserModel(Protocol):
    """A user played by a language model (:mod:`.llm_user`) instead of the pack's rules."""

    def reply(self, profile: JSON, conversation: list[JSON]) -> UserTurn: ...


@dataclass(frozen=True)
class Persona:
    behaviour: UserBehaviour
    profile: JSON
    opening: list[JSON]
    seed: int


class NotADialogueDomain(UsageError, ValueError):
    """A domain given to the simulator has no simulated user."""


class UserSimulator:
    def __init__(
        self,
        domains: list[str],
        data_root: Path | None = None,
        seed: int | None = None,
        model: UserModel | None = None,
    ) -> None:
        self.domains = list(domains)
        self.model = model
        self.personas: dict[tuple[str, str], Persona] = {}
        for name in domains:
            pack = load_domain(name)
            if pack.user is None:
                raise NotADialogueDomain(f"domain {name!r} has no simulated user")
            tasks, gold = dataset.load_tasks(dataset.materialize(pack, data_root))
            for task in tasks:
                profile = gold[task.id].user
                if profile is not None:
                    chosen = pack.seed if seed is None else seed
                    persona = Persona(pack.user, profile, task.conversation, chosen)
                    self.personas[(name, task.id)] = persona

    def reply(self, request: Any) -> UserTurn:
        """The user's next turn for a request ``{"domain", "task_id", "messages"}`` whose
        messages (the turns exchanged in the episode) end with the agent's."""
        if not isinstance(request, dict):
            raise ToolError("invalid_request", "the body must be a JSON object")
        domain, task_id = str(request.get("domain")), str(request.get("task_id"))
        persona = self.personas.get((domain, task_id))
        if persona is None:
            raise ToolError(
                "not_found", f"no simulated user for task {task_id!r} of {domain!r}", "task_id"
            )
        messages = check_turns(request.get("messages"))
        conversation = [*persona.opening, *messages]
        if self.model is not None:
            return self.model.reply(persona.profile, conversation)
        return user_turn(
            persona.behaviour, persona.profile, persona.seed, task_id, conversation
        )


def check_turns(messages: Any) -> list[JSON]:
    """The exchanged turns, each ``{"role": "agent" | "user", "content": str}``, the last
    the agent's."""
    if not isinstance(messages, list) or not messages:
        raise ToolError("invalid_value", "messages must be a non-empty array", "messages")
    turns = []
    for turn in messages:
        if not (
            isinstance(turn, dict)
            and turn.get("role") in (AGENT, USER)
            and isinstance(turn.get("content"), str)
            and len(turn["content"]) <= MAX_MESSAGE_CHARS
        ):
            raise ToolError(
                "invalid_value",
                'each message must be {"role": "agent" | "user", "content": <string>}',
                "messages",
            )
        turns.append({"role": turn["role"], "content": turn["content"]})
    if turns[-1]["role"] != AGENT:
        raise ToolError("invalid_value", "the last message must be the agent's", "messages")
    return turns

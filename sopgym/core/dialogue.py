"""Conversations with a simulated user: the user's turn as a pure function of the conversation.

A dialogue pack supplies :data:`UserBehaviour`: given the task's private user profile (its
goal and the facts only the user knows), the conversation so far and a seeded RNG, it returns
the user's next turn. The RNG is seeded from (seed, task id, conversation length), so a reply
depends only on what was said before it: the reference policy (in-process, at generation) and
the user simulator service (over HTTP, during a run) hear the same user for the same seed,
whatever the order or concurrency of episodes.

A conversation is a list of turns ``{"role": "agent" | "user", "content": str}``; the task's
own ``conversation`` (the user's opening turns, which the agent is given) comes first.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from sopgym.core.exceptions import DataError
from sopgym.types import JSON

DIALOGUE: Final = "dialogue"  # the task kind (sopgym.core.tasks.TASK_KINDS) with a user
AGENT: Final = "agent"
USER: Final = "user"
MAX_MESSAGE_CHARS: Final = 8192  # one agent message; longer ones are refused, not cut


@dataclass(frozen=True)
class UserTurn:
    content: str
    done: bool = False  # the user has nothing more to say: the agent should finish


UserBehaviour = Callable[[JSON, list[JSON], random.Random], UserTurn]


def user_rng(seed: int, task_id: str, conversation: list[JSON]) -> random.Random:
    return random.Random(f"{seed}|{task_id}|{len(conversation)}")


def user_turn(
    behaviour: UserBehaviour, profile: JSON, seed: int, task_id: str, conversation: list[JSON]
) -> UserTurn:
    """The user's reply to ``conversation`` (whose last turn is the agent's)."""
    turn = behaviour(profile, conversation, user_rng(seed, task_id, conversation))
    if not isinstance(turn, UserTurn) or not isinstance(turn.content, str):
        raise TypeError(f"a user behaviour must return a UserTurn, got {turn!r}")
    return turn


class ConversationOver(DataError, RuntimeError):
    """The reference policy spoke after the user had ended the conversation."""


class SimulatedUser:
    """The rule-based user in-process, for the reference policy: every exchange is recorded,
    agent turns with ``at_call`` (how many tool calls came before it) so replays can interleave
    messages and calls as the policy did."""

    def __init__(
        self, behaviour: UserBehaviour, profile: JSON, seed: int, task_id: str, opening: list[JSON]
    ) -> None:
        self.behaviour, self.profile, self.seed, self.task_id = behaviour, profile, seed, task_id
        self.opening = list(opening)
        self.messages: list[JSON] = []
        self.done = False

    def ask(self, text: str, at_call: int) -> str:
        if self.done:
            raise ConversationOver("the user already ended the conversation")
        agent = {"role": AGENT, "content": text}
        conversation = [*self.opening, *self.messages, agent]
        turn = user_turn(self.behaviour, self.profile, self.seed, self.task_id, conversation)
        self.messages += [{**agent, "at_call": at_call}, {"role": USER, "content": turn.content}]
        self.done = turn.done
        return turn.content


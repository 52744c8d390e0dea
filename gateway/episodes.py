"""Episodes: one agent's attempt at one task, with its catalog, token and call record.

An episode is registered at each tool service it reaches (its own domain's at open, another
domain's at its first call of one of that domain's tools) and closed at all of them when it
finishes; its own domain's final state is part of its record.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.gateway.catalog import ToolRef
from sopgym.types import JSON


@dataclass
class Episode:
    id: str
    token: str
    task_id: str
    domain: str
    tools: list[str]  # the names shown to the agent, in catalog order
    distractors: set[str]
    opened_at: float = field(default_factory=time.time)
    calls: list[CallRecord] = field(default_factory=list)
    outputs: JSON | None = None
    finished_at: float | None = None
    meta: JSON = field(default_factory=dict)
    # dialogue episodes: the turns exchanged with the simulated user, and whether it said done
    messages: list[JSON] = field(default_factory=list)
    conversation_over: bool = False
    # one exchange at a time: each reply is computed from the whole conversation before it
    talking: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    routes: dict[str, ToolRef] = field(default_factory=dict)  # shown name -> (domain, tool)
    services: set[str] = field(default_factory=set)  # domains the episode is registered at
    final_state: JSON | None = None  # the own domain's, as its service answered at finish
    close_errors: dict[str, str] = field(default_factory=dict)  # domain -> why its close failed

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    def trajectory(self) -> Trajectory:
        return Trajectory(
            task_id=self.task_id,
            episode_id=self.id,
            calls=list(self.calls),
            finished=self.finished,
            outputs=self.outputs,
            catalog=list(self.tools),
            messages=list(self.messages),
            final_state=self.final_state,
            state_error=self.close_errors.get(self.domain),
        )

    def record(self) -> JSON:
        return {
            **self.trajectory().to_json(),
            "domain": self.domain,
            "distractors": sorted(self.distractors),
            "opened_at": self.opened_at,
            "finished_at": self.finished_at,
            "meta": self.meta,
            "close_errors": self.close_errors,
        }


DEFAULT_KEEP_EPISODES = 100_000


class EpisodeStore:
    """Open episodes plus the most recent finished ones (oldest evicted past ``keep``)."""

    def __init__(self, keep: int = DEFAULT_KEEP_EPISODES) -> None:
        self._episodes: OrderedDict[str, Episode] = OrderedDict()
        self._keep = keep

    def open(
        self,
        task_id: str,
        domain: str,
        routes: dict[str, ToolRef],
        distractors: set[str],
        meta: JSON,
    ) -> Episode:
        episode = Episode(
            id=f"ep-{secrets.token_hex(8)}",
            token=secrets.token_urlsafe(24),
            task_id=task_id,
            domain=domain,
            tools=list(routes),
            distractors=distractors,
            meta=meta,
            routes=routes,
        )
        self._episodes[episode.id] = episode
        while len(self._episodes) > self._keep:
            self._episodes.popitem(last=False)
        return episode

    def get(self, episode_id: str) -> Episode | None:
        return self._episodes.get(episode_id)

    def discard(self, episode_id: str) -> None:
        """Forget an episode that never opened (its service refused to register it)."""
        self._episodes.pop(episode_id, None)

    def __len__(self) -> int:
        return len(self._episodes)

"""Episodes: one agent's attempt at one task, with its catalog, token and call record."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.types import JSON


@dataclass
class Episode:
    id: str
    token: str
    task_id: str
    domain: str
    tools: list[str]
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
        )

    def record(self) -> JSON:
        return {
            **self.trajectory().to_json(),
            "domain": self.domain,
            "distractors": sorted(self.distractors),
            "opened_at": self.opened_at,
            "finished_at": self.finished_at,
            "meta": self.meta,
        }


class EpisodeStore:
    """Open episodes plus the most recent finished ones (oldest evicted past ``keep``)."""

    def __init__(self, keep: int = 100_000) -> None:
        self._episodes: OrderedDict[str, Episode] = OrderedDict()
        self._keep = keep

    def open(
        self, task_id: str, domain: str, tools: list[str], distractors: set[str], meta: JSON
    ) -> Episode:
        episode = Episode(
            id=f"ep-{secrets.token_hex(8)}",
            token=secrets.token_urlsafe(24),
            task_id=task_id,
            domain=domain,
            tools=tools,
            distractors=distractors,
            meta=meta,
        )
        self._episodes[episode.id] = episode
        while len(self._episodes) > self._keep:
            self._episodes.popitem(last=False)
        return episode

    def get(self, episode_id: str) -> Episode | None:
        return self._episodes.get(episode_id)

    def __len__(self) -> int:
        return len(self._episodes)

"""Episodes: one agent's attempt at one task, with its catalog, token and call record.

An episode is registered at each tool service it reaches (its own domain's at open, another
domain's at its first call of one of that domain's tools) and closed at all of them when it
finishes; its own domain's final state is part of its record.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field

import orjson

from sopgym.core.jsonio import dumps
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
    # once finished and stored compactly (:meth:`compact`): its record as zlib'd JSON
    compacted: bytes | None = field(default=None, repr=False)

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    def trajectory(self) -> Trajectory:
        if self.compacted is not None:
            return Trajectory.from_json(self.record())
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
        if self.compacted is not None:
            record: JSON = orjson.loads(zlib.decompress(self.compacted))
            # a call (or message) in flight at the finish is recorded after it: kept live, added
            record["calls"] += [call.to_json() for call in self.calls]
            record["messages"] += self.messages
            return record
        return {
            **self.trajectory().to_json(),
            "domain": self.domain,
            "distractors": sorted(self.distractors),
            "opened_at": self.opened_at,
            "finished_at": self.finished_at,
            "meta": self.meta,
            "close_errors": self.close_errors,
        }

    def compact(self) -> int:
        """Keep the finished episode's record as compressed JSON and let go of its live
        objects (calls, catalog, routes, conversation, final state: 12-48 KB an episode with
        distractors); the bytes it now holds."""
        self.compacted = zlib.compress(dumps(self.record()), 1)
        self.calls, self.messages, self.tools, self.routes = [], [], [], {}
        self.distractors, self.outputs, self.final_state = set(), None, None
        return len(self.compacted)


DEFAULT_KEEP_EPISODES = 100_000
# What the finished episodes' compact records may hold together. With the Episode objects
# themselves (~1 KB each at the default count) this keeps the gateway well under the
# manifests' 1 GiB limit (docs/reliability.md, bench/bench_soak.py).
DEFAULT_KEEP_BYTES = 256 * 2**20


class EpisodeStore:
    """Open episodes plus the most recent finished ones, stored compactly: the oldest are
    evicted past ``keep`` episodes, and the oldest finished ones past ``keep_bytes`` of
    compact records."""

    def __init__(
        self, keep: int = DEFAULT_KEEP_EPISODES, keep_bytes: int = DEFAULT_KEEP_BYTES
    ) -> None:
        self._episodes: OrderedDict[str, Episode] = OrderedDict()
        self._keep, self._keep_bytes = keep, keep_bytes
        self._finished: OrderedDict[str, int] = OrderedDict()  # id -> compact bytes, in order
        self.compact_bytes = 0

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
            self._forget(self._episodes.popitem(last=False)[0])
        return episode

    def finished(self, episode: Episode) -> None:
        """Store a finished episode compactly; evict the oldest finished past the bytes."""
        if episode.compacted is not None or episode.id not in self._episodes:
            return
        size = episode.compact()
        self._finished[episode.id] = size
        self.compact_bytes += size
        while self.compact_bytes > self._keep_bytes and self._finished:
            oldest = next(iter(self._finished))
            self._episodes.pop(oldest, None)
            self._forget(oldest)

    def _forget(self, episode_id: str) -> None:
        self.compact_bytes -= self._finished.pop(episode_id, 0)

    def get(self, episode_id: str) -> Episode | None:
        return self._episodes.get(episode_id)

    def discard(self, episode_id: str) -> None:
        """Forget an episode that never opened (its service refused to register it)."""
        self._episodes.pop(episode_id, None)
        self._forget(episode_id)

    def __len__(self) -> int:
        return len(self._episodes)

"""The episodes a tool service knows of: registered by the gateway, closed by it, or expired.

A service learns of an episode only from the gateway (``POST /v1/episodes``), so a tool call
naming any other episode is refused instead of silently creating state that nobody frees. A
stateful domain's episode holds its own copy of its task's initial state; a stateless one's
holds nothing but the fact that it is open. Closing answers the final state and frees it; an
episode idle for longer than the timeout (an agent that died, a gateway that restarted) is
freed at the service's next request, so memory stays bounded by the episodes in use.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from sopgym.core.errors import ToolError
from sopgym.core.tools import ToolContext
from sopgym.types import JSON

DEFAULT_IDLE_TIMEOUT_S = 1800.0
MAX_EPISODE_ID = 128


@dataclass
class _Open:
    task_id: str
    context: ToolContext
    last_used: float
    # held by the call acting on the episode: its calls run one at a time, as the agent made them
    turn: threading.Lock = field(default_factory=threading.Lock)


class EpisodeRegistry:
    """Open episodes, least recently used first, so expiry pops from the front only."""

    def __init__(
        self,
        make_context: Callable[[str, str], ToolContext],
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``make_context(episode_id, task_id)`` builds an episode's context; it raises a
        ``ToolError`` for a task it cannot start."""
        self._make_context = make_context
        self.idle_timeout_s = idle_timeout_s
        self._clock = clock
        self._open: OrderedDict[str, _Open] = OrderedDict()

    def open(self, request: JSON) -> bool:
        """Register ``{"episode_id", "task_id"}``; ``False`` when it was open already for
        the same task (a retried registration is harmless)."""
        episode_id, task_id = _text(request, "episode_id"), _text(request, "task_id")
        if len(episode_id) > MAX_EPISODE_ID:
            raise ToolError(
                "invalid_value", f"episode_id longer than {MAX_EPISODE_ID}", "episode_id"
            )
        self.expire()
        known = self._open.get(episode_id)
        if known is not None:
            if known.task_id != task_id:
                raise ToolError(
                    "invalid_value",
                    f"episode {episode_id!r} is open already, for task {known.task_id!r}",
                    "episode_id",
                )
            self._touch(episode_id, known)
            return False
        context = self._make_context(episode_id, task_id)
        self._open[episode_id] = _Open(task_id, context, self._clock())
        return True

    def context(self, episode_id: str) -> ToolContext:
        """The episode's context for one tool call (which counts as use)."""
        self.expire()
        known = self._open.get(episode_id)
        if known is None:
            raise self._unknown(episode_id)
        self._touch(episode_id, known)
        return known.context

    def turn(self, episode_id: str) -> threading.Lock:
        """The lock a call of this open episode holds while it acts on the episode's state."""
        return self._open[episode_id].turn

    def close(self, episode_id: str) -> JSON | None:
        """Free the episode and answer its final state (``None`` on stateless domains)."""
        self.expire()
        known = self._open.pop(episode_id, None)
        if known is None:
            raise self._unknown(episode_id)
        return known.context.final_state()

    def expire(self) -> int:
        """Free every episode idle past the timeout; how many were freed."""
        deadline = self._clock() - self.idle_timeout_s
        freed = 0
        while self._open:
            episode_id, oldest = next(iter(self._open.items()))
            if oldest.last_used > deadline:
                break
            del self._open[episode_id]
            freed += 1
        return freed

    def __len__(self) -> int:
        return len(self._open)

    def _touch(self, episode_id: str, known: _Open) -> None:
        known.last_used = self._clock()
        self._open.move_to_end(episode_id)

    def _unknown(self, episode_id: str) -> ToolError:
        return ToolError(
            "unknown_episode",
            f"no open episode {episode_id!r} here: the gateway never registered it, closed "
            f"it, or it was idle for over {self.idle_timeout_s:g} s",
        )


def _text(request: JSON, name: str) -> str:
    value = request.get(name)
    if not isinstance(value, str) or not value:
        raise ToolError("missing_argument", f"{name} must be a non-empty string", name)
    return value

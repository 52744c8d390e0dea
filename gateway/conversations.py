"""Dialogue episodes: the agent's messages to the simulated user, and the user's replies.

The gateway holds each episode's conversation (``Episode.messages``) and sends it whole to the
user simulator with every new agent message, so the simulator stays stateless. An exchange is
recorded (both turns) only once the user has answered; a refused message is not recorded.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import orjson

from sopgym.core.dialogue import AGENT, DIALOGUE, MAX_MESSAGE_CHARS, USER
from sopgym.core.errors import DOWN_CODE, ToolError
from sopgym.gateway.episodes import Episode
from sopgym.gateway.upstream import UpstreamError, UpstreamPool
from sopgym.observability import tracing
from sopgym.types import JSON


def message_content(request: JSON) -> str:
    """The agent's message of a ``{"content": "..."}`` request, or a structured refusal."""
    if "content" not in request:
        raise ToolError("missing_argument", "content is required", "content")
    content = request["content"]
    if not isinstance(content, str):
        raise ToolError("type_mismatch", "content must be a string", "content")
    if not content.strip():
        raise ToolError("invalid_value", "content must not be empty", "content")
    if len(content) > MAX_MESSAGE_CHARS:
        raise ToolError(
            "invalid_value", f"content is longer than {MAX_MESSAGE_CHARS} characters", "content"
        )
    return content


def check_open(episode: Episode, kind: str) -> None:
    """Refuse a message to an episode that cannot take one."""
    if episode.finished:
        raise ToolError("episode_closed", "episode already finished")
    if kind != DIALOGUE:
        raise ToolError("no_conversation", "this episode's task has no simulated user")
    if episode.conversation_over:
        raise ToolError(
            "conversation_over", "the user has ended the conversation: finish the episode"
        )


class UserSimLink:
    """The gateway's keep-alive connection to the user simulator."""

    def __init__(self, url: str, secret_line: bytes = b"") -> None:
        parts = urlsplit(url)
        self.url = url
        self._pool = UpstreamPool(parts.hostname or "127.0.0.1", parts.port or 80)
        self._secret_line = secret_line  # the stack's secret: the simulator answers only us

    async def reply(self, episode: Episode, content: str) -> tuple[str, bool]:
        """The user's answer to ``content``, given the episode's conversation so far."""
        body = orjson.dumps({
            "domain": episode.domain,
            "task_id": episode.task_id,
            "messages": [*episode.messages, {"role": AGENT, "content": content}],
        })  # fmt: skip
        try:
            status, payload = await self._pool.post(
                "/v1/reply", body, self._secret_line + tracing.traceparent_line()
            )
            answer: Any = orjson.loads(payload)
        except (UpstreamError, TimeoutError, orjson.JSONDecodeError) as error:
            raise ToolError(
                DOWN_CODE, f"user simulator at {self.url} unreachable: {error}"
            ) from None
        if status >= 400 or not isinstance(answer, dict):
            refusal = answer.get("error") if isinstance(answer, dict) else None
            why = refusal.get("message") if isinstance(refusal, dict) else f"HTTP {status}"
            raise ToolError("upstream_unavailable", f"user simulator refused: {why}")
        reply, done = answer.get("reply"), answer.get("done")
        if not isinstance(reply, str) or not isinstance(done, bool):
            raise ToolError("upstream_unavailable", "user simulator sent a malformed reply")
        return reply, done

    def close(self) -> None:
        self._pool.close()


def record_exchange(episode: Episode, content: str, reply: str, done: bool) -> None:
    episode.messages += [{"role": AGENT, "content": content}, {"role": USER, "content": reply}]
    episode.conversation_over = done

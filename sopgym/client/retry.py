"""The one retry policy of every gateway client (HTTP, gRPC; MCP rides on the SDK's session).

A transient refusal (a fault the gateway injected, a gateway restarting) is retried with
exponential backoff; a service that is down (:data:`~sopgym.core.errors.DOWN_CODE`) is not
transient within an episode, so the client gives up at once; past the budget it gives up too.
Giving up is the caller's :class:`~sopgym.client.InfraError`: never the agent's mistake.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from sopgym.core.errors import DOWN_CODE


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 4  # tries after the first
    backoff: float = 0.2  # seconds before the first retry, doubling after each

    def attempts(self) -> Iterator[int]:
        """Attempt numbers 0..retries, sleeping the backoff between them."""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            yield attempt

    def gives_up(self, attempt: int, code: str | None, retry_down: bool = False) -> bool:
        """After a transient refusal carrying ``code`` at ``attempt``: stop retrying?
        ``retry_down``: a service that is down is waited for too (requests that record
        nothing in an episode: opening one, listing tasks; a restarting service comes back)."""
        return (code == DOWN_CODE and not retry_down) or attempt >= self.retries

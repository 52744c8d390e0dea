"""The one error vocabulary shared by tool services, the gateway and the scorer.

Every rejected call carries a machine-readable ``code`` (used by the evaluator to classify
parameter errors), a human ``message`` and, where it applies, the offending ``field``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sopgym.core.exceptions import SopgymError, UsageError

# code -> HTTP status. Validation failures are 422 so agents can tell "you called me wrong"
# from "this thing does not exist" (404) and "you may not" (401/403).
STATUS_BY_CODE: dict[str, int] = {
    "invalid_json": 400,
    "invalid_request": 400,
    "missing_argument": 422,
    "unexpected_argument": 422,
    "type_mismatch": 422,
    "invalid_value": 422,
    "unknown_tool": 404,
    "not_found": 404,
    "unknown_episode": 404,
    "episode_required": 400,  # a stateful domain's tool called outside any episode
    "unauthorized": 401,
    "forbidden": 403,
    "episode_closed": 409,
    "no_conversation": 409,  # a message in an episode whose task has no simulated user
    "conversation_over": 409,  # a message after the simulated user ended the conversation
    "upstream_unavailable": 502,
    "internal_error": 500,
    "tool_timeout": 504,  # the tool's code did not answer within the service's per-call limit
    # infrastructure: a service the gateway cannot reach, and the faults it injects on purpose
    "service_unavailable": 503,
    "rate_limited": 429,
    "temporarily_unavailable": 503,
    "upstream_timeout": 504,
    "connection_dropped": 502,  # recorded only: the agent saw its connection close
}

# How the evaluator groups codes (TELLER-Bench's Validation / Type errors).
VALIDATION_CODES = frozenset({
    "missing_argument",
    "unexpected_argument",
    "invalid_value",
    "invalid_json",
    "invalid_request",
})
TYPE_CODES = frozenset({"type_mismatch"})
# The tool's own code failed (raised, or hung past the tool service's per-call timeout): the
# evaluator's tool_error. Not retried by clients: the same call would fail the same way.
TOOL_FAILURES = frozenset({"internal_error", "tool_timeout"})

# Faults the gateway injects (``--faults``): transient, so agents retry them.
FAULT_CODES = frozenset({
    "rate_limited",
    "temporarily_unavailable",
    "upstream_timeout",
    "connection_dropped",
})
# A service that is down: not transient within an episode, the agent stops at once.
DOWN_CODE = "service_unavailable"
# Calls that never reached a working tool: no agent decision, so no scorer counts them.
INFRA_CODES = FAULT_CODES | {DOWN_CODE}
# Our tool service's own per-call limit ran out (the tool hung, or a call of the same episode
# before it did, or the tool already had its share of the pool held by hung calls): the
# infrastructure's failure, unless the tool is documented as slow by design.
HUNG_CODE = "tool_timeout"


@dataclass
class ToolError(SopgymError):
    """A call that a tool, a service or the gateway refuses, with a stable error code."""

    code: str
    message: str
    field: str | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    @property
    def status(self) -> int:
        return STATUS_BY_CODE.get(self.code, 400)

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "field": self.field}}


class UnknownDomainError(UsageError, KeyError):
    """A domain name that no pack (and no imported benchmark) answers to; the message says
    which names exist, or why an imported one cannot load."""

    def __str__(self) -> str:
        return str(self.args[0])

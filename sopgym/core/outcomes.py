"""How an episode ended, as far as the infrastructure is concerned.

An agent can only be judged on episodes the infrastructure let it play: when a tool service,
the gateway, the model endpoint or the agent's worker process fails a task (after the agent's
retry budget), the task's status is :data:`INFRA_ERROR` with the cause, and the metrics leave
it out (:mod:`sopgym.evaluation.scoring`) instead of calling it an agent mistake or a success.
"""

from __future__ import annotations

from sopgym.core.exceptions import InfrastructureError

INFRA_ERROR = "infra_error"


class InfraFailure(InfrastructureError, RuntimeError):
    """Raised agent-side when the infrastructure, not the agent, ended an episode."""


SUCCESS, FAILED, INCOMPLETE = "success", "failed", "incomplete"
OUTCOMES = (SUCCESS, FAILED, INCOMPLETE, INFRA_ERROR)


def outcome(completed: bool, success: bool, infra_error: str | None) -> str:
    """One word for how a scored episode ended: the agent's success or failure, an episode
    it never finished, or one the infrastructure failed (never the agent's)."""
    if infra_error:
        return INFRA_ERROR
    if success:
        return SUCCESS
    return FAILED if completed else INCOMPLETE

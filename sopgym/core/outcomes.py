"""How an episode ended, as far as the infrastructure is concerned.

An agent can only be judged on episodes the infrastructure let it play: when a tool service,
the gateway, the model endpoint or the agent's worker process fails a task (after the agent's
retry budget), the task's status is :data:`INFRA_ERROR` with the cause, and the metrics leave
it out (:mod:`sopgym.evaluation.scoring`) instead of calling it an agent mistake or a success.
"""

from __future__ import annotations

INFRA_ERROR = "infra_error"


class InfraFailure(RuntimeError):
    """Raised agent-side when the infrastructure, not the agent, ended an episode."""

"""How an episode ended, as far as the infrastructure is concerned.

An agent can only be judged on episodes the infrastructure let it play: when a tool service,
the gateway, the model endpoint or the agent's worker process fails a task (after the agent's
retry budget), the task's status is :data:`INFRA_ERROR` with the cause, and the metrics leave
it out (:mod:`sopgym.evaluation.scoring`) instead of calling it an agent mistake or a success.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from sopgym.core.exceptions import InfrastructureError

INFRA_ERROR = "infra_error"


class InfraFailure(InfrastructureError, RuntimeError):
    """Raised agent-side when the infrastructure, not the agent, ended an episode."""


_E = TypeVar("_E", bound=BaseException)
# The infrastructure failures the harness's own clients (the gateway clients, the model door)
# raised during the current episode. An agent runs in the worker's process and can raise any
# class it likes: a failure is an infrastructure error only when the harness saw it itself.
_OBSERVED: ContextVar[list[BaseException] | None] = ContextVar("sopgym_observed", default=None)


def observed(error: _E) -> _E:
    """``error``, noted as seen by the harness's own client: ``raise observed(InfraError(...))``."""
    ledger = _OBSERVED.get()
    if ledger is not None:
        ledger.append(error)
    return error


@contextmanager
def observing() -> Iterator[list[BaseException]]:
    """The ledger of the failures the harness observes while the block runs (one episode);
    threads that copy the context (LangGraph's node executor) append to the same list."""
    ledger: list[BaseException] = []
    token = _OBSERVED.set(ledger)
    try:
        yield ledger
    finally:
        _OBSERVED.reset(token)


def harness_observed(error: BaseException, ledger: list[BaseException]) -> bool:
    """Whether ``error`` (or an error it was raised from) is one the harness itself raised."""
    seen: BaseException | None = error
    for _ in range(8):  # a short cause chain: an agent wrapping a real failure keeps it
        if seen is None:
            return False
        if any(seen is noted for noted in ledger):
            return True
        seen = seen.__cause__
    return False


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

"""The one exception tree: every exception sopgym defines derives from :class:`SopgymError`.

A caller who wants "anything sopgym refused" catches the root; one who must tell a user's
mistake from a broken stack catches a branch. The branches follow what the platform promises
about each kind of failure (a score must not lie, a user's mistake is refused up front, bad
input never becomes a 500)::

    SopgymError
    ├── UsageError            a user's option, name or configuration refused up front (exit 2)
    ├── DataError             a file, record or dataset that cannot be read as what it claims
    ├── InfrastructureError   a service, process or stack failed: never scored as the agent's
    │   └── InfraFailure      (core.outcomes) raised agent-side; the task becomes infra_error
    ├── AgentError            the agent's own failure in an episode: counted against the agent
    ├── ToolError             (core.errors) a tool call refused, with a code from the vocabulary
    ├── GatewayError          (client) the gateway refused to open or finish an episode
    │   └── InfraError        ... because it could not be reached (also an InfraFailure)
    ├── MalformedRequest      a request one of our servers refuses as malformed (4xx, never 500)
    └── Signal                private control flow inside one module; never crosses a boundary

Classes keep their standard bases where callers rely on them (``ValueError``, ``KeyError``,
``TimeoutError``, ``ConnectionError``), so ``except ValueError`` still catches a refused price
table. :data:`SopgymError.kind` names the branch; :func:`error_record` turns any exception into
the small typed record that crosses process boundaries (a worker's report), so the receiving
side reads a ``kind`` instead of parsing class names out of a message. ``tests/test_exceptions.py``
walks every module and fails on an exception class outside this tree. httpx's ``_exceptions.py``
is the model.
"""

from __future__ import annotations

from typing import ClassVar, TypedDict


class SopgymError(Exception):
    """The root of every exception sopgym defines."""

    kind: ClassVar[str] = "error"


class UsageError(SopgymError):
    """The user asked for something that cannot be done: an unknown name or option value, a
    folder that is not a run. Refused before anything runs, with one clear line."""

    kind = "usage"


class DataError(SopgymError):
    """A file, record or dataset that cannot be read as what it claims to be; the message says
    which and where."""

    kind = "data"


class InfrastructureError(SopgymError):
    """A service, process or stack that failed or could not start. An episode it ends is the
    infrastructure's failure, never the agent's success or mistake."""

    kind = "infrastructure"


class AgentError(SopgymError):
    """The agent itself failed its episode (no final answer, a step limit, its deadline)."""

    kind = "agent"


class MalformedRequest(SopgymError):
    """A request one of our servers refuses as malformed: answered with a structured 4xx."""

    kind = "request"


class Signal(SopgymError):
    """Private control flow: raised and caught inside one module, never seen by a caller."""

    kind = "signal"


class ErrorRecord(TypedDict):
    """An exception as it crosses a process boundary: its branch, class and message."""

    kind: str
    type: str
    message: str


def error_record(error: BaseException) -> ErrorRecord:
    """The typed record of ``error``: ``kind`` is its branch in the tree (``"error"`` for the
    root, ``"unexpected"`` for an exception sopgym did not define)."""
    kind = error.kind if isinstance(error, SopgymError) else "unexpected"
    return {"kind": kind, "type": type(error).__name__, "message": str(error)}

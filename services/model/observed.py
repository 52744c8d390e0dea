"""The reference policy replayed over a conversation: the scripted model's reasoning.

:class:`ObservedRun` is the handle a pack's policy (``solve(task, run)``) gets in place of
:class:`~sopgym.core.domain.PolicyRun`. Each ``run.call`` is answered with the result the
conversation shows for that call (``ask_user`` with the user's reply shown for that message),
never with a stored answer; the first call the conversation has not made yet stops the replay
(:class:`Pending`): it is the model's next move. When the policy returns, its outputs are
computed from what the conversation showed, so a wrong tool result leads to the answer that
result implies.

A failed result is handled the way a careful model handles it: a transient failure (a fault
the gateway injected, an unreachable or broken tool, a result it cannot read) is retried up to
:data:`MAX_RETRIES` times, then given up (:class:`GaveUp`); a service the gateway reports down
(``service_unavailable``) is given up at once, as the client SDK does, since there is nothing
to wait for; any other refusal is the tool's answer and is raised into the policy as the
:class:`~sopgym.core.errors.ToolError` the reference run would have seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from sopgym.core.answers import MESSAGE_ACTION
from sopgym.core.domain import PolicyRun
from sopgym.core.errors import DOWN_CODE, FAULT_CODES, TOOL_FAILURES, ToolError
from sopgym.core.exceptions import Signal
from sopgym.core.tables import Tables
from sopgym.core.tasks import ToolCall
from sopgym.core.tools import ToolContext
from sopgym.services.model.conversation import MadeCall
from sopgym.types import JSON

MAX_RETRIES = 2  # repeats of a call that failed transiently, before giving up
# Failures worth another try: the gateway's injected faults, a tool service it could not
# reach, a tool whose own code failed, and a gateway answer that was not JSON
RETRIED_CODES = FAULT_CODES | TOOL_FAILURES | {"upstream_unavailable", "invalid_response"}
UNREADABLE = "unreadable_result"  # a failed result with no error code to read


class Pending(Signal):
    """The policy reached an action the conversation has not made yet: the model's next."""

    def __init__(self, call: ToolCall) -> None:
        super().__init__(call.name)
        self.call = call


class GaveUp(Signal):
    """The model stops without an answer: a call kept failing, or the tool refused it."""

    def __init__(self, call: ToolCall, code: str, attempts: int) -> None:
        super().__init__(f"{call.name} failed ({code}) after {attempts} attempt(s)")
        self.call, self.code, self.attempts = call, code, attempts


@dataclass
class Mistake:
    """One injected mistake at a policy step: the call made instead (``None``: the step is
    skipped) and the evaluator categories it should cause."""

    step: int
    call: ToolCall | None
    kind: str
    expected: list[str]

    def log_record(self) -> JSON:
        return {
            "kind": self.kind,
            "step": self.step,
            "call": self.call.to_json() if self.call else None,
            "expected": self.expected,
        }


# (step index, the due call, the due calls before it) -> the mistake made there, if any
MistakeAt = Callable[[int, ToolCall, list[ToolCall]], Mistake | None]
# (the due calls before it, the call) -> the result the model expects, worked out in-process
Imagine = Callable[[list[ToolCall], ToolCall], JSON]


class ObservedRun(PolicyRun):
    """A :class:`~sopgym.core.domain.PolicyRun` whose results are the conversation's (it runs
    no tool: its context holds the tables only, and no episode state).

    ``mistake_at`` weaves the error profile in: a mistaken call is made (and must appear in
    the conversation) before the due one; a skipped step's result is the one the model
    expects (``imagine``), since it never sees one. With ``planning`` the replay does not stop
    at the first call not made yet: it goes on with the results the model expects, so
    :attr:`planned` lists the calls it plans to make (up to the next message to the user).
    """

    def __init__(
        self,
        made: list[MadeCall],
        tables: Tables,
        mistake_at: MistakeAt,
        imagine: Imagine,
        planning: bool = False,
    ) -> None:
        super().__init__({}, ToolContext(tables=tables))  # self.calls: the policy's, in order
        self._made, self._cursor = made, 0
        # each call's key once per replay (a replay scans the conversation at every step)
        self._keys = [(m.name, canonical(m.arguments)) for m in made]
        self._mistake_at, self._imagine, self._planning = mistake_at, imagine, planning
        self.mistakes: list[Mistake] = []  # those played so far, the pending one included
        self.planned: list[ToolCall] = []  # planning: the calls not made yet
        self.actions = 0  # the conversation's calls this replay went through

    def call(self, name: str, /, **arguments: Any) -> JSON:
        call, before = ToolCall(name, dict(arguments)), list(self.calls)
        self.calls.append(call)
        mistake = self._mistake_at(len(before), call, before)
        if mistake is not None:
            self.mistakes.append(mistake)
            if mistake.call is None:  # skipped: goes on as if it had gone as expected
                return self._imagine(before, call)
            if self._take(mistake.call) is None and not self._planning:
                raise Pending(mistake.call)
        return self._observe(call, lambda: self._imagine(before, call))

    def ask_user(self, text: str) -> str:
        message = ToolCall(MESSAGE_ACTION, {"content": text})
        result = self._observe(message, lambda: _pending(message))
        reply = result.get("reply") if isinstance(result, dict) else None
        if not isinstance(reply, str):
            raise GaveUp(message, UNREADABLE, 1)
        return reply

    def _observe(self, call: ToolCall, expected: Callable[[], JSON]) -> JSON:
        """The conversation's result for ``call``, through retries of transient failures."""
        failures = 0
        while True:
            made = self._take(call)
            if made is None:
                if self._planning:
                    self.planned.append(call)
                    return expected()
                raise Pending(call)
            if made.ok:
                return made.result
            code, message = error_of(made.result)
            if code == DOWN_CODE:
                raise GaveUp(call, code, failures + 1)
            if code not in RETRIED_CODES and code != UNREADABLE:
                raise ToolError(code, message)  # the tool's answer: the policy decides
            failures += 1
            if failures > MAX_RETRIES:
                raise GaveUp(call, code, failures)

    def _take(self, call: ToolCall) -> MadeCall | None:
        """The conversation's next call equal to ``call``; calls before it that match no
        move of the model's (an agent's own extra calls) are passed over."""
        key = (call.name, canonical(call.arguments))
        for index in range(self._cursor, len(self._made)):
            if self._keys[index] == key:
                self._cursor = index + 1
                self.actions += 1
                return self._made[index]
        return None


def _pending(call: ToolCall) -> JSON:
    raise Pending(call)


def error_of(result: Any) -> tuple[str, str]:
    """The error code and message of a failed result (the gateway's ``{"error": {...}}``)."""
    error = result.get("error") if isinstance(result, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return error["code"], str(error.get("message", ""))
    return UNREADABLE, str(result)[:200]


def canonical(value: Any) -> bytes:
    """``value`` as sorted-key JSON: the key by which task inputs and calls are compared.

    A value orjson cannot write (nested deeper than its limit of 254 levels, which a request
    can hold since orjson reads up to 1024) gets ``b""``, which no JSON value writes as: it
    then matches no task's inputs and no SOP step, instead of failing the request with a 500.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return b""

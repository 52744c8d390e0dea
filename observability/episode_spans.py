"""What the gateway and the tool services write onto their server spans.

The gateway annotates the current request's span at the three moments its own episode record
changes: an episode opens, a call is recorded, an episode finishes. The evaluator rebuilds the
trajectory from exactly these attributes, so the record and the trace can never describe
different things. Each helper is a no-op when the current span is not recording.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import orjson

from sopgym.core.errors import TYPE_CODES, VALIDATION_CODES, ToolError
from sopgym.core.trajectory import CallRecord
from sopgym.observability import semconv as sc
from sopgym.observability.lean import current_span
from sopgym.observability.tracing import (
    OUTPUTS_LIMIT,
    capped,
    normalized_digest,
    payload_limit,
)

if TYPE_CHECKING:
    from sopgym.gateway.episodes import Episode


def error_class(code: str) -> str:
    """TELLER-Bench's grouping of a rejection: schema validation, type mismatch, or other."""
    if code in TYPE_CODES:
        return "type"
    return "validation" if code in VALIDATION_CODES else "other"


def add_tool_error_event(span: Any, code: str, field: str | None) -> None:
    span.add_event(
        sc.EVENT_TOOL_ERROR,
        {
            sc.EVENT_ERROR_CODE: code,
            sc.EVENT_ERROR_FIELD: field or "",
            sc.EVENT_ERROR_CLASS: error_class(code),
        },
    )


def record_tool_error(error: ToolError) -> None:
    """A tool service's refusal, as an event on its current server span."""
    span = current_span()
    if span is not None:
        add_tool_error_event(span, error.code, error.field)
        span.set_attribute(sc.ERROR_TYPE, error.code)


@cache
def _limit() -> int:
    return payload_limit()


def annotate_open(episode: Episode, sop_variant: str) -> None:
    span = current_span()
    if span is None:
        return
    attributes: dict[str, Any] = {
        sc.GATEWAY_OP: sc.OP_OPEN,
        sc.episode_id_key(): episode.id,
        sc.TASK_ID: episode.task_id,
        sc.DOMAIN: episode.domain,
        sc.CATALOG: list(episode.tools),
        sc.DISTRACTORS: sorted(episode.distractors),
        sc.SOP_VARIANT: sop_variant,
    }
    for key, name in ((sc.RUN_ID, "run_id"), (sc.GEN_AI_AGENT_NAME, "agent")):
        if isinstance(episode.meta.get(name), str):
            attributes[key] = episode.meta[name]
    span.set_attributes(attributes)


def annotate_call(episode: Episode, index: int, call: CallRecord) -> None:
    """The call record ``episode.calls[index]``, onto the request that produced it.

    Only what the record holds beyond the span itself: the HTTP status is the span's own
    ``http.response.status_code`` and defaults (in catalog, not a distractor, no error) are
    left out. Every attribute costs on the gateway, in the exporter and in the collector.
    """
    span = current_span()
    if span is None:
        return
    text = orjson.dumps(call.arguments).decode()
    arguments, cut = capped(text, _limit())
    attributes: dict[str, Any] = {
        sc.GATEWAY_OP: sc.OP_CALL,
        sc.episode_id_key(): episode.id,
        sc.TASK_ID: episode.task_id,
        sc.GEN_AI_TOOL_NAME: call.name,
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
        sc.CALL_INDEX: index,
    }
    if not call.in_catalog:
        attributes[sc.CALL_IN_CATALOG] = False
    if call.distractor:
        attributes[sc.CALL_DISTRACTOR] = True
    if cut:
        attributes[sc.ARGUMENTS_TRUNCATED] = len(text)
        attributes[sc.ARGUMENTS_DIGEST] = normalized_digest(call.arguments)
    if call.error_code is not None:
        attributes[sc.CALL_ERROR_CODE] = call.error_code
        if call.error_field:
            attributes[sc.CALL_ERROR_FIELD] = call.error_field
        add_tool_error_event(span, call.error_code, call.error_field)
    span.set_attributes(attributes)


def annotate_finish(episode: Episode) -> None:
    span = current_span()
    if span is None:
        return
    outputs, cut = capped(orjson.dumps(episode.outputs).decode(), OUTPUTS_LIMIT)
    attributes: dict[str, Any] = {
        sc.GATEWAY_OP: sc.OP_FINISH,
        sc.episode_id_key(): episode.id,
        sc.TASK_ID: episode.task_id,
        sc.DOMAIN: episode.domain,
        sc.CALL_COUNT: len(episode.calls),
        sc.OUTPUTS: outputs,
    }
    if cut:
        attributes[sc.OUTPUTS_TRUNCATED] = True
    if episode.messages:  # the whole conversation, for the evaluator
        messages, cut = capped(orjson.dumps(episode.messages).decode(), OUTPUTS_LIMIT)
        attributes[sc.MESSAGES] = messages
        if cut:
            attributes[sc.MESSAGES_TRUNCATED] = True
    if episode.final_state is not None:
        state, cut = capped(orjson.dumps(episode.final_state).decode(), OUTPUTS_LIMIT)
        attributes[sc.FINAL_STATE] = state
        if cut:
            attributes[sc.FINAL_STATE_TRUNCATED] = True
    failed = episode.close_errors.get(episode.domain)
    if failed is not None:  # the state is unknown, which an absent attribute would hide
        attributes[sc.FINAL_STATE_ERROR] = failed
    span.set_attributes(attributes)


def annotate_message(episode: Episode) -> None:
    """The exchange just recorded (the last two turns of ``episode.messages``), onto the
    request that made it: the agent's message in, the user's reply out (capped)."""
    span = current_span()
    if span is None:
        return
    said, answer = episode.messages[-2:]
    span.set_attributes({
        sc.GATEWAY_OP: sc.OP_MESSAGE,
        sc.episode_id_key(): episode.id,
        sc.TASK_ID: episode.task_id,
        sc.MESSAGE_INDEX: len(episode.messages) // 2 - 1,
        sc.GEN_AI_INPUT_MESSAGES: capped(orjson.dumps([said]).decode(), _limit())[0],
        sc.GEN_AI_OUTPUT_MESSAGES: capped(orjson.dumps([answer]).decode(), _limit())[0],
        sc.MESSAGE_DONE: episode.conversation_over,
    })  # fmt: skip

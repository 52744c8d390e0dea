"""Agent-side spans, following the OpenTelemetry GenAI semantic conventions.

One task episode is one trace: :func:`task_span` is its root (``invoke_agent``), with a
``chat`` span per LLM call (:func:`chat_span`) and an ``execute_tool`` span per tool call
(:func:`tool_span`); the gateway's and the tool service's server spans hang beneath the tool
spans through the W3C ``traceparent`` header the agent's HTTP client injects.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
from opentelemetry.context import Context
from opentelemetry.propagate import inject
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from sopgym.observability import semconv as sc
from sopgym.observability.tracing import OUTPUTS_LIMIT, capped, payload_limit, tracer


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:
        return repr(value)


@contextmanager
def task_span(
    task_id: str,
    domain: str,
    agent: str,
    model: str | None,
    run_id: str | None,
    trial: int | None = None,
    parent: Context | None = None,
) -> Iterator[Span]:
    """The agent's span of the episode. Its status says how the agent worker saw the task
    end; ``trial`` says which of the run's repeats of the task it is; ``parent``: the
    runner's task span when a runner gave one (the trace's root), else it is the root."""
    attributes: dict[str, Any] = {
        sc.GEN_AI_OPERATION: sc.OP_INVOKE_AGENT,
        sc.GEN_AI_AGENT_NAME: agent,
        sc.TASK_ID: task_id,
        sc.DOMAIN: domain,
    }
    if model:
        attributes[sc.GEN_AI_REQUEST_MODEL] = model
        # required on an agent span by the latest conventions: the model spec's provider
        attributes[sc.GEN_AI_PROVIDER] = model.partition(":")[0]
    if run_id:
        attributes[sc.RUN_ID] = run_id
    if trial is not None:
        attributes[sc.TRIAL] = trial
    with tracer(sc.SCOPE_AGENT).start_as_current_span(
        f"{sc.OP_INVOKE_AGENT} {agent}",
        context=parent,
        kind=SpanKind.INTERNAL,
        attributes=attributes,
    ) as span:
        yield span


def end_task(
    span: Span,
    status: str,
    episode_id: str | None,
    error: str | None,
    llm_usage: list[dict[str, Any]] | None = None,
) -> None:
    """Record the task's outcome on its root span before it ends, with the episode's LLM
    usage summed over its calls (the same records its ``chat`` spans were built from), so
    the evaluator reads one span per episode instead of every chat span."""
    span.set_attribute(sc.TASK_STATUS, status)
    usage = llm_usage or []
    span.set_attribute(sc.LLM_CALLS, len(usage))
    span.set_attribute(sc.GEN_AI_INPUT_TOKENS, sum(int(u.get("input_tokens") or 0) for u in usage))
    span.set_attribute(
        sc.GEN_AI_OUTPUT_TOKENS, sum(int(u.get("output_tokens") or 0) for u in usage)
    )
    if episode_id:
        name_episode(span, episode_id)
    if error:
        span.set_attribute(sc.ERROR_TYPE, error.split(":", 1)[0])
        span.set_status(Status(StatusCode.ERROR, error[:500]))


def name_episode(span: Span, episode_id: str) -> None:
    """The episode id on an episode's span: ``gen_ai.conversation.id`` and, unless the latest
    GenAI conventions are opted in to, also ``sopgym.episode.id`` as before."""
    span.set_attribute(sc.GEN_AI_CONVERSATION_ID, episode_id)
    if not sc.latest_genai():
        span.set_attribute(sc.EPISODE_ID, episode_id)


def record_tool_definitions(span: Span, tools: list[dict[str, Any]]) -> None:
    """``gen_ai.tool.definitions`` on the agent's span: the episode's catalog as the
    conventions shape it (type, name, description, parameters). Opt-in, with the messages:
    a catalog can run to hundreds of tools."""
    if not (capture_messages() and span.is_recording()):
        return
    definitions = [
        {
            "type": "function",
            "name": tool.get("name"),
            "description": tool.get("description", ""),
            "parameters": tool.get("input_schema") or tool.get("parameters") or {},
        }
        for tool in tools
    ]
    span.set_attribute(sc.GEN_AI_TOOL_DEFINITIONS, _json_text(definitions))


@contextmanager
def tool_span(name: str, arguments: Any, call_id: str | None = None) -> Iterator[Span]:
    """An ``execute_tool`` span around one tool call (the call id is made up if the model
    gave none, so every call can still be named). With tracing off the span records nothing,
    so its attributes (the arguments' JSON among them) are not built."""
    with tracer(sc.SCOPE_AGENT_TOOLS).start_as_current_span(
        f"{sc.OP_EXECUTE_TOOL} {name}", kind=SpanKind.INTERNAL
    ) as span:
        if span.is_recording():
            text, _ = capped(_json_text(arguments), payload_limit())
            span.set_attributes(
                {
                    sc.GEN_AI_OPERATION: sc.OP_EXECUTE_TOOL,
                    sc.GEN_AI_TOOL_NAME: name,
                    sc.GEN_AI_TOOL_CALL_ID: call_id or f"call_{uuid.uuid4().hex[:16]}",
                    "gen_ai.tool.type": "function",
                    sc.GEN_AI_TOOL_CALL_ARGUMENTS: text,
                }
            )
        yield span


def end_tool(span: Span, status: int, body: Any) -> None:
    """The tool's answer (capped) and, for a refusal, its error code."""
    if not span.is_recording():
        return
    text, _ = capped(_json_text(body), payload_limit())
    attributes: dict[str, Any] = {sc.GEN_AI_TOOL_CALL_RESULT: text, sc.HTTP_STATUS: status}
    if status >= 400:
        error = body.get("error") if isinstance(body, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        attributes[sc.ERROR_TYPE] = str(code or status)
        span.set_status(Status(StatusCode.ERROR, str(code or status)))
    span.set_attributes(attributes)  # at once: the SDK's lock and checks once


def capture_messages() -> bool:
    """Whether chat spans carry the messages (opt-in: they are large and may be private);
    ``sopgym run --capture-messages`` sets the variable for its agent workers."""
    return os.environ.get(sc.CAPTURE_MESSAGES_ENV, "").strip().lower() == "true"


_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def _text_part(block: Any) -> dict[str, Any]:
    if isinstance(block, dict) and block.get("type") == "text":
        return {"type": "text", "content": block.get("text", "")}
    if isinstance(block, str):
        return {"type": "text", "content": block}
    kind = block.get("type", "unknown") if isinstance(block, dict) else "unknown"
    return {"type": str(kind), "content": block}  # a non-text block, as it is


def _text_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    if isinstance(content, list):  # content blocks
        return [_text_part(block) for block in content]
    return [{"type": "text", "content": str(content)}]


def genai_message(message: Any) -> dict[str, Any]:
    """A LangChain message in the GenAI conventions' form: ``{"role", "parts"}`` with text,
    ``tool_call`` and ``tool_call_response`` parts."""
    role = _ROLES.get(str(getattr(message, "type", "")), str(getattr(message, "type", "user")))
    content = getattr(message, "content", message)
    if role == "tool":
        parts = [{"type": "tool_call_response", "id": getattr(message, "tool_call_id", None),
                  "response": content}]  # fmt: skip
    else:
        parts = _text_parts(content)
    for call in getattr(message, "tool_calls", None) or []:
        parts.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name"),
                      "arguments": call.get("args")})  # fmt: skip
    return {"role": role, "parts": parts}


def _messages_attribute(messages: list[dict[str, Any]]) -> str:
    text, _ = capped(_json_text(messages), OUTPUTS_LIMIT)
    return text


@functools.lru_cache(maxsize=64)
def _chat_attributes(
    model: str, provider: str | None, base_url: str | None
) -> tuple[tuple[str, Any], ...]:
    """A ``chat`` span's attributes that are the same for every call of one model: worked out
    once (``urlsplit`` and all), not on each of an episode's calls."""
    attributes: dict[str, Any] = {sc.GEN_AI_OPERATION: sc.OP_CHAT, sc.GEN_AI_REQUEST_MODEL: model}
    if provider:
        attributes[sc.GEN_AI_PROVIDER] = provider
    if base_url:
        server = urlsplit(base_url)
        if server.hostname:
            attributes[sc.SERVER_ADDRESS] = server.hostname
            port = server.port or (443 if server.scheme == "https" else 80)
            attributes[sc.SERVER_PORT] = port
    return tuple(attributes.items())


@contextmanager
def chat_span(
    model: str,
    provider: str | None = None,
    conversation_id: str | None = None,
    base_url: str | None = None,
) -> Iterator[Span]:
    """A ``chat`` span around one LLM call; fill in usage with :func:`end_chat`. The episode
    id names the conversation; ``base_url`` gives the server's address and port."""
    attributes = dict(_chat_attributes(model, provider, base_url))
    if conversation_id:
        attributes[sc.GEN_AI_CONVERSATION_ID] = conversation_id
    with tracer(sc.SCOPE_AGENT_LLM).start_as_current_span(
        f"{sc.OP_CHAT} {model}", kind=SpanKind.CLIENT, attributes=attributes
    ) as span:
        yield span


def end_chat(
    span: Span,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    response_model: str | None = None,
    finish_reasons: list[str] | None = None,
    **more: Any,
) -> None:
    """The call's usage and outcome on its span, set at once (the SDK takes its lock and checks
    the attributes once, not per attribute); ``more``: other attributes, by name."""
    if not span.is_recording():
        return
    attributes: dict[str, Any] = dict(more)
    if input_tokens is not None:
        attributes[sc.GEN_AI_INPUT_TOKENS] = int(input_tokens)
    if output_tokens is not None:
        attributes[sc.GEN_AI_OUTPUT_TOKENS] = int(output_tokens)
    if response_model:
        attributes[sc.GEN_AI_RESPONSE_MODEL] = response_model
    if finish_reasons:
        attributes[sc.GEN_AI_FINISH_REASONS] = [str(r) for r in finish_reasons]
    span.set_attributes(attributes)


def traced_model_call(invoke: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates the agents' single LLM entry point, ``invoke_model(llm, messages, context,
    ...)``, with a ``chat`` span per call.

    Token usage is read from the record the call appends to ``context.usage``, so the span and
    the worker's own accounting report the same numbers. A failed call's span ends in error
    (the SDK records the exception).
    """

    @functools.wraps(invoke)
    def traced(llm: Any, messages: Any, context: Any, *args: Any, **kwargs: Any) -> Any:
        spec = llm.spec
        conversation = getattr(context, "episode_id", None)
        with chat_span(spec.name, spec.provider, conversation, spec.base_url) as span:
            capture = capture_messages() and span.is_recording()
            if capture:
                span.set_attribute(
                    sc.GEN_AI_INPUT_MESSAGES,
                    _messages_attribute([genai_message(m) for m in messages]),
                )
            recorded = len(context.usage)
            message = None
            try:
                message = invoke(llm, messages, context, *args, **kwargs)
            finally:
                # one call of the SDK for the whole outcome (usage, purpose, the reply's model
                # and finish reason); a failed call's span gets its usage record, if any
                usage = context.usage[-1] if len(context.usage) > recorded else None
                metadata = getattr(message, "response_metadata", None) or {}
                reason = metadata.get("finish_reason")
                more: dict[str, Any] = {}
                if usage is not None:
                    more["sopgym.llm.purpose"] = str(usage.get("purpose", ""))
                    more["sopgym.llm.attempts"] = int(usage.get("attempts", 1))
                if capture and message is not None:
                    answer = {**genai_message(message), "finish_reason": reason or "stop"}
                    more[sc.GEN_AI_OUTPUT_MESSAGES] = _messages_attribute([answer])
                end_chat(
                    span,
                    usage.get("input_tokens") if usage else None,
                    usage.get("output_tokens") if usage else None,
                    response_model=metadata.get("model_name"),
                    finish_reasons=[reason] if reason else None,
                    **more,
                )
            return message

    return traced


def inject_trace_context(headers: MutableMapping[str, str]) -> None:
    """Add the current W3C trace context (``traceparent``) to outgoing request headers."""
    inject(headers)


def _inject_trace_context(request: httpx.Request) -> None:
    inject_trace_context(request.headers)


def traced_http_client(
    timeout: float, mounts: dict[str, httpx.BaseTransport] | None = None
) -> httpx.Client:
    """An HTTP client whose requests carry the current W3C trace context, for model SDKs
    (OpenAI-compatible endpoints): the model server's span joins the ``chat`` span's trace.
    ``mounts``: transports for some origins (httpx's own serves the rest)."""
    return httpx.Client(
        timeout=timeout, mounts=mounts, event_hooks={"request": [_inject_trace_context]}
    )

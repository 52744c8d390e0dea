"""The single door to a model: every LLM call of every agent goes through :func:`invoke_model`.

Keeping one choke point means usage accounting (model, tokens, latency per call), retries with
backoff on transport errors and 429/5xx, and deadline handling are the same for all agents and
all providers, and that tracing has exactly one function to wrap.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.callbacks.manager import CallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableBinding
from langchain_core.runnables.config import ensure_config

from sopgym.agents.base import JSON, AgentContext
from sopgym.agents.models import (
    SCRIPTED,
    ModelSpec,
    build_chat_model,
    openai_compatible,
    parse_model_spec,
)
from sopgym.core.exceptions import AgentError
from sopgym.core.outcomes import InfraFailure, observed
from sopgym.observability.genai import traced_model_call
from sopgym.runs.records import token_turn

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_TRANSIENT_NAMES = ("connect", "timeout", "throttl", "ratelimit", "unavailable", "overloaded")
# An endpoint that refuses connections is down, not slow: one quick retry (a restart), then the
# task is an infrastructure error at once instead of after the whole backoff budget.
REFUSED_RETRIES = 1
# The OpenAI wire value that asks a server to answer with a tool call; sent only where the
# protocol is OpenAI's. OpenAI's API and vLLM hold the reply to it; llama-server's grammar for it
# lets free text run before the call (measured, issue 48: the 1.5B wrote its answer, or text up
# to the length limit), so to an OpenAI-compatible --base-url endpoint a forced turn also sends
# a JSON-schema response format for one call object, which llama.cpp and vLLM enforce from the
# first token, and which the agents read as a call written as text.
REQUIRED = "required"


class ModelCallError(AgentError, RuntimeError):
    """The model could not be called (after retries, or for a non-retryable reason)."""


class ModelUnreachable(ModelCallError, InfraFailure):
    """Transient failures (transport, throttling, 5xx) outlasted the retry budget: the model
    endpoint failed, not the agent, so the run records an infrastructure error."""


class DeadlineExceeded(AgentError, RuntimeError):
    """The task's wall-clock limit ran out."""


class ModelSilent(DeadlineExceeded, InfraFailure):
    """The task's time ran out waiting on a model that had not answered one call of the task:
    the endpoint never spoke, so nothing the agent did can be judged (infrastructure)."""


def deadline_waiting_for_model(context: AgentContext, error: BaseException) -> DeadlineExceeded:
    """The deadline error for a task whose time ran out while a model call was pending: an
    infrastructure failure when the model has not answered any call of this task, else the
    agent's own running out of time."""
    if any(call.get("error") is None for call in context.usage):
        return DeadlineExceeded("task wall-clock limit reached waiting for the model")
    return ModelSilent(
        "task wall-clock limit reached waiting for a model that never answered: "
        f"{type(error).__name__}: {_first_line(error)}"
    )


@dataclass
class LLM:
    """A chat model plus the facts a call needs: its spec and the retry policy."""

    spec: ModelSpec
    chat: Any  # langchain BaseChatModel
    retries: int = 4
    backoff: float = 0.5
    request_timeout: float = 120.0
    record_tokens: bool = False  # each call's token ids and logprobs into its usage record
    # the endpoint answered a forced tool call (tool_choice) with 400 and the same request
    # without it went through: it is never forced again (the worker's other episodes included)
    tool_choice_refused: bool = False
    # a forced turn to an OpenAI-compatible --base-url endpoint also sends the call's JSON
    # schema as the response format (the reply is then a call written as text, which the
    # agent reads only when it reads text calls: text_tool_calls)
    call_format: bool = True
    _bound: dict[tuple[int, str | None], Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_spec(
        cls,
        spec: str,
        base_url: str | None = None,
        temperature: float | None = 0.0,
        request_timeout: float = 120.0,
        retries: int = 4,
        max_tokens: int | None = None,
        record_tokens: bool = False,
    ) -> LLM:
        parsed = parse_model_spec(spec, base_url)
        chat = build_chat_model(parsed, temperature, request_timeout, max_tokens, record_tokens)
        return cls(
            parsed, chat, retries, request_timeout=request_timeout, record_tokens=record_tokens
        )

    def runnable(self, tools: list[JSON] | None, tool_choice: str | None = None) -> Any:
        """The chat model, with ``tools`` bound natively when given, and ``tool_choice``
        with them when given (bindings are cached per catalog and choice, since every call of
        an episode offers the same tools)."""
        if not tools:
            return self.chat
        key = (id(tools), tool_choice)
        bound = self._bound.get(key)
        if bound is None or bound[0] is not tools:
            if len(self._bound) > 8:
                self._bound.clear()
            forcing: dict[str, Any] = {"tool_choice": tool_choice} if tool_choice else {}
            if tool_choice and self.call_format and self.spec.provider == "openai" and (
                self.spec.base_url
            ):  # in the body as it is (LangChain reads a response_format as its own parse)
                forcing["extra_body"] = {"response_format": call_format(tools)}
            bound = self._bound[key] = (tools, self.chat.bind_tools(tools, **forcing))
        return bound[1]

    def forcing(self, tools: list[JSON] | None, tool_choice: str | None) -> str | None:
        """The ``tool_choice`` a call sends: the one asked for, with tools, over the OpenAI
        protocol (Anthropic and Bedrock spell it otherwise), until the endpoint refused it."""
        if not tools or not tool_choice or self.tool_choice_refused:
            return None
        return tool_choice if self.spec.provider in (SCRIPTED, "openai") else None


def call_format(tools: list[JSON]) -> JSON:
    """The response format of a forced turn: one ``{"name", "arguments"}`` object naming an
    offered tool (the bare form :mod:`sopgym.agents.textcalls` reads as a call)."""
    names = [t.get("function", {}).get("name") for t in tools]
    schema = {
        "type": "object",
        "properties": {"name": {"enum": names}, "arguments": {"type": "object"}},
        "required": ["name", "arguments"],
    }
    return {"type": "json_schema", "json_schema": {"name": "tool_call", "schema": schema}}


@traced_model_call  # a GenAI `chat` span per call
def invoke_model(
    llm: LLM,
    messages: Sequence[BaseMessage],
    context: AgentContext,
    *,
    tools: list[JSON] | None = None,
    stop: list[str] | None = None,
    purpose: str = "step",
    tool_choice: str | None = None,
) -> AIMessage:
    """Call the model once (retrying transient failures) and record the call in
    ``context.usage``: model, purpose, input/output tokens, latency and attempts. The trial's
    seed goes along to the providers that take one.

    ``tool_choice`` (``"required"``) asks the server to answer with a tool call. An endpoint
    that refuses the option (a 4xx) is asked again at once without it; when that goes
    through, the option is never sent to it again (:attr:`LLM.tool_choice_refused`), the
    task's row says so (``tool_choice_refused``) and the worker's log has a line: the
    endpoint's limit, never a failure of the agent."""
    forced = llm.forcing(tools, tool_choice)
    runnable = llm.runnable(tools, forced)
    kwargs: dict[str, Any] = {"stop": stop} if stop else {}
    if context.seed is not None and takes_seed(llm.spec):
        kwargs["seed"] = context.seed
    started = time.perf_counter()
    attempt = timeouts = 0
    last_error: Exception = TimeoutError("no attempt")
    dropped: str | None = None  # the tool_choice a refusal made us leave off
    while True:
        if attempt and context.deadline is not None and time.monotonic() >= context.deadline:
            raise observed(deadline_waiting_for_model(context, last_error))  # out between retries
        _check_deadline(context)
        attempt += 1
        if context.deadline is not None and takes_timeout(llm.spec):  # else: the client's own
            kwargs["timeout"] = request_timeout(llm, context)
        try:
            message = generate(runnable, list(messages), kwargs)
            break
        except Exception as error:
            last_error = error
            if forced and is_client_error(error):  # perhaps the option: asked without it
                dropped, forced = forced, None
                runnable = llm.runnable(tools)
                continue
            delay = llm.backoff * 2 ** (attempt - 1) * (0.5 + random.random())
            budget = REFUSED_RETRIES if is_refused(error) else llm.retries
            if (
                is_timeout(error)
                and kwargs.get("timeout", llm.request_timeout) < llm.request_timeout
            ):
                # the wait was cut to the task's deadline: the task ran out of time, as it would
                # have without a model call in flight; not the endpoint failing
                silent = observed(deadline_waiting_for_model(context, error))
                _record(llm, context, purpose, started, attempt, None, error)
                raise silent from error
            # a slow server stays slow: a timed-out request is tried once more, not retries times
            timeouts += is_timeout(error)
            if (
                not is_retryable(error)
                or attempt > budget
                or timeouts > 1
                or _too_late(context, delay)
            ):
                _record(llm, context, purpose, started, attempt, None, error)
                failure = ModelUnreachable if is_retryable(error) else ModelCallError
                raise observed(failure(
                    f"{llm.spec.label}: {type(error).__name__}: {_first_line(error)}"
                )) from error  # fmt: skip
            time.sleep(delay)
    if dropped:  # the same request without it went through: the option was what it refused
        refuse_tool_choice(llm, context, dropped, last_error)
    _record(llm, context, purpose, started, attempt, message, None)
    return message


def refuse_tool_choice(llm: LLM, context: AgentContext, choice: str, error: Exception) -> None:
    """The endpoint refused ``tool_choice`` (the request went through without it): never
    sent again, the task flagged, one line in the worker's log."""
    llm.tool_choice_refused = True
    context.tool_choice_refused = True
    print(
        f"model {llm.spec.label} refused tool_choice={choice!r} ({_first_line(error)}); "
        "its calls go on without it (auto)",
        file=sys.stderr,  # a worker's stderr is its log
        flush=True,
    )


def generate(runnable: Any, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
    """One reply from a chat model (or its tool binding), as ``runnable.invoke`` gives it.

    ``invoke`` wraps the model's own generation (LangChain's cache and rate-limiter checks,
    the provider's ``_generate``, the reply's metadata) in callback machinery: a callback
    manager configured per call, run start and end events, the messages formatted for
    tracing, a result object built and unwrapped; ~0.13 ms a call, a tenth of an agent step.
    We trace calls ourselves (:func:`~sopgym.observability.genai.traced_model_call`), so when
    no LangChain callback handler is configured (none given, none inherited from the graph's
    run, no LangChain tracing switched on) that wrapper has nobody to tell and the model's
    ``_generate_with_cache`` is called directly: the same code produces the same message
    (a test holds the two paths to it), except that a reply the provider gave no id keeps
    none instead of a made-up run id. With any handler configured, ``invoke`` runs as always.
    """
    plain_binding = isinstance(runnable, RunnableBinding) and not (
        runnable.config or runnable.config_factories  # callbacks, listeners: invoke's business
    )
    chat, bound = (runnable.bound, runnable.kwargs) if plain_binding else (runnable, {})
    call = {**bound, **kwargs}
    if (
        not isinstance(chat, BaseChatModel)
        or _STRUCTURED_OUTPUT.intersection(call)  # invoke reads these for tracing only
        or CallbackManager.configure(
            ensure_config().get("callbacks"), chat.callbacks, chat.verbose
        ).handlers
    ):
        return runnable.invoke(messages, **kwargs)
    # imported here: this module serves every provider, that one needs langchain_openai
    from sopgym.agents.chat_completions import ChatCompletionsModel

    direct = chat.reply(messages, **call) if isinstance(chat, ChatCompletionsModel) else None
    if direct is not None:
        return direct
    reply = chat._generate_with_cache(messages, **call).generations[0].message
    return cast(AIMessage, reply)


_STRUCTURED_OUTPUT = frozenset({"ls_structured_output_format", "structured_output_format"})


def takes_seed(spec: ModelSpec) -> bool:
    """Whether calls carry the trial's sampling seed: to the scripted model (it draws its
    mistakes from it) and to OpenAI-compatible endpoints (``--base-url``, spoken to through
    Chat Completions, where ``seed`` is a documented parameter). Not to OpenAI's own API,
    which sends some models through the Responses API (no ``seed`` there), nor to Anthropic
    or Bedrock, which have none."""
    return openai_compatible(spec)


def takes_timeout(spec: ModelSpec) -> bool:
    """Whether a request carries its own timeout: the OpenAI and Anthropic clients take one per
    request; Bedrock's client fixes its read timeout when it is built."""
    return spec.provider != "bedrock"


def request_timeout(llm: LLM, context: AgentContext) -> float:
    """The configured request timeout, cut to what is left of the task's deadline, so one slow
    request cannot outlive its task."""
    if context.deadline is None:
        return llm.request_timeout
    return max(0.1, min(llm.request_timeout, context.deadline - time.monotonic()))


def is_timeout(error: BaseException) -> bool:
    """A request that ran out of time (the client's timeout), as opposed to one refused."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < 5:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return any(isinstance(e, TimeoutError) or "timeout" in type(e).__name__.lower() for e in chain)


def _record(
    llm: LLM,
    context: AgentContext,
    purpose: str,
    started: float,
    attempts: int,
    message: AIMessage | None,
    error: Exception | None,
) -> None:
    usage = (getattr(message, "usage_metadata", None) or {}) if message is not None else {}
    record = {
        "model": llm.spec.label,
        "purpose": purpose,
        "input_tokens": usage.get("input_tokens", 0),
        "output_tokens": usage.get("output_tokens", 0),
        "latency_s": round(time.perf_counter() - started, 6),
        "attempts": attempts,
        "error": f"{type(error).__name__}: {_first_line(error)}" if error else None,
    }
    if message is not None:
        record.update(server_timings(message))
        if llm.record_tokens:
            record["tokens"] = turn_tokens(message, context.usage)
    context.usage.append(record)


def turn_tokens(message: AIMessage, earlier_calls: list[JSON]) -> JSON:
    """The reply's token ids and logprobs (:func:`~sopgym.runs.records.token_turn`):
    the ids from ``usage`` (where :func:`~sopgym.agents.models.with_token_ids` carries them),
    the logprobs from the choice's ``logprobs.content``, joined to the last earlier call of
    the task that recorded its tokens."""
    metadata = message.response_metadata or {}
    usage = metadata.get("token_usage")
    usage = usage if isinstance(usage, dict) else {}
    logprobs = metadata.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    values = [e.get("logprob") for e in content if isinstance(e, dict)] if isinstance(
        content, list) else None  # fmt: skip
    previous = next((c["tokens"] for c in reversed(earlier_calls) if "tokens" in c), None)
    return token_turn(
        usage.get("prompt_token_ids"), usage.get("completion_token_ids"), values, previous
    )


def server_timings(message: AIMessage) -> JSON:
    """The server's own timing of a reply, where it gives one: llama-server's ``timings``
    (prompt tokens it processed, i.e. not read from its cache, and the seconds they took;
    tokens generated and the seconds generation took), or ``usage.completion_time``
    (seconds of generation) as some OpenAI-compatible services report it. Empty otherwise."""
    usage = (message.response_metadata or {}).get("token_usage") or {}
    if not isinstance(usage, dict):
        return {}
    timings = usage.get("timings")
    if isinstance(timings, dict) and timings.get("predicted_ms") is not None:
        return {
            "prompt_tokens_processed": int(timings.get("prompt_n") or 0),
            "prompt_s": round(float(timings.get("prompt_ms") or 0) / 1000, 6),
            "generated_tokens": int(timings.get("predicted_n") or 0),
            "generation_s": round(float(timings["predicted_ms"]) / 1000, 6),
        }
    if isinstance(usage.get("completion_time"), int | float):
        return {
            "generated_tokens": int(usage.get("completion_tokens") or 0),
            "generation_s": round(float(usage["completion_time"]), 6),
        }
    return {}


def is_retryable(error: BaseException) -> bool:
    """Transport failures, timeouts, throttling and 5xx are worth another try; a 4xx (bad
    request, bad key, unknown model) is not."""
    status = getattr(error, "status_code", None)
    if status is None:
        response = getattr(error, "response", None)
        status = getattr(response, "status_code", None)
        if status is None and isinstance(response, dict):  # botocore ClientError
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if isinstance(status, int):
        return status in RETRY_STATUSES
    chain = _causes(error)
    names = " ".join(type(e).__name__.lower() for e in chain)
    return any(word in names for word in _TRANSIENT_NAMES) or any(
        isinstance(e, (ConnectionError, TimeoutError)) for e in chain
    )


def is_client_error(error: BaseException) -> bool:
    """A 4xx other than the retryable ones (408, 409, 429): the request itself was refused
    (an option the endpoint does not take, a bad key, an unknown model)."""
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    return isinstance(status, int) and 400 <= status < 500 and status not in RETRY_STATUSES


def is_refused(error: BaseException) -> bool:
    """Whether the endpoint refused the connection (nothing listens there)."""
    return any(isinstance(e, ConnectionRefusedError) for e in _causes(error))


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and what caused it, a few levels deep (SDKs wrap transport errors)."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _check_deadline(context: AgentContext) -> None:
    if context.deadline is not None and time.monotonic() >= context.deadline:
        raise DeadlineExceeded("task wall-clock limit reached")


def _too_late(context: AgentContext, delay: float) -> bool:
    return context.deadline is not None and time.monotonic() + delay >= context.deadline


def _first_line(error: BaseException | None) -> str:
    text = str(error or "").strip()
    return text.splitlines()[0][:300] if text else ""

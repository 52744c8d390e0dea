"""Rebuilding episodes from spans: the trace-side twin of the gateway's episode records.

Spans are grouped by episode id (every gateway span carries it, and the agent's root span
names it once the episode is open), so an episode whose spans ended up in several traces is
still one episode. The trajectory is rebuilt from the gateway's ``open`` / ``call`` /
``finish`` spans; a gap in the data (no root span, a missing call index, fewer call spans than
the finish span counted) makes the episode *incomplete*: it gets no trajectory, and a reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from sopgym.core.tasks import Gold
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.observability.otlp import SpanRecord
from sopgym.observability.semconv import (
    ARGUMENTS_DIGEST,
    ARGUMENTS_TRUNCATED,
    CALL_COUNT,
    CALL_DISTRACTOR,
    CALL_ERROR_CODE,
    CALL_ERROR_FIELD,
    CALL_IN_CATALOG,
    CALL_INDEX,
    CATALOG,
    DOMAIN,
    EPISODE_ID,
    FINAL_STATE,
    FINAL_STATE_ERROR,
    FINAL_STATE_TRUNCATED,
    GATEWAY_OP,
    GEN_AI_AGENT_NAME,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_OPERATION,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_NAME,
    HTTP_STATUS,
    LLM_CALLS,
    MESSAGES,
    MESSAGES_TRUNCATED,
    OP_CALL,
    OP_FINISH,
    OP_INVOKE_AGENT,
    OP_OPEN,
    OUTPUTS,
    OUTPUTS_TRUNCATED,
    RUN_ID,
    SCOPE_RUNNER,
    TASK_ID,
    TASK_STATUS,
    TRIAL,
    episode_of,
)
from sopgym.observability.tracing import normalized_digest


@dataclass
class EpisodeSpans:
    """One episode's spans; :func:`assemble` settles what they say (:meth:`settle`) once all
    are in, so the identity and the problems below are read once, not per question."""

    key: str
    episode_id: str | None = None
    root: SpanRecord | None = None
    open: SpanRecord | None = None
    finish: SpanRecord | None = None
    calls: list[SpanRecord] = field(default_factory=list)
    # gateway spans past the one open and one finish a gateway writes (an exporter's resent
    # copy of a span is not one): a second writer claims to be the gateway (see _problems)
    conflicting: list[str] = field(default_factory=list)
    # settled: the identity the first span saying it gives (root, open, finish, first call)
    task_id: str | None = None
    domain: str | None = None
    agent: str | None = None
    run_id: str | None = None
    trial: int = 0  # which of the run's trials of its task this is (0 when not said)
    # settled: why the trace data cannot be trusted as a whole (empty: it can)
    problems: list[str] = field(default_factory=list)
    _ordered_calls: list[SpanRecord] = field(default_factory=list, init=False, repr=False)
    _gapless: bool = field(default=True, init=False, repr=False)

    def settle(self) -> None:
        """Read the episode's identity and problems from its spans, now all assembled."""
        said = [s.attributes for s in (self.root, self.open, self.finish) if s is not None]
        if self.calls:
            said.append(self.calls[0].attributes)

        def attribute(key: str) -> Any:
            for attributes in said:
                value = attributes.get(key)
                if value is not None:
                    return value
            return None

        self.task_id = attribute(TASK_ID)
        self.domain = attribute(DOMAIN)
        self.agent = attribute(GEN_AI_AGENT_NAME)
        self.run_id = attribute(RUN_ID)
        self.trial = int(attribute(TRIAL) or 0)
        self._order_calls()
        self.problems = self._problems()

    def _order_calls(self) -> None:
        """The call spans in call-index order, and whether the indices are 0, 1, 2, ... (the
        spans are read in that order, mostly: then they are sorted already)."""
        indices = [span.attributes.get(CALL_INDEX, -1) for span in self.calls]
        ordered = self.calls
        if indices != list(range(len(indices))):
            pairs = sorted(zip(indices, range(len(indices)), self.calls, strict=True))
            indices = [index for index, _, _ in pairs]
            ordered = [span for _, _, span in pairs]
        self._ordered_calls = ordered
        self._gapless = indices == list(range(len(indices)))

    def _problems(self) -> list[str]:
        problems = []
        if self.conflicting:
            # the gateway writes one open and one finish span per episode: another process
            # that reaches the collector wrote the others, and which is the gateway's cannot be
            # told, so the episode is never scored (a forgery can cost a score, never make one)
            problems.append(
                f"conflicting gateway spans ({', '.join(self.conflicting)}): a second writer"
            )
        if self.root is None:
            problems.append("agent root span missing (agent crashed or span lost)")
        if self.open is None:
            problems.append(
                "no episode opened" if self.episode_id is None else "episode open span missing"
            )
        if not self._gapless:
            problems.append("call spans missing or duplicated (gap in call indices)")
        if self.finish is not None:
            counted = self.finish.attributes.get(CALL_COUNT, 0)
            if counted > len(self.calls):
                problems.append(f"{counted - len(self.calls)} of {counted} call spans missing")
            elif counted < len(self.calls) and self._gapless:  # (a gap is said above)
                # calls the gateway never counted: not its spans
                problems.append(
                    f"{len(self.calls) - counted} call span(s) beyond the {counted} the finish "
                    "span counted: a second writer"
                )
            for flag, what in _TRUNCATION_FLAGS:
                if self.finish.attributes.get(flag):
                    problems.append(f"{what} truncated on the finish span")
        elif self.status == "finished":
            problems.append("finish span missing")
        return problems

    @property
    def model(self) -> str | None:
        return self.root.attributes.get(GEN_AI_REQUEST_MODEL) if self.root else None

    @property
    def trace_id(self) -> str:
        first = self.root or self.open or self.finish or (self.calls[0] if self.calls else None)
        return first.trace_id if first else ""

    @property
    def started_ns(self) -> int:
        spans = [s for s in (self.root, self.open) if s is not None] or self.calls
        return min((s.start_ns for s in spans), default=0)

    @property
    def status(self) -> str | None:
        return self.root.attributes.get(TASK_STATUS) if self.root else None

    @property
    def latency_s(self) -> float | None:
        return (self.root.end_ns - self.root.start_ns) / 1e9 if self.root else None

    def trajectory(self, gold: Gold | None = None) -> Trajectory | None:
        """The trajectory the gateway recorded, or ``None`` when the trace data is incomplete.

        ``gold`` resolves arguments too large for their span: they are matched to a gold call
        by the digest of their normalised form.
        """
        if self.problems:
            return None
        finish = self.finish.attributes if self.finish is not None else {}
        messages = _json(finish.get(MESSAGES))
        return Trajectory(
            task_id=str(self.task_id),
            episode_id=str(self.episode_id),
            calls=[_call_record(span, gold) for span in self._ordered_calls],
            finished=self.finish is not None,
            outputs=_json(finish.get(OUTPUTS)),
            catalog=_string_list(self.open.attributes.get(CATALOG) if self.open else None),
            messages=messages if isinstance(messages, list) else [],
            final_state=_json(finish.get(FINAL_STATE)),
            state_error=finish.get(FINAL_STATE_ERROR),
        )

    def llm_usage(self) -> tuple[int, int, int]:
        """LLM calls, input and output tokens: the totals the agent's root span carries."""
        attributes = self.root.attributes if self.root else {}
        return (
            int(attributes.get(LLM_CALLS) or 0),
            int(attributes.get(GEN_AI_INPUT_TOKENS) or 0),
            int(attributes.get(GEN_AI_OUTPUT_TOKENS) or 0),
        )


# The finish span's JSON-text attributes that may be cut to fit: a cut value is unusable
_TRUNCATION_FLAGS = (
    (OUTPUTS_TRUNCATED, "final outputs"),
    (FINAL_STATE_TRUNCATED, "final state"),
    (MESSAGES_TRUNCATED, "conversation messages"),
)


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _string_list(value: Any) -> list[str]:
    """An array attribute; Jaeger's storage model may hand it back as JSON text."""
    value = _json(value)
    return list(map(str, value)) if isinstance(value, list) else []  # (catalogs run to hundreds)


def _arguments(attributes: dict[str, Any], name: str, gold: Gold | None) -> Any:
    text = attributes.get(GEN_AI_TOOL_CALL_ARGUMENTS)
    if attributes.get(ARGUMENTS_TRUNCATED) is None:
        return _json(text)
    digest = attributes.get(ARGUMENTS_DIGEST)
    for call in gold.calls if gold else ():
        if call.name == name and normalized_digest(call.arguments) == digest:
            return call.arguments
    return {"__truncated__": text}  # matches no gold call, as the full value would not


def _call_record(span: SpanRecord, gold: Gold | None) -> CallRecord:
    a = span.attributes
    get = a.get
    name = str(get(GEN_AI_TOOL_NAME, ""))
    return CallRecord(
        name,
        _arguments(a, name, gold),
        int(get(HTTP_STATUS, 0)),
        get(CALL_ERROR_CODE),
        get(CALL_ERROR_FIELD),
        duration_ms=(span.end_ns - span.start_ns) / 1e6,
        in_catalog=bool(get(CALL_IN_CATALOG, True)),
        distractor=bool(get(CALL_DISTRACTOR, False)),
    )


def _only(kept: SpanRecord | None, span: SpanRecord, conflicting: list[str]) -> SpanRecord:
    """The episode's one open (or finish) span: the first, noting a different second one."""
    if kept is None:
        return span
    resent = (kept.trace_id, kept.span_id, kept.attributes) == (
        span.trace_id, span.span_id, span.attributes
    )  # fmt: skip
    if not resent:
        conflicting.append(f"{span.attributes.get(GATEWAY_OP)} span {span.span_id}")
    return kept


def assemble(spans: list[SpanRecord]) -> list[EpisodeSpans]:
    """Group spans into episodes (agent roots without an episode are keyed by trace)."""
    episodes: dict[str, EpisodeSpans] = {}
    roots: list[SpanRecord] = []
    episode_of_trace: dict[str, str] = {}
    for span in spans:
        attributes = span.attributes
        op = attributes.get(GATEWAY_OP)
        if op is not None:
            episode_id = attributes.get(EPISODE_ID)
            if episode_id is None:  # written under the latest GenAI conventions
                episode_id = attributes.get(GEN_AI_CONVERSATION_ID)
            if episode_id.__class__ is not str:
                episode_id = str(episode_id)
            episode = episodes.get(episode_id)
            if episode is None:
                episode = episodes[episode_id] = EpisodeSpans(episode_id, episode_id)
            if op == OP_CALL:
                episode.calls.append(span)
            elif op == OP_OPEN:
                episode.open = _only(episode.open, span, episode.conflicting)
            elif op == OP_FINISH:
                episode.finish = _only(episode.finish, span, episode.conflicting)
            if span.trace_id not in episode_of_trace:  # (an episode spread over traces)
                episode_of_trace[span.trace_id] = episode_id
            continue
        # (the runner's task root is an invoke_agent span too under the latest conventions:
        # the agent's root is the one its worker wrote)
        if attributes.get(GEN_AI_OPERATION) == OP_INVOKE_AGENT and span.scope != SCOPE_RUNNER:
            roots.append(span)
    for root in roots:
        root_episode = episode_of(root.attributes) or episode_of_trace.get(root.trace_id)
        key = str(root_episode) if root_episode else f"trace:{root.trace_id}"
        episode = episodes.get(key)
        if episode is None:
            episode = episodes[key] = EpisodeSpans(key, str(root_episode) if root_episode else None)
        episode.root = root
    for episode in episodes.values():
        episode.settle()
    return list(episodes.values())

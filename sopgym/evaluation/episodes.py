"""Rebuilding episodes from spans: the trace-side twin of the gateway's episode records.

Spans are grouped by episode id (every gateway span carries it, and the agent's root span
names it once the episode is open), so an episode whose spans ended up in several traces is
still one episode. The trajectory is rebuilt from the gateway's ``open`` / ``call`` /
``finish`` spans; a gap in the data (no root span, a missing call index, fewer call spans than
the finish span counted) makes the episode *incomplete*: it gets no trajectory, and a reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from sopgym.core.tasks import Gold
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.observability import semconv as sc
from sopgym.observability.otlp import SpanRecord
from sopgym.observability.tracing import normalized_digest


@dataclass
class EpisodeSpans:
    key: str
    episode_id: str | None = None
    root: SpanRecord | None = None
    open: SpanRecord | None = None
    finish: SpanRecord | None = None
    calls: list[SpanRecord] = field(default_factory=list)

    def _attribute(self, key: str) -> Any:
        for span in (self.root, self.open, self.finish):
            if span is not None:
                value = span.attributes.get(key)
                if value is not None:
                    return value
        return self.calls[0].attributes.get(key) if self.calls else None

    @property
    def task_id(self) -> str | None:
        return self._attribute(sc.TASK_ID)

    @property
    def domain(self) -> str | None:
        return self._attribute(sc.DOMAIN)

    @property
    def agent(self) -> str | None:
        return self._attribute(sc.GEN_AI_AGENT_NAME)

    @property
    def model(self) -> str | None:
        return self.root.attributes.get(sc.GEN_AI_REQUEST_MODEL) if self.root else None

    @property
    def run_id(self) -> str | None:
        return self._attribute(sc.RUN_ID)

    @property
    def trial(self) -> int:
        """Which of the run's trials of its task this episode is (0 when not said)."""
        return int(self._attribute(sc.TRIAL) or 0)

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
        return self.root.attributes.get(sc.TASK_STATUS) if self.root else None

    @property
    def latency_s(self) -> float | None:
        return (self.root.end_ns - self.root.start_ns) / 1e9 if self.root else None

    @cached_property
    def problems(self) -> list[str]:
        """Why this episode's trace data cannot be trusted as a whole (empty: it can).
        Read once all its spans are assembled."""
        problems = []
        if self.root is None:
            problems.append("agent root span missing (agent crashed or span lost)")
        if self.open is None:
            problems.append(
                "no episode opened" if self.episode_id is None else "episode open span missing"
            )
        indices = sorted(s.attributes.get(sc.CALL_INDEX, -1) for s in self.calls)
        if indices != list(range(len(indices))):
            problems.append("call spans missing or duplicated (gap in call indices)")
        if self.finish is not None:
            counted = self.finish.attributes.get(sc.CALL_COUNT, 0)
            if counted > len(self.calls):
                problems.append(f"{counted - len(self.calls)} of {counted} call spans missing")
            for flag, what in _TRUNCATION_FLAGS:
                if self.finish.attributes.get(flag):
                    problems.append(f"{what} truncated on the finish span")
        elif self.status == "finished":
            problems.append("finish span missing")
        return problems

    def trajectory(self, gold: Gold | None = None) -> Trajectory | None:
        """The trajectory the gateway recorded, or ``None`` when the trace data is incomplete.

        ``gold`` resolves arguments too large for their span: they are matched to a gold call
        by the digest of their normalised form.
        """
        if self.problems:
            return None
        calls = sorted(self.calls, key=lambda s: s.attributes[sc.CALL_INDEX])
        finish = self.finish.attributes if self.finish is not None else {}
        messages = _json(finish.get(sc.MESSAGES))
        return Trajectory(
            task_id=str(self.task_id),
            episode_id=str(self.episode_id),
            calls=[_call_record(span, gold) for span in calls],
            finished=self.finish is not None,
            outputs=_json(finish.get(sc.OUTPUTS)),
            catalog=_string_list(self.open.attributes.get(sc.CATALOG) if self.open else None),
            messages=messages if isinstance(messages, list) else [],
            final_state=_json(finish.get(sc.FINAL_STATE)),
            state_error=finish.get(sc.FINAL_STATE_ERROR),
        )

    def llm_usage(self) -> tuple[int, int, int]:
        """LLM calls, input and output tokens: the totals the agent's root span carries."""
        attributes = self.root.attributes if self.root else {}
        return (
            int(attributes.get(sc.LLM_CALLS) or 0),
            int(attributes.get(sc.GEN_AI_INPUT_TOKENS) or 0),
            int(attributes.get(sc.GEN_AI_OUTPUT_TOKENS) or 0),
        )


# The finish span's JSON-text attributes that may be cut to fit: a cut value is unusable
_TRUNCATION_FLAGS = (
    (sc.OUTPUTS_TRUNCATED, "final outputs"),
    (sc.FINAL_STATE_TRUNCATED, "final state"),
    (sc.MESSAGES_TRUNCATED, "conversation messages"),
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
    return [str(v) for v in value] if isinstance(value, list) else []


def _arguments(attributes: dict[str, Any], name: str, gold: Gold | None) -> Any:
    text = attributes.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)
    if attributes.get(sc.ARGUMENTS_TRUNCATED) is None:
        return _json(text)
    digest = attributes.get(sc.ARGUMENTS_DIGEST)
    for call in gold.calls if gold else ():
        if call.name == name and normalized_digest(call.arguments) == digest:
            return call.arguments
    return {"__truncated__": text}  # matches no gold call, as the full value would not


def _call_record(span: SpanRecord, gold: Gold | None) -> CallRecord:
    a = span.attributes
    get = a.get
    name = str(get(sc.GEN_AI_TOOL_NAME, ""))
    return CallRecord(
        name,
        _arguments(a, name, gold),
        int(get(sc.HTTP_STATUS, 0)),
        get(sc.CALL_ERROR_CODE),
        get(sc.CALL_ERROR_FIELD),
        duration_ms=span.duration_ms,
        in_catalog=bool(get(sc.CALL_IN_CATALOG, True)),
        distractor=bool(get(sc.CALL_DISTRACTOR, False)),
    )


def assemble(spans: list[SpanRecord]) -> list[EpisodeSpans]:
    """Group spans into episodes (agent roots without an episode are keyed by trace)."""
    episodes: dict[str, EpisodeSpans] = {}
    roots: list[SpanRecord] = []
    episode_of_trace: dict[str, str] = {}
    for span in spans:
        attributes = span.attributes
        op = attributes.get(sc.GATEWAY_OP)
        if op is not None:
            episode_id = str(attributes.get(sc.EPISODE_ID))
            episode = episodes.get(episode_id)
            if episode is None:
                episode = episodes[episode_id] = EpisodeSpans(episode_id, episode_id)
            if op == sc.OP_CALL:
                episode.calls.append(span)
            elif op == sc.OP_OPEN:
                episode.open = episode.open or span
            elif op == sc.OP_FINISH:
                episode.finish = episode.finish or span
            episode_of_trace.setdefault(span.trace_id, episode_id)
            continue
        if attributes.get(sc.GEN_AI_OPERATION) == sc.OP_INVOKE_AGENT:
            roots.append(span)
    for root in roots:
        root_episode = root.attributes.get(sc.EPISODE_ID) or episode_of_trace.get(root.trace_id)
        key = str(root_episode) if root_episode else f"trace:{root.trace_id}"
        episode = episodes.get(key)
        if episode is None:
            episode = episodes[key] = EpisodeSpans(key, str(root_episode) if root_episode else None)
        episode.root = root
    return list(episodes.values())

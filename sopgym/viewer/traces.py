"""What a run's traces add to the viewer's task page: the trace id (the Jaeger link), the
model's calls in order (messages when captured) and when each tool call began."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from sopgym.evaluation.sources import trace_files
from sopgym.observability import semconv as sc
from sopgym.observability.otlp import SpanRecord, read_spans
from sopgym.orchestration.runs import RunReader

# what the viewer needs of a trace: roots (trace ids), chat spans (messages), gateway calls
TRACE_SCOPES = frozenset({sc.SCOPE_AGENT, sc.SCOPE_AGENT_LLM, sc.SCOPE_GATEWAY})


@dataclass
class ChatTurn:
    """One LLM call of an episode, from its ``chat`` span (messages only when captured)."""

    start_ns: int
    duration_ms: float
    model: str
    input_tokens: int | None
    output_tokens: int | None
    input_messages: Any  # parsed gen_ai.input.messages, None when not captured
    output_messages: Any


@dataclass
class EpisodeTrace:
    trace_id: str
    chats: list[ChatTurn] = field(default_factory=list)
    call_starts: dict[int, int] = field(default_factory=dict)  # call index -> start (ns)
    tool_definitions: Any = None  # the agent span's gen_ai.tool.definitions, when recorded


def _json_attribute(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return value  # cut to fit its span: shown as the text it is


def index_traces(spans: list[SpanRecord]) -> dict[str, EpisodeTrace]:
    """Per episode id: its trace id, its LLM calls in order and when each tool call began."""
    roots = {
        s.trace_id: str(sc.episode_of(s.attributes))
        for s in spans
        if s.scope == sc.SCOPE_AGENT and sc.episode_of(s.attributes) is not None
    }
    episodes = {episode: EpisodeTrace(trace) for trace, episode in roots.items()}
    for span in sorted(spans, key=lambda s: s.start_ns):
        attributes = span.attributes
        if span.scope == sc.SCOPE_AGENT_LLM and span.trace_id in roots:
            episodes[roots[span.trace_id]].chats.append(
                ChatTurn(
                    start_ns=span.start_ns,
                    duration_ms=span.duration_ms,
                    model=str(attributes.get(sc.GEN_AI_REQUEST_MODEL, "")),
                    input_tokens=attributes.get(sc.GEN_AI_INPUT_TOKENS),
                    output_tokens=attributes.get(sc.GEN_AI_OUTPUT_TOKENS),
                    input_messages=_json_attribute(attributes.get(sc.GEN_AI_INPUT_MESSAGES)),
                    output_messages=_json_attribute(attributes.get(sc.GEN_AI_OUTPUT_MESSAGES)),
                )
            )
        elif span.scope == sc.SCOPE_AGENT and sc.GEN_AI_TOOL_DEFINITIONS in attributes:
            episode = episodes.get(str(sc.episode_of(attributes)))
            if episode is not None:
                episode.tool_definitions = _json_attribute(attributes[sc.GEN_AI_TOOL_DEFINITIONS])
        elif span.scope == sc.SCOPE_GATEWAY and attributes.get(sc.GATEWAY_OP) == sc.OP_CALL:
            episode = episodes.get(str(sc.episode_of(attributes)))
            if episode is not None and sc.CALL_INDEX in attributes:
                episode.call_starts[int(attributes[sc.CALL_INDEX])] = span.start_ns
    return episodes


def episode_traces(run: RunReader) -> dict[str, EpisodeTrace]:
    """Per episode id, what its trace adds (empty for a ``--no-trace`` run); re-read only
    when the trace files change."""
    if not run.paths.traces.is_dir():
        return {}
    files = trace_files(run.path)
    return run.cached("traces", files, lambda: index_traces(read_spans(files, TRACE_SCOPES).spans))

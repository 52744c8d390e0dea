"""What one worked episode tells about throughput, latency and errors, and the agent worker's
metrics built from it.

:func:`episode_facts` reads a worker's report (its ``llm_calls`` usage records) and, when
available, the gateway's record of the episode (each call's latency and error code). The agent
worker's Prometheus/OpenTelemetry instruments and ``sopgym loadtest``'s figures are both fed
from these facts, so the two always count the same things.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sopgym.core.errors import TYPE_CODES, VALIDATION_CODES
from sopgym.observability.metrics import Metrics
from sopgym.runs.records import WorkerReport
from sopgym.types import JSON


def tool_error_class(code: str | None, in_catalog: bool = True) -> str | None:
    """A refused tool call's class: validation, type, hallucinated, or the error code."""
    if code is None:
        return None
    if not in_catalog:
        return "hallucinated"
    if code in TYPE_CODES:
        return "type"
    return "validation" if code in VALIDATION_CODES else code


def exception_class(error: str | None) -> str | None:
    """``"ModelCallError: ..."`` → ``"ModelCallError"``: for errors that cross as text alone
    (a model call's usage record, a report written before ``error_record`` existed)."""
    if not error:
        return None
    head = error.split(":", 1)[0].strip()
    return head if head.isidentifier() else "error"


def _failure_class(report: WorkerReport) -> str:
    """The class of a failed episode's error: from the worker's typed ``error_record``, or
    parsed from the text of reports written before it existed."""
    return report.error_type or exception_class(report.error) or "failed"


@dataclass
class LlmCall:
    latency_s: float
    input_tokens: int
    output_tokens: int
    error: str | None
    # the server's own timing of generation (llama-server's timings), 0 where it gave none:
    # generated_tokens / generation_s is its generation speed, latency_s includes the prompt
    generated_tokens: int = 0
    generation_s: float = 0.0


@dataclass
class ToolCall:
    latency_s: float  # measured by the gateway: its hop to the tool service included
    error: str | None


@dataclass
class EpisodeFacts:
    domain: str
    status: str  # finished | failed
    error: str | None  # class of a failed episode's error
    elapsed_s: float
    llm: list[LlmCall] = field(default_factory=list)
    tools: list[ToolCall] = field(default_factory=list)


def episode_facts(report: WorkerReport, record: JSON | None = None) -> EpisodeFacts:
    finished = report.status == "finished"
    facts = EpisodeFacts(
        domain=report.domain or (record or {}).get("domain") or "unknown",
        status="finished" if finished else "failed",
        error=None if finished else _failure_class(report),
        elapsed_s=float(report.elapsed_s or 0.0),
    )
    for usage in report.llm_calls:
        facts.llm.append(
            LlmCall(
                latency_s=float(usage.get("latency_s") or 0.0),
                input_tokens=int(usage.get("input_tokens") or 0),
                output_tokens=int(usage.get("output_tokens") or 0),
                error=exception_class(usage.get("error")),
                generated_tokens=int(usage.get("generated_tokens") or 0),
                generation_s=float(usage.get("generation_s") or 0.0),
            )
        )
    for call in (record or {}).get("calls") or ():
        facts.tools.append(
            ToolCall(
                latency_s=float(call.get("duration_ms") or 0.0) / 1000,
                error=tool_error_class(call.get("error_code"), call.get("in_catalog", True)),
            )
        )
    return facts


class WorkerMetrics:
    """An agent worker's instruments (served on ``--metrics-port``, exported over OTLP)."""

    def __init__(self, metrics: Metrics, agent: str, model: str) -> None:
        self.metrics, self.agent, self.model = metrics, agent, model
        self.episodes = metrics.counter(
            "sopgym_agent_episodes", "Episodes worked, by outcome.", ("domain", "agent", "status")
        )
        self.episode_seconds = metrics.histogram(
            "sopgym_agent_episode_duration_seconds", "Wall time per episode.", ("domain", "agent")
        )
        self.llm_calls = metrics.counter(
            "sopgym_agent_llm_calls", "LLM calls, by outcome.", ("model", "outcome")
        )
        self.llm_tokens = metrics.counter(
            "sopgym_agent_llm_tokens", "LLM tokens, by direction.", ("model", "type")
        )
        self.llm_seconds = metrics.histogram(
            "sopgym_agent_llm_call_duration_seconds",
            "LLM call latency (retries included).",
            ("model",),
        )
        # both from the server's own timings: their rates' ratio is its generation speed
        self.llm_generation_seconds = metrics.counter(
            "sopgym_agent_llm_generation_seconds",
            "Seconds the model server spent generating, as it timed them (llama-server).",
            ("model",),
        )
        self.llm_timed_tokens = metrics.counter(
            "sopgym_agent_llm_timed_generated_tokens",
            "Tokens generated in the server-timed seconds of sopgym_agent_llm_generation_seconds.",
            ("model",),
        )
        self.tool_calls = metrics.counter(
            "sopgym_agent_tool_calls",
            "Tool calls of worked episodes, by outcome.",
            ("domain", "outcome"),
        )

    def observe(self, facts: EpisodeFacts) -> None:
        self.episodes.add((facts.domain, self.agent, facts.error or "ok"))
        self.episode_seconds.observe(facts.elapsed_s, (facts.domain, self.agent))
        for call in facts.llm:
            self.llm_calls.add((self.model, call.error or "ok"))
            self.llm_seconds.observe(call.latency_s, (self.model,))
            self.llm_tokens.add((self.model, "input"), call.input_tokens)
            self.llm_tokens.add((self.model, "output"), call.output_tokens)
            if call.generation_s > 0:
                self.llm_generation_seconds.add((self.model,), call.generation_s)
                self.llm_timed_tokens.add((self.model,), call.generated_tokens)
        for tool in facts.tools:
            self.tool_calls.add((facts.domain, tool.error or "ok"))

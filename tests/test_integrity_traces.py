"""Issue 41, point 9 (traces): spans forged by another process that reaches the collector never
raise a score. A second finish (or open) span for an episode makes it incomplete, whichever
arrived first; call spans the finish span did not count likewise; a whole forged episode of a
task is not the run's when the run recorded another episode id for it."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sopgym.core.trajectory import CallRecord
from sopgym.evaluation.evaluator import TaskSet, evaluate
from sopgym.gateway.episodes import Episode
from sopgym.observability import episode_spans, otlp
from sopgym.observability import semconv as sc
from sopgym.observability.lean import LeanTracer
from tests.helpers import DATA_ROOT
from tests.test_evaluator_traces import DOMAIN, Traces


class Forger:
    """Another process's tracer, calling itself the gateway: its own provider and exporter."""

    def __init__(self) -> None:
        self.memory = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "sopgym-gateway"}))
        provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = LeanTracer(provider, provider._active_span_processor, sc.SCOPE_GATEWAY)

    def span(self, annotate: Any) -> None:
        span, token = self.tracer.start("POST /v1/episodes/finish", None, {})
        annotate()
        self.tracer.end(span, token)

    def finish(self, episode_id: str, task_id: str, outputs: dict, calls: int) -> None:
        episode = Episode(id=episode_id, token="x", task_id=task_id, domain=DOMAIN, tools=[],
                          distractors=set(), outputs=outputs, finished_at=1.0,
                          calls=[CallRecord("x", {}, 200)] * calls)  # fmt: skip
        self.span(lambda: episode_spans.annotate_finish(episode))


def _batch(first: InMemorySpanExporter, then: InMemorySpanExporter) -> otlp.SpanBatch:
    """The collector's store: ``first``'s spans arrived before ``then``'s."""
    spans = [*first.get_finished_spans(), *then.get_finished_spans()]
    return otlp.spans_of(otlp.request_to_json(encode_spans(spans)), sc.EVALUATED_SCOPES)


@pytest.fixture
def traces(monkeypatch: pytest.MonkeyPatch) -> Traces:
    return Traces(monkeypatch)


def test_a_forged_finish_span_never_makes_a_success(traces: Traces) -> None:
    gold = traces.gold(0)
    wrong = {**gold.outputs, "lifestyle_risk": "nonsense"}
    genuine = traces.episode(0, outputs=wrong)
    forger = Forger()
    forger.finish(genuine.episode_id, gold.task_id, gold.outputs, len(genuine.calls))
    for order in ((forger.memory, traces.memory), (traces.memory, forger.memory)):
        row = evaluate(_batch(*order), TaskSet(DATA_ROOT))["per_task"][0]
        assert not row["score"]["success"] and not row["trace_complete"]
        assert "conflicting gateway spans" in row["reason"]
    # an exporter's resent copy of the gateway's own finish span is the same span, no conflict
    perfect = InMemorySpanExporter()
    before = len(traces.memory.get_finished_spans())
    traces.episode(1)
    finish = traces.memory.get_finished_spans()[before:][-2]  # (the agent's root ends last)
    assert finish.attributes is not None and finish.attributes[sc.GATEWAY_OP] == sc.OP_FINISH
    perfect.export([finish])
    rows = {r["task_id"]: r for r in evaluate(_batch(traces.memory, perfect),
                                              TaskSet(DATA_ROOT))["per_task"]}  # fmt: skip
    assert rows[traces.gold(1).task_id]["score"]["success"]


def test_forged_call_spans_past_the_finish_count_are_not_the_gateways(traces: Traces) -> None:
    genuine = traces.episode(0)
    forger = Forger()

    def extra_call() -> None:
        episode = Episode(id=genuine.episode_id, token="x", task_id=genuine.task_id,
                          domain=DOMAIN, tools=[], distractors=set())  # fmt: skip
        episode_spans.annotate_call(episode, len(genuine.calls), CallRecord("x", {}, 200))

    forger.span(extra_call)
    row = evaluate(_batch(traces.memory, forger.memory), TaskSet(DATA_ROOT))["per_task"][0]
    assert not row["score"]["success"] and "beyond the" in row["reason"]


def test_a_forged_later_episode_is_not_the_one_the_run_recorded(traces: Traces) -> None:
    gold = traces.gold(0)
    wrong = {**gold.outputs, "lifestyle_risk": "nonsense"}
    genuine = traces.episode(0, outputs=wrong)
    traces.episode(0)  # a perfect episode of the same task, later: the runner never saw it
    key = (DOMAIN, gold.task_id, 0)
    result = evaluate(traces.batch(), TaskSet(DATA_ROOT), [key], ("run-1", "unit"),
                      recorded={key: genuine.episode_id})  # fmt: skip
    row = result["per_task"][0]
    assert row["episode_id"] == genuine.episode_id and not row["score"]["success"]
    assert [u["why"] for u in result["unmatched"]] == [
        "not the episode the run recorded for the task"]  # fmt: skip

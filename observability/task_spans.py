"""The runner's span per task episode: the root of the episode's one trace.

The runner knows what no other process does: how the episode scored. So it opens a ``task``
span before it hands the job to an agent worker (whose ``invoke_agent`` span becomes its
child through the job's ``traceparent``), reads the gateway's record inside it (the record
request joins the same trace instead of starting one of its own) and, once the episode is
scored, writes the outcome onto it (and every scorer's verdict as a
``gen_ai.evaluation.result`` event): Jaeger can then search a run for failed tasks by tag.
Under the latest GenAI conventions (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``)
the span is ``invoke_workflow sopgym.task``.

The provider is the run's own (not the process-wide one): a process may run several runs one
after another, each with its own trace receiver.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, use_span

import sopgym
from sopgym.observability import semconv as sc
from sopgym.observability.genai import name_episode
from sopgym.observability.lean import traceparent_of
from sopgym.types import JSON

SERVICE = "sopgym-runner"
SPAN_NAME = "task"


class TaskSpans:
    """Root spans of one run's episodes, exported to the run's receiver; a no-op when the
    run is not traced (``env`` names no OTLP traces endpoint)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        self._provider: TracerProvider | None = None
        if endpoint:
            from sopgym.observability.protowire import OTLPSpanExporter

            resource = Resource.create(
                {
                    "service.name": SERVICE,
                    "service.namespace": "sopgym",
                    "service.version": sopgym.__version__,
                }
            )
            self._provider = TracerProvider(resource=resource)
            self._provider.add_span_processor(
                BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
            )

    @contextmanager
    def task(
        self, task_id: str, domain: str, run_id: str, trial: int
    ) -> Iterator[tuple[Span | None, str | None]]:
        """The task's root span, current inside the block, and the ``traceparent`` that
        makes the agent worker's spans its children (``(None, None)`` untraced)."""
        span, traceparent = self.start(task_id, domain, run_id, trial)
        if span is None:
            yield None, None
            return
        with use_span(span, end_on_exit=True):
            yield span, traceparent

    def start(
        self, task_id: str, domain: str, run_id: str, trial: int
    ) -> tuple[Span | None, str | None]:
        """The task's root span, started but not made current (the runner ends it when the
        episode is scored, in another thread: ``use_span(span, end_on_exit=True)``), and the
        ``traceparent`` of its trace (``(None, None)`` untraced)."""
        if self._provider is None:
            return None, None
        tracer = self._provider.get_tracer(sc.SCOPE_RUNNER, sopgym.__version__)
        attributes: dict[str, str | int] = {
            sc.TASK_ID: task_id,
            sc.DOMAIN: domain,
            sc.RUN_ID: run_id,
            sc.TRIAL: trial,
        }
        name = SPAN_NAME
        if sc.latest_genai():  # the whole episode is a workflow around the agent's invocation
            name = f"{sc.OP_INVOKE_WORKFLOW} {sc.WORKFLOW_NAME}"
            attributes[sc.GEN_AI_OPERATION] = sc.OP_INVOKE_WORKFLOW
            attributes[sc.GEN_AI_AGENT_NAME] = sc.WORKFLOW_NAME
        span = tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attributes)
        return span, traceparent_of(span)

    def close(self) -> None:
        """Export what is buffered and stop (before the run's receiver stops)."""
        if self._provider is not None:
            self._provider.shutdown()


def evaluation_attributes(name: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """A scorer's verdict (``value`` in [0, 1] or None where it does not apply,
    ``explanation``) as the attributes of a ``gen_ai.evaluation.result`` event: the label is
    ``pass`` at 1.0, ``fail`` below, ``not_applicable`` without a value."""
    value = result.get("value")
    attributes: dict[str, Any] = {sc.GEN_AI_EVALUATION_NAME: name}
    if value is None:
        attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] = "not_applicable"
    else:
        attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] = float(value)
        attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] = "pass" if value >= 1.0 else "fail"
    if result.get("explanation"):
        attributes[sc.GEN_AI_EVALUATION_EXPLANATION] = str(result["explanation"])
    return attributes


def set_outcome(
    span: Span | None,
    outcome: str,
    success: bool,
    error_classes: list[str],
    episode_id: str | None,
    scores: Mapping[str, JSON] | None = None,
) -> None:
    """The scored outcome on the task's root: ``sopgym.task.outcome`` (success / failed /
    incomplete / infra_error), ``sopgym.task.success``, the error classes the episode made,
    every scorer's verdict as a ``gen_ai.evaluation.result`` event (``scores``: the task
    score's, by scorer name) and, for anything but a success, ``error.type`` = the outcome
    and ERROR status."""
    if span is None or not span.is_recording():
        return
    span.set_attribute(sc.TASK_OUTCOME, outcome)
    span.set_attribute(sc.TASK_SUCCESS, success)
    span.set_attribute(sc.TASK_ERROR_CLASSES, error_classes)
    if episode_id:
        name_episode(span, episode_id)
    for name, result in (scores or {}).items():
        span.add_event(sc.EVENT_EVALUATION_RESULT, evaluation_attributes(name, result))
    if not success:
        span.set_attribute(sc.ERROR_TYPE, outcome)
        span.set_status(Status(StatusCode.ERROR, outcome))

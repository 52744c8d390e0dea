"""Evaluation results as OpenTelemetry log records, an option beside the span events.

OpenTelemetry deprecated span events (OTEP 4430): new events go out as log records, tied to
their span by its trace and span ids. sopgym writes every scorer's verdict as a
``gen_ai.evaluation.result`` span event on the task's root (what Jaeger shows and what Phoenix
turns into annotations, so that stays); with ``SOPGYM_EVALUATION_LOGS=1`` each such event also
goes out as a log record of the same event name and attributes, at the event's time, in the
root span's context, to the run's OTLP receiver (``/v1/logs``; the receiver stores them beside
the traces). :class:`EvaluationLogProcessor` does it as the root span ends, so whatever writes
the events needs no change.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

import sopgym
from sopgym.observability import semconv as sc

EVALUATION_LOGS_ENV = "SOPGYM_EVALUATION_LOGS"


def evaluation_logs_on(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``SOPGYM_EVALUATION_LOGS`` asks for evaluation results as log records too."""
    value = (os.environ if env is None else env).get(EVALUATION_LOGS_ENV, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def logs_endpoint(traces_endpoint: str) -> str:
    """The OTLP/HTTP logs endpoint beside a traces endpoint (``.../v1/traces``)."""
    base = traces_endpoint.removesuffix("/").removesuffix("/v1/traces")
    return f"{base}/v1/logs"


class EvaluationLogProcessor(SpanProcessor):
    """On each ended span, one log record per ``gen_ai.evaluation.result`` event it holds."""

    def __init__(self, endpoint: str, resource: Resource) -> None:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

        self._provider = LoggerProvider(resource=resource)
        self._provider.add_log_record_processor(
            BatchLogRecordProcessor(OTLPLogExporter(endpoint=endpoint))
        )
        self._logger = self._provider.get_logger(sc.SCOPE_RUNNER, sopgym.__version__)

    def on_end(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        if context is None:
            return
        parent = trace.set_span_in_context(trace.NonRecordingSpan(context))
        for event in span.events:
            if event.name == sc.EVENT_EVALUATION_RESULT:
                self._logger.emit(
                    timestamp=event.timestamp,
                    context=parent,
                    event_name=sc.EVENT_EVALUATION_RESULT,
                    attributes=dict(event.attributes or {}),
                )

    def shutdown(self) -> None:
        self._provider.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._provider.force_flush(timeout_millis)

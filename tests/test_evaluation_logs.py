"""Evaluation results as OpenTelemetry log records (``SOPGYM_EVALUATION_LOGS=1``): every
scorer's verdict on a task's root still goes out as a ``gen_ai.evaluation.result`` span event
(Jaeger and Phoenix read those), and also as a log record of that event name and attributes in
the root's trace and span, which the run's receiver stores under ``traces/logs/`` (where the
trace readers, which take the store's ``*.json*`` files, never meet it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from sopgym.evaluation.sources import load_spans
from sopgym.observability import semconv as sc
from sopgym.observability.collector import Collector
from sopgym.observability.evaluation_logs import EVALUATION_LOGS_ENV
from sopgym.observability.task_spans import TaskSpans, set_outcome
from tests.test_gateway_server_hostile import uvicorn_serving

SCORES: dict[str, dict[str, Any]] = {
    "output_fields": {"value": 1.0, "explanation": "all 6 fields match"},
    "final_state": {"value": None, "explanation": ""},
}


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    app = Collector(tmp_path / "traces")
    with uvicorn_serving(app) as url:
        yield tmp_path / "traces", url
    os.close(app._fd)  # uvicorn_serving runs no lifespan, whose shutdown closes them
    if app._log_fd is not None:
        os.close(app._log_fd)


def _one_scored_task(url: str, logs: bool) -> None:
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{url}/v1/traces"}
    if logs:
        env[EVALUATION_LOGS_ENV] = "1"
    spans = TaskSpans(env)
    with spans.task("patient_intake-000", "patient_intake", "run", 0) as (span, _):
        set_outcome(span, "success", True, [], "ep-1", SCORES)
    spans.close()


@pytest.mark.parametrize("logs", [True, False])
def test_evaluation_results_also_go_out_as_log_records_when_asked(
    receiver: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, logs: bool
) -> None:
    monkeypatch.delenv(EVALUATION_LOGS_ENV, raising=False)
    store, url = receiver
    _one_scored_task(url, logs)
    (root,) = load_spans(store).spans  # the trace readers see the span only
    if not logs:  # span events only
        assert not (store / "logs").exists()
        return
    [log_file] = list((store / "logs").glob("*.jsonl"))
    records = [
        record
        for line in log_file.read_bytes().splitlines()
        for resource in orjson.loads(line)["resourceLogs"]
        for scope in resource["scopeLogs"]
        for record in scope["logRecords"]
    ]
    assert [r["eventName"] for r in records] == [sc.EVENT_EVALUATION_RESULT] * 2
    by_name = {}
    for record in records:
        assert bytes.fromhex(root.trace_id) == _id(record["traceId"])
        assert bytes.fromhex(root.span_id) == _id(record["spanId"])
        attributes = {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}
        by_name[attributes[sc.GEN_AI_EVALUATION_NAME]] = attributes
    assert by_name["output_fields"][sc.GEN_AI_EVALUATION_SCORE_LABEL] == "pass"
    assert by_name["output_fields"][sc.GEN_AI_EVALUATION_EXPLANATION] == "all 6 fields match"
    assert by_name["final_state"][sc.GEN_AI_EVALUATION_SCORE_LABEL] == "not_applicable"


def _id(text: str) -> bytes:
    """An id of OTLP JSON as protobuf's JSON mapping writes it (base64)."""
    import base64

    return base64.b64decode(text)

"""The OTLP plumbing, in process: the hand-written protobuf encoder against the SDK's, the
collector's OTLP JSON against the protobuf JSON mapping, the trace store's reader, the Jaeger
v3 reader, and the lean hot-path spans."""

from __future__ import annotations

import asyncio
import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from sopgym.evaluation.sources import fetch_jaeger, jaeger_query
from sopgym.observability import collector as collector_module
from sopgym.observability import otlp, tracing
from sopgym.observability import semconv as sc
from sopgym.observability.collector import Collector
from sopgym.observability.lean import LeanTracer, current_span, current_traceparent
from sopgym.observability.protowire import encode_request
from sopgym.orchestration.processes import free_port
from sopgym.types import Message

FIXTURE = Path(__file__).parent / "fixtures" / "jaeger_v3_traces.json"
PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture(scope="module")
def sdk() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A private provider (never the global one) recording into memory."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "test-svc"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def varied_spans(provider: TracerProvider, memory: InMemorySpanExporter) -> list[Any]:
    """Spans exercising every field the encoders handle: both span APIs, events, links,
    status, nested and negative values, remote parents."""
    memory.clear()
    tracer = provider.get_tracer("sopgym.test", "1.2", schema_url="https://example/schema")
    with tracer.start_as_current_span(
        "root",
        kind=SpanKind.CLIENT,
        attributes={"i": -7, "f": 2.5, "b": False, "s": "", "l": ["a", "b"], "n": [1, 2]},
    ) as root:
        root.add_event("evt", {"k": True, "big": 2**40})
        root.set_status(Status(StatusCode.ERROR, "boom"))
        with tracer.start_as_current_span("child", links=[Link(root.get_span_context(), {"x": 1})]):
            pass
    processor = provider._active_span_processor  # the lean spans feed the same pipeline
    lean = LeanTracer(provider, processor, sc.SCOPE_GATEWAY)
    span, token = lean.start("POST /x", PARENT.encode(), {sc.HTTP_METHOD: "POST"})
    span.set_attributes({sc.CALL_INDEX: 3, sc.GEN_AI_TOOL_NAME: "t"})
    span.add_event(sc.EVENT_TOOL_ERROR, {sc.EVENT_ERROR_CODE: "type_mismatch"})
    lean.end(span, token, error=True)
    return list(memory.get_finished_spans())


def test_fast_encoder_writes_what_the_sdk_encoder_writes(sdk: Any) -> None:
    spans = varied_spans(*sdk)
    ours = ExportTraceServiceRequest()
    ours.ParseFromString(encode_request(spans))
    assert ours == encode_spans(spans)
    assert len(spans) == 3


def test_otlp_json_follows_the_protobuf_json_mapping(sdk: Any) -> None:
    request = encode_spans(varied_spans(*sdk))
    document = otlp.request_to_json(request)
    reference = json_format.MessageToDict(request, use_integers_for_enums=True)
    assert document == otlp._rewrite_ids(reference, otlp._b64_to_hex)
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16  # hex, not base64
    assert isinstance(span["kind"], int) and isinstance(span["startTimeUnixNano"], str)
    assert otlp.json_to_request(document) == request
    bare = ExportTraceServiceRequest()  # no resource, no scope, no status: all omitted
    bare.resource_spans.add().scope_spans.add().spans.add(trace_id=b"\x01" * 16, name="x")
    reference = json_format.MessageToDict(bare, use_integers_for_enums=True)
    assert otlp.request_to_json(bare) == otlp._rewrite_ids(reference, otlp._b64_to_hex)


def _call(app: Collector, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    messages: list[Message] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        messages.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/traces",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    asyncio.run(app(scope, receive, send))
    return messages[0]["status"], messages[1]["body"]


def _b64_ids(document: dict[str, Any]) -> dict[str, Any]:
    return otlp._rewrite_ids(orjson.loads(orjson.dumps(document)), otlp._hex_to_b64)


def test_collector_stores_valid_otlp_json_lines(sdk: Any, tmp_path: Path) -> None:
    request = encode_spans(varied_spans(*sdk))
    app = Collector(tmp_path)
    protobuf = {"content-type": "application/x-protobuf"}
    status, body = _call(app, request.SerializeToString(), protobuf)
    assert status == 200
    ExportTraceServiceResponse().ParseFromString(body)
    gzipped = {**protobuf, "content-encoding": "gzip"}
    assert _call(app, gzip.compress(request.SerializeToString()), gzipped)[0] == 200
    as_json = orjson.dumps(otlp.request_to_json(request))
    assert _call(app, as_json, {"content-type": "application/json"}) == (200, b"{}")
    assert _call(app, b"\x00garbage", protobuf)[0] == 400
    assert _call(app, b"x", {"content-type": "text/plain"})[0] == 415

    lines = app.path.read_bytes().splitlines()
    assert len(lines) == 3 * 2  # three requests, one line per instrumentation scope
    merged = TracesData()
    for line in lines:
        data = json_format.Parse(orjson.dumps(_b64_ids(orjson.loads(line))), TracesData())
        assert len(data.resource_spans) == 1 and len(data.resource_spans[0].scope_spans) == 1
        merged.MergeFrom(data)
    spans = [s for r in merged.resource_spans for ss in r.scope_spans for s in ss.spans]
    originals = [s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]
    assert sorted(s.SerializeToString() for s in spans) == sorted(
        s.SerializeToString() for s in originals * 3
    )


def test_collector_refuses_a_body_over_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collector_module, "MAX_BODY", 16)
    status, body = _call(Collector(tmp_path), b"x" * 17, {"content-type": "application/x-protobuf"})
    assert status == 413 and b"over 16 bytes" in body


def test_reader_skips_unwanted_scopes_and_a_torn_tail(sdk: Any, tmp_path: Path) -> None:
    request = encode_spans(varied_spans(*sdk))
    app = Collector(tmp_path)
    _call(app, request.SerializeToString(), {"content-type": "application/x-protobuf"})
    data = app.path.read_bytes()
    everything = otlp.read_batch(data)
    assert everything.total == len(everything.spans) == 3
    only_gateway = otlp.read_batch(
        data + b'{"resourceSpans": [{"reso', frozenset({"sopgym.gateway"})
    )
    assert only_gateway.total == 3 and only_gateway.skipped == 2
    (span,) = only_gateway.spans
    assert span.trace_id == PARENT.split("-")[1] and span.parent_id == PARENT.split("-")[2]
    assert span.attributes[sc.CALL_INDEX] == 3 and span.status == otlp.STATUS_ERROR
    assert span.events()[0][1][sc.EVENT_ERROR_CODE] == "type_mismatch"
    with pytest.raises(otlp.TraceFormatError, match="line 1 is not JSON"):
        otlp.read_batch(b"{not json}\n" + data)
    # a bad last line that a newline ends was written whole: corrupt, not torn
    last = f"line {len(data.splitlines()) + 1}"
    with pytest.raises(otlp.TraceFormatError, match=f"{last} is not JSON"):
        otlp.read_batch(data + b'{"resourceSpans": [{"reso\n')
    for wrong_shape, found in (
        (b"[]\n", "document"),
        (b'{"resourceSpans": 5}\n', "document"),
        (data + b'{"resourceSpans": [{"scopeSpans": 1}]}\n', last),
    ):
        with pytest.raises(otlp.TraceFormatError, match=f"{found} is not OTLP JSON traces"):
            otlp.read_batch(wrong_shape)
    padded = b"\n   \n  " + data.replace(b"\n", b"\n\t\n", 1)  # blank lines, indented JSON
    assert otlp.read_batch(padded).total == 3


def test_a_wanted_scope_after_an_unwanted_one_on_the_same_line_is_read() -> None:
    """A writer other than our collector may put several scopes (or resources) on one line:
    the line is skipped unread only when its one scope is unwanted."""

    def scope(name: str, span_id: str) -> dict[str, Any]:
        span = {"traceId": "ab" * 16, "spanId": span_id, "name": "x", "kind": 1,
                "startTimeUnixNano": "1", "endTimeUnixNano": "2"}  # fmt: skip
        return {"scope": {"name": name}, "spans": [span]}

    gateway_second = [scope("other", "01" * 8), scope("sopgym.gateway", "02" * 8)]
    one_resource = {"resourceSpans": [{"scopeSpans": gateway_second}]}
    resources = [[scope("other", "03" * 8)], [scope("sopgym.gateway", "04" * 8)]]
    two_resources = {"resourceSpans": [{"scopeSpans": scopes} for scopes in resources]}
    alone = {"resourceSpans": [{"scopeSpans": [scope("other", "05" * 8)]}]}
    data = b"".join(orjson.dumps(d) + b"\n" for d in (one_resource, two_resources, alone))
    batch = otlp.read_batch(data, frozenset({"sopgym.gateway"}))
    assert sorted(s.span_id for s in batch.spans) == ["02" * 8, "04" * 8]
    assert batch.total == 5 and batch.skipped == 3


def test_a_store_read_in_blocks_reads_as_read_whole(
    sdk: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks far smaller than a line: every line is still read once, numbered as in the
    whole file, and only the file's own last line may be torn."""
    request = encode_spans(varied_spans(*sdk))
    app = Collector(tmp_path)
    for _ in range(3):
        _call(app, request.SerializeToString(), {"content-type": "application/x-protobuf"})
    data = app.path.read_bytes().replace(b"\n", b"\n\n", 2)  # blank lines are not numbered
    monkeypatch.setattr(otlp, "_BLOCK", 64)
    store = tmp_path / "store.jsonl"
    for scopes in (None, frozenset({"sopgym.gateway"})):
        whole = otlp.read_batch(data, scopes)
        store.write_bytes(data + b'{"resourceSpans": [{"reso')  # torn: no newline ends it
        blocks = otlp.read_spans([store], scopes)
        assert blocks.spans == whole.spans and blocks.skipped == whole.skipped
        assert whole.total == 9 and len(whole.spans) == (9 if scopes is None else 3)
    lines = len([line for line in data.splitlines() if line])
    store.write_bytes(data + b"{not json}\n" + data)
    with pytest.raises(otlp.TraceFormatError, match=f"store.jsonl: line {lines + 1} is not JSON"):
        otlp.read_spans([store])


def test_jaeger_v3_reader_parses_a_saved_response() -> None:
    body = FIXTURE.read_bytes()
    seen: list[httpx.Request] = []

    def jaeger(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=body)

    batch = fetch_jaeger("http://jaeger:16686", transport=httpx.MockTransport(jaeger))
    assert seen[0].url.path == "/api/v3/traces"
    params = seen[0].url.params
    assert params["query.service_name"] == "sopgym-gateway"
    assert params["query.start_time_min"].endswith("Z") and params["query.start_time_max"]
    assert batch.total == 59 and not batch.skipped
    assert len({s.trace_id for s in batch.spans}) == 2
    services = {s.service for s in batch.spans}
    assert {"sopgym-gateway", "sopgym-tools", "sopgym-agent-worker", "sopgym-model"} <= services
    # The same document is valid OTLP JSON: it parses into TracesData.
    result = orjson.loads(body)["result"]
    data = json_format.Parse(orjson.dumps(_b64_ids(result)), TracesData())
    assert sum(len(ss.spans) for r in data.resource_spans for ss in r.scope_spans) == 59

    by_id = fetch_jaeger(
        "http://jaeger:16686",
        trace_ids=["abc"],
        transport=httpx.MockTransport(lambda r: httpx.Response(404)),
    )
    assert by_id.total == 0


def test_jaeger_query_window() -> None:
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    query = jaeger_query("svc", timedelta(hours=1), 5, now)
    assert query["query.start_time_min"] == "2026-01-02T02:04:05.000000Z"
    assert query["query.start_time_max"] == "2026-01-02T03:04:05.000000Z"
    assert query["query.num_traces"] == "5"


def test_lean_spans_propagate_and_honour_sampling(sdk: Any) -> None:
    provider, memory = sdk
    memory.clear()
    lean = LeanTracer(provider, provider._active_span_processor, sc.SCOPE_TOOLS)
    span, token = lean.start("GET /", PARENT, {})
    assert current_span() is span
    trace_id = PARENT.split("-")[1]
    assert current_traceparent() == f"00-{trace_id}-{span.span_hex}-01"
    lean.end(span, token)
    assert current_span() is None
    unsampled = PARENT[:-2] + "00"
    span, token = lean.start("GET /", unsampled, {})
    assert current_span() is None and current_traceparent().endswith("-00")  # type: ignore[union-attr]
    lean.end(span, token)
    span, token = lean.start("GET /", b"garbage", {})  # a new root, sampled by the provider
    assert span.trace_hex != trace_id and span.parent is None
    lean.end(span, token)
    finished = memory.get_finished_spans()
    assert len(finished) == 2 and finished[0].parent.span_id == int(PARENT.split("-")[2], 16)
    assert finished[0].kind == SpanKind.SERVER


def test_sigterm_flushes_but_never_waits_long_for_a_gone_receiver() -> None:
    """A SIGKILLed runner takes the receiver and every child down at once; each child's flush
    then meets a refused connection, and the exporter would retry for its whole timeout (30 s
    here) before the process could stop."""
    script = (
        "import time\n"
        "from sopgym.observability.tracing import setup_tracing, tracer\n"
        f"setup_tracing('probe', endpoint='http://127.0.0.1:{free_port()}/v1/traces')\n"
        "with tracer('probe').start_as_current_span('last'):\n"
        "    pass\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n"
    )
    env = {**os.environ, "OTEL_EXPORTER_OTLP_TIMEOUT": "30"}
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env, text=True)  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        started = time.monotonic()
        child.send_signal(signal.SIGTERM)
        # ends as asked, with a SIGTERM death's shell status (a clean exit: PID 1 too)
        assert child.wait(timeout=60) == 128 + signal.SIGTERM
        assert time.monotonic() - started < tracing.SIGTERM_FLUSH_S + 5
    finally:
        child.kill()

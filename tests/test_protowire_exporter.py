"""protowire's OTLP/HTTP exporter: public APIs only (no reach into the SDK exporter's private
attributes), the standard OTEL_* variables, retries of a transient refusal."""

from __future__ import annotations

import ast
import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http import trace_exporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sopgym.observability import protowire
from sopgym.observability.protowire import OTLPSpanExporter


def finished_spans(count: int = 3) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for n in range(count):
        with provider.get_tracer("t").start_as_current_span(f"s{n}") as span:
            span.set_attribute("n", n)
    return list(memory.get_finished_spans())


@contextmanager
def receiver(
    statuses: list[int], keep_alive: bool = False
) -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    """An OTLP/HTTP receiver answering the n-th POST with ``statuses[n]`` (then 200); each
    request's headers get the client's port as ``x-client-port``."""
    seen: list[tuple[dict[str, str], bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen.append(({**headers, "x-client-port": str(self.client_address[1])}, body))
            status = statuses[len(seen) - 1] if len(seen) <= len(statuses) else 200
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1/traces", seen
    finally:
        server.shutdown()
        server.server_close()


def test_the_exporter_uses_no_private_attribute_of_the_sdk_exporter() -> None:
    assert not issubclass(OTLPSpanExporter, trace_exporter.OTLPSpanExporter)
    tree = ast.parse(Path(protowire.__file__).read_text())
    private = [
        node.value for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and node.value in ("_client", "_metrics", "_shutdown")
    ]
    assert private == []


def test_it_posts_the_protowire_bytes_with_the_standard_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=sop%20gym,authorization=Bearer t")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
    spans = finished_spans()
    with receiver([]) as (url, seen):
        exporter = OTLPSpanExporter(endpoint=url)
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        exporter.shutdown()
    (headers, body), = seen
    assert headers["x-team"] == "sop gym" and headers["authorization"] == "Bearer t"
    assert headers["content-type"] == "application/x-protobuf"
    assert headers["content-encoding"] == "gzip"
    raw = gzip.decompress(body)
    assert raw == protowire.encode_request(spans)
    request = ExportTraceServiceRequest.FromString(raw)
    assert [s.name for s in request.resource_spans[0].scope_spans[0].spans] == ["s0", "s1", "s2"]


class RecordedWaits(threading.Event):
    """The exporter's stop event, recording the backoff waits instead of sleeping them."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return False


def test_a_transient_refusal_is_retried_a_bad_request_is_not() -> None:
    with receiver([503, 429]) as (url, seen):
        exporter = OTLPSpanExporter(endpoint=url, timeout=30)
        exporter._stopping = waits = RecordedWaits()
        assert exporter.export(finished_spans(1)) == SpanExportResult.SUCCESS
    assert len(seen) == 3 and waits.waits == [1.0, 2.0]
    with receiver([400]) as (url, seen):
        exporter = OTLPSpanExporter(endpoint=url, timeout=30)
        assert exporter.export(finished_spans(1)) == SpanExportResult.FAILURE
    assert len(seen) == 1


def test_exports_from_any_thread_share_one_kept_connection() -> None:
    """The span processor's thread and a flushing thread export in turn on one connection
    (no httpx request per export, no connection per thread)."""
    with receiver([], keep_alive=True) as (url, seen):
        exporter = OTLPSpanExporter(endpoint=url)
        assert exporter.export(finished_spans(1)) == SpanExportResult.SUCCESS
        other = threading.Thread(target=lambda: exporter.export(finished_spans(2)))
        other.start()
        other.join()
        assert exporter.export(finished_spans(1)) == SpanExportResult.SUCCESS
        exporter.shutdown()
    assert len(seen) == 3 and len({headers["x-client-port"] for headers, _ in seen}) == 1


def test_a_receiver_behind_a_proxy_is_reached_through_httpx(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A proxy configured for the receiver's host: httpx (which honours it) sends the export,
    as it does for https receivers."""
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    monkeypatch.setenv("no_proxy", "")
    assert OTLPSpanExporter(endpoint="http://collector:4318/v1/traces")._direct is None
    assert OTLPSpanExporter(endpoint="https://collector:4318/v1/traces")._direct is None
    monkeypatch.setenv("no_proxy", "collector")
    assert OTLPSpanExporter(endpoint="http://collector:4318/v1/traces")._direct is not None


def test_the_endpoint_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    assert OTLPSpanExporter().endpoint == "http://collector:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://other:1/x")
    assert OTLPSpanExporter().endpoint == "http://other:1/x"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "7")
    assert OTLPSpanExporter().timeout == 7.0

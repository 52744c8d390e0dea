"""Side by side: our hand-written OTLP codecs against the well-kept libraries, CPU per span.

1. Encoding (every traced process, per exported batch): ``observability.protowire.encode_request``
   (writes the protobuf wire format directly) against the SDK exporter's own encoding,
   ``encode_spans(spans).SerializePartialToString()`` (protobuf message objects, then the
   protobuf library's serialiser). Both give the same bytes (tests/test_protowire.py).
2. Reading (the evaluator, per stored span): ``observability.otlp.read_batch`` (OTLP JSON lines
   decoded by msgspec straight into typed structs) against (a) plain ``orjson.loads`` plus a dict
   walk building the same records, and (b) the official protobuf parse
   (``json_format.ParseDict`` into ``ExportTraceServiceRequest``, ids translated hex -> base64 as
   every OTLP/JSON receiver must) plus a walk of the message.

Spans are built by the real SDK (a gateway-like span: ~12 attributes, one event, a parent), in
export batches of 512, one collector line per batch. Rounds alternate between the contenders so
a loaded machine slows each alike; CPU is ``time.process_time`` (this process only). Reported:
median CPU per span of each, and its ratio to ours (the figure to trust on a busy machine).

    python bench/bench_otlp_codecs.py [--spans 512] [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from sopgym.observability.otlp import _hex_to_b64, _rewrite_ids, read_batch, request_to_json
from sopgym.observability.protowire import encode_request


def make_spans(count: int) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "gateway"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("sopgym.gateway", "0.1.0")
    with tracer.start_as_current_span("episode", kind=SpanKind.SERVER):
        for n in range(count - 1):
            with tracer.start_as_current_span(f"execute_tool lookup_{n % 7}",
                                              kind=SpanKind.CLIENT) as span:
                span.set_attributes({
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": f"lookup_{n % 7}",
                    "gen_ai.tool.call.id": f"call_{n:06d}",
                    "sopgym.episode.id": "ep-0123456789abcdef",
                    "sopgym.task.id": f"task-{n % 50}",
                    "sopgym.domain": "patient_intake",
                    "http.request.method": "POST",
                    "http.response.status_code": 200,
                    "sopgym.tool.arguments": '{"patient_id": "P-00042", "field": "dob"}',
                    "sopgym.tool.result": '{"result": {"dob": "1980-02-03"}}',
                    "sopgym.latency_ms": 1.25,
                    "sopgym.retried": False,
                })
                span.add_event("tool.result", {"bytes": 42})
    provider.shutdown()
    return list(exporter.get_finished_spans())


def ours_encode(spans: list[ReadableSpan]) -> bytes:
    return encode_request(spans)


def sdk_encode(spans: list[ReadableSpan]) -> bytes:
    return encode_spans(spans).SerializePartialToString()


def plain_orjson_read(data: bytes) -> list[dict[str, Any]]:
    """OTLP JSON lines to records with orjson and a dict walk (what a reader without typed
    decoding would write)."""
    records = []
    for line in data.splitlines():
        document = orjson.loads(line)
        for resource_spans in document.get("resourceSpans", ()):
            service = ""
            for item in resource_spans.get("resource", {}).get("attributes", ()):
                if item["key"] == "service.name":
                    service = item["value"].get("stringValue", "")
            for scope_spans in resource_spans.get("scopeSpans", ()):
                scope = scope_spans.get("scope", {}).get("name", "")
                for span in scope_spans.get("spans", ()):
                    records.append({
                        "trace_id": span["traceId"], "span_id": span["spanId"],
                        "parent_id": span.get("parentSpanId", ""), "name": span["name"],
                        "kind": span.get("kind", 0),
                        "start": int(span["startTimeUnixNano"]),
                        "end": int(span["endTimeUnixNano"]),
                        "attributes": {a["key"]: _json_value(a["value"])
                                       for a in span.get("attributes", ())},
                        "status": span.get("status", {}).get("code", 0),
                        "service": service, "scope": scope, "events": span.get("events", []),
                    })
    return records


def _json_value(value: dict[str, Any]) -> Any:
    for key, found in value.items():
        if key == "intValue":
            return int(found)
        if key in ("arrayValue", "kvlistValue"):
            return found
        return found
    return None


def protobuf_read(data: bytes) -> list[dict[str, Any]]:
    """OTLP JSON lines to records through the official protobuf JSON parser."""
    records = []
    for line in data.splitlines():
        request = ExportTraceServiceRequest()
        json_format.ParseDict(_rewrite_ids(orjson.loads(line), _hex_to_b64), request)
        for resource_spans in request.resource_spans:
            service = next((a.value.string_value for a in resource_spans.resource.attributes
                            if a.key == "service.name"), "")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    records.append({
                        "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                        "parent_id": span.parent_span_id.hex(), "name": span.name,
                        "kind": span.kind, "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "attributes": {a.key: getattr(a.value, a.value.WhichOneof("value") or "")
                                       for a in span.attributes},
                        "status": span.status.code, "service": service,
                        "scope": scope_spans.scope.name, "events": list(span.events),
                    })
    return records


def ours_read(data: bytes) -> list[Any]:
    return read_batch(data).spans


def cpu_per_item(work: Callable[[], object], items: int) -> float:
    started = time.process_time()
    work()
    return (time.process_time() - started) / items * 1e6  # µs


def side_by_side(title: str, contenders: dict[str, Callable[[], object]], items: int,
                 rounds: int) -> None:
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for work in contenders.values():
        work()  # warm: imports, caches
    for n in range(rounds):
        order = list(contenders.items())
        for name, work in order if n % 2 == 0 else reversed(order):  # alternating
            samples[name].append(cpu_per_item(work, items))
    ours = statistics.median(samples[next(iter(contenders))])
    print(f"\n{title} ({items} spans a round, {rounds} rounds, median CPU per span)")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"  {name:<34} {median:8.2f} µs   x{median / ours:5.2f} of ours")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    spans = make_spans(args.spans)
    assert ours_encode(spans) == sdk_encode(spans), "the two encodings differ"
    side_by_side("encode: finished spans -> OTLP protobuf bytes", {
        "ours (protowire.encode_request)": lambda: ours_encode(spans),
        "SDK (encode_spans + protobuf)": lambda: sdk_encode(spans),
    }, len(spans), args.rounds)

    request = ExportTraceServiceRequest.FromString(sdk_encode(spans))
    line = orjson.dumps(request_to_json(request))
    data = b"\n".join([line] * 4) + b"\n"  # four collector lines
    items = 4 * len(spans)
    assert len(ours_read(data)) == len(plain_orjson_read(data)) == len(protobuf_read(data))
    side_by_side("read: OTLP JSON lines -> span records", {
        "ours (otlp.read_batch, msgspec)": lambda: ours_read(data),
        "orjson.loads + dict walk": lambda: plain_orjson_read(data),
        "protobuf json_format.ParseDict": lambda: protobuf_read(data),
    }, items, args.rounds)


if __name__ == "__main__":
    main()

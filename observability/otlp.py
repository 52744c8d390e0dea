"""OTLP JSON: the trace store's format, and the fast path that reads spans back out of it.

The store holds one ``TracesData`` object per line (``{"resourceSpans": [...]}``), encoded per
the OTLP protobuf JSON mapping: lowerCamelCase keys, trace and span ids as hex strings, enums
as integers, 64-bit integers as decimal strings. That is what the OpenTelemetry Collector's
file exporter writes and what Jaeger's ``/api/v3/traces`` answers (there wrapped in
``{"result": ...}``), so the same reader serves all three.
"""

from __future__ import annotations

import base64
import gc
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from io import FileIO
from pathlib import Path
from typing import Any

import msgspec
import orjson
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from sopgym.core.exceptions import DataError
from sopgym.types import JSON

_ID_KEYS = ("traceId", "spanId", "parentSpanId")
_KIND_NAMES = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
STATUS_ERROR = 2


# ---- protobuf <-> OTLP JSON ----
def _rewrite_ids(document: JSON, convert: Any) -> JSON:
    for resource_spans in document.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            for span in scope_spans.get("spans", ()):
                for key in _ID_KEYS:
                    if span.get(key):
                        span[key] = convert(span[key])
                for link in span.get("links", ()):
                    for key in ("traceId", "spanId"):
                        if link.get(key):
                            link[key] = convert(link[key])
    return document


def _b64_to_hex(value: str) -> str:
    return base64.b64decode(value).hex()


def _hex_to_b64(value: str) -> str:
    return base64.b64encode(bytes.fromhex(value)).decode()


def request_to_json(request: ExportTraceServiceRequest) -> JSON:
    """An export request (or ``TracesData``: same fields) as an OTLP JSON object.

    Written out by hand rather than with ``json_format.MessageToDict``, which walks message
    descriptors generically and costs the collector several times more CPU per span; the
    tests hold the two to the same output.
    """
    resource_spans = []
    for rs in request.resource_spans:
        item: JSON = {}
        if rs.HasField("resource"):
            item["resource"] = _resource(rs.resource)
        item["scopeSpans"] = [_scope_spans(ss) for ss in rs.scope_spans]
        if rs.schema_url:
            item["schemaUrl"] = rs.schema_url
        resource_spans.append(item)
    return {"resourceSpans": resource_spans} if resource_spans else {}


def _resource(resource: Any) -> JSON:
    out: JSON = {}
    if resource.attributes:
        out["attributes"] = _key_values(resource.attributes)
    if resource.dropped_attributes_count:
        out["droppedAttributesCount"] = resource.dropped_attributes_count
    return out


def _scope_spans(scope_spans: Any) -> JSON:
    scope = scope_spans.scope
    scope_json: JSON = {}
    if scope.name:
        scope_json["name"] = scope.name
    if scope.version:
        scope_json["version"] = scope.version
    if scope.attributes:
        scope_json["attributes"] = _key_values(scope.attributes)
    out: JSON = {"scope": scope_json} if scope_spans.HasField("scope") else {}
    out["spans"] = [_span(span) for span in scope_spans.spans]
    if scope_spans.schema_url:
        out["schemaUrl"] = scope_spans.schema_url
    return out


def _span(span: Any) -> JSON:
    out: JSON = {}  # proto3 JSON: fields at their default value are left out
    if span.trace_id:
        out["traceId"] = span.trace_id.hex()
    if span.span_id:
        out["spanId"] = span.span_id.hex()
    if span.trace_state:
        out["traceState"] = span.trace_state
    if span.parent_span_id:
        out["parentSpanId"] = span.parent_span_id.hex()
    if span.flags:
        out["flags"] = span.flags
    if span.name:
        out["name"] = span.name
    if span.kind:
        out["kind"] = span.kind
    if span.start_time_unix_nano:
        out["startTimeUnixNano"] = str(span.start_time_unix_nano)
    if span.end_time_unix_nano:
        out["endTimeUnixNano"] = str(span.end_time_unix_nano)
    if span.attributes:
        out["attributes"] = _key_values(span.attributes)
    if span.dropped_attributes_count:
        out["droppedAttributesCount"] = span.dropped_attributes_count
    if span.events:
        out["events"] = [_event(e) for e in span.events]
    if span.dropped_events_count:
        out["droppedEventsCount"] = span.dropped_events_count
    if span.links:
        out["links"] = [_link(link) for link in span.links]
    if span.dropped_links_count:
        out["droppedLinksCount"] = span.dropped_links_count
    if span.HasField("status"):
        status: JSON = {}
        if span.status.message:
            status["message"] = span.status.message
        if span.status.code:
            status["code"] = span.status.code
        out["status"] = status
    return out


def _event(event: Any) -> JSON:
    out: JSON = {}
    if event.time_unix_nano:
        out["timeUnixNano"] = str(event.time_unix_nano)
    if event.name:
        out["name"] = event.name
    if event.attributes:
        out["attributes"] = _key_values(event.attributes)
    if event.dropped_attributes_count:
        out["droppedAttributesCount"] = event.dropped_attributes_count
    return out


def _link(link: Any) -> JSON:
    out: JSON = {}
    if link.trace_id:
        out["traceId"] = link.trace_id.hex()
    if link.span_id:
        out["spanId"] = link.span_id.hex()
    if link.trace_state:
        out["traceState"] = link.trace_state
    if link.attributes:
        out["attributes"] = _key_values(link.attributes)
    if link.dropped_attributes_count:
        out["droppedAttributesCount"] = link.dropped_attributes_count
    if link.flags:
        out["flags"] = link.flags
    return out


def _key_values(items: Any) -> list[JSON]:
    return [{"key": kv.key, "value": _any_value(kv.value)} for kv in items]


def _any_value(value: Any) -> JSON:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return {"stringValue": value.string_value}
    if kind == "int_value":
        return {"intValue": str(value.int_value)}
    if kind == "bool_value":
        return {"boolValue": value.bool_value}
    if kind == "double_value":
        return {"doubleValue": _double(value.double_value)}
    if kind == "array_value":
        return {"arrayValue": _values(value.array_value.values)}
    if kind == "kvlist_value":
        return {"kvlistValue": _values(value.kvlist_value.values, keyed=True)}
    if kind == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode()}
    return {}


def _values(items: Any, keyed: bool = False) -> JSON:
    if not items:
        return {}
    return {"values": _key_values(items) if keyed else [_any_value(v) for v in items]}


def _double(value: float) -> float | str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def json_to_request(document: JSON) -> ExportTraceServiceRequest:
    """Parse OTLP JSON (hex ids) into a protobuf request; raises ``ParseError`` if invalid.

    The stock protobuf JSON parser reads ``bytes`` fields as base64, so the hex ids are
    translated first, as every OTLP/JSON receiver does.
    """
    copy = orjson.loads(orjson.dumps({"resourceSpans": document.get("resourceSpans", [])}))
    request = ExportTraceServiceRequest()
    json_format.ParseDict(_rewrite_ids(copy, _hex_to_b64), request)
    return request


# ---- the evaluator's view of a span ----
class SpanRecord(msgspec.Struct, gc=False):
    """One span as the evaluator and the viewer read it: ids in hex, times in ns, attributes as
    a plain dict. (A msgspec struct: built natively, with no Python ``__init__``, per span.)"""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: JSON
    status: int
    service: str
    scope: str
    raw_events: list[_Event] = []

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6

    def events(self) -> list[tuple[str, JSON]]:
        """Span events, their attributes decoded on demand (scoring never needs them)."""
        return [(e.name, _attributes(e.attributes)) for e in self.raw_events]


# The OTLP JSON document, typed for msgspec: decoding a line straight into these structs skips
# every field the evaluator does not read (flags, links, resource and scope extras) and builds
# no dict per attribute; a document of another shape is a ValidationError that says where.
# Values may be written either way the protobuf JSON mapping allows (64-bit integers as text or
# numbers, enums as numbers or names, doubles as numbers or "NaN" / "Infinity").
class _AnyValue(msgspec.Struct, gc=False):
    stringValue: str | None = None
    intValue: int | str | None = None
    boolValue: bool | None = None
    doubleValue: float | str | None = None
    arrayValue: _ArrayValue | None = None
    kvlistValue: _KeyValueList | None = None
    bytesValue: str | None = None  # base64 text, kept as such


class _ArrayValue(msgspec.Struct, gc=False):
    values: list[_AnyValue] = []


class _KeyValue(msgspec.Struct, gc=False):
    key: str
    value: _AnyValue | None = None


class _KeyValueList(msgspec.Struct, gc=False):
    values: list[_KeyValue] = []


class _Event(msgspec.Struct, gc=False):
    name: str = ""
    attributes: list[_KeyValue] = []


class _Status(msgspec.Struct, gc=False):
    code: int | str = 0


class _Span(msgspec.Struct, gc=False):
    traceId: str = ""
    spanId: str = ""
    parentSpanId: str = ""
    name: str = ""
    kind: int | str = 0
    startTimeUnixNano: int | str = 0
    endTimeUnixNano: int | str = 0
    attributes: list[_KeyValue] = []
    status: _Status | None = None
    events: list[_Event] = []


class _Scope(msgspec.Struct, gc=False):
    name: str = ""


class _ScopeSpans(msgspec.Struct, gc=False):
    scope: _Scope | None = None
    spans: list[_Span] = []


class _Resource(msgspec.Struct, gc=False):
    attributes: list[_KeyValue] = []


class _ResourceSpans(msgspec.Struct, gc=False):
    resource: _Resource | None = None
    scopeSpans: list[_ScopeSpans] = []


class _Traces(msgspec.Struct, gc=False):
    resourceSpans: list[_ResourceSpans] = []


class _Document(msgspec.Struct, gc=False):
    """``TracesData`` / an export request, or a Jaeger v3 answer (``{"result": TracesData}``)."""

    resourceSpans: list[_ResourceSpans] = []
    result: _Traces | None = None


_DECODER = msgspec.json.Decoder(_Document)


def _value(value: _AnyValue | None) -> Any:
    if value is None:
        return None
    if value.stringValue is not None:
        return value.stringValue
    if value.intValue is not None:
        return int(value.intValue)
    if value.boolValue is not None:
        return value.boolValue
    if value.doubleValue is not None:
        return float(value.doubleValue)
    if value.arrayValue is not None:  # (of strings, mostly: tool catalogs of hundreds)
        return [
            v.stringValue if v.stringValue is not None else _value(v)
            for v in value.arrayValue.values
        ]
    if value.kvlistValue is not None:
        return _attributes(value.kvlistValue.values)
    return value.bytesValue


def _attributes(items: list[_KeyValue]) -> JSON:
    return {  # (most values are strings: read without a call to _value)
        item.key: text
        if (value := item.value) is not None and (text := value.stringValue) is not None
        else _value(value)
        for item in items
    }


def _hex_id(value: str) -> str:
    # OTLP JSON ids are hex (32 / 16 chars); plain protobuf JSON would carry base64 instead
    return value if not value or len(value) in (32, 16) else _b64_to_hex(value)


class TraceFormatError(DataError, ValueError):
    """Trace data that is not OTLP JSON traces; the message says where."""


@dataclass
class SpanBatch:
    """Spans read from a trace source; spans of scopes the reader was not asked for are
    counted (``skipped``) but never decoded."""

    spans: list[SpanRecord] = field(default_factory=list)
    skipped: int = 0

    @property
    def total(self) -> int:
        return len(self.spans) + self.skipped


def spans_of(
    document: JSON, scopes: frozenset[str] | None = None, batch: SpanBatch | None = None
) -> SpanBatch:
    """The spans of one ``TracesData`` / export request / Jaeger v3 response object (only
    those of ``scopes``, when given; spans of an unnamed scope are always kept)."""
    return _records(msgspec.convert(document, _Document), scopes, batch or SpanBatch())


def _records(document: _Document, scopes: frozenset[str] | None, batch: SpanBatch) -> SpanBatch:
    append = batch.spans.append
    traces = document.result.resourceSpans if document.result else document.resourceSpans
    for resource_spans in traces:
        service = ""
        for item in resource_spans.resource.attributes if resource_spans.resource else ():
            if item.key == "service.name":  # (the last one counts, as in a dict)
                service = str(_value(item.value))
        for scope_spans in resource_spans.scopeSpans:
            scope = scope_spans.scope.name if scope_spans.scope else ""
            spans = scope_spans.spans
            if scopes is not None and scope and scope not in scopes:
                batch.skipped += len(spans)
                continue
            for span in spans:
                kind, status = span.kind, span.status
                code = status.code if status is not None else 0
                trace_id, span_id, parent_id = span.traceId, span.spanId, span.parentSpanId
                append(
                    SpanRecord(  # (ids are hex as written: checked here, converted rarely)
                        trace_id if len(trace_id) == 32 else _hex_id(trace_id),
                        span_id if len(span_id) == 16 else _hex_id(span_id),
                        parent_id if len(parent_id) == 16 else _hex_id(parent_id),
                        span.name,
                        kind if kind.__class__ is int else _KIND_NAMES.get(kind, 0),  # type: ignore[arg-type]
                        int(span.startTimeUnixNano),
                        int(span.endTimeUnixNano),
                        _attributes(span.attributes),
                        code if code.__class__ is int else _STATUS_NAMES.get(code, 0),  # type: ignore[arg-type]
                        service,
                        scope,
                        span.events,
                    )
                )
    return batch


# ---- trace files ----
_NOT_SPACE = re.compile(rb"\S")
_SCOPE_MARK = b'"scopeSpans":[{"scope":{"name":"'
_SPAN_MARK = b'"startTimeUnixNano"'


def _lines(data: bytes | bytearray, size: int) -> list[tuple[int, int]]:
    """(start, end) of every non-blank line of ``data[:size]``, without copying the lines."""
    spans, start = [], 0
    while start < size:
        end = data.find(b"\n", start, size)
        if end < 0:
            end = size
        # a line is blank only if all whitespace (checked, with a copy, only when it starts so)
        if end > start and (not data[start : start + 1].isspace() or data[start:end].strip()):
            spans.append((start, end))
        start = end + 1
    return spans


def read_batch(
    data: bytes, scopes: frozenset[str] | None = None, batch: SpanBatch | None = None
) -> SpanBatch:
    """Spans of one trace file's bytes: one (pretty-printed) document, or JSON lines.

    The collector writes one line per instrumentation scope, so lines of scopes not asked for
    are counted and skipped without being parsed (or copied). A torn last line (a writer
    killed mid-write, so no newline ends it) is skipped; any other line that is not OTLP JSON
    is a :class:`TraceFormatError`, never silently left out of the scores.
    """
    batch = batch if batch is not None else SpanBatch()
    if not data or data.isspace():  # (isspace stops at the first other byte; strip copies)
        return batch
    if not _is_json_lines(data):
        try:
            _add_document(data, scopes, batch, None)
        except orjson.JSONDecodeError:
            pass  # read line by line below, which names the line that is not JSON
        else:
            return batch
    _read_lines(data, len(data), scopes, batch, 0, last=True)
    return batch


def _read_lines(
    data: bytes | bytearray,
    size: int,
    scopes: frozenset[str] | None,
    batch: SpanBatch,
    before: int,
    last: bool,
) -> int:
    """Read the JSON lines of ``data[:size]``, numbered on from ``before`` (the lines already
    read from the same file); ``last``: they end the file, so the last one may be torn.
    Returns the number of the last line read."""
    wanted = {scope.encode() for scope in scopes} if scopes is not None else None
    lines = _lines(data, size)
    with memoryview(data) as view:
        for number, (start, end) in enumerate(lines, before + 1):
            if wanted is not None:
                at = data.find(_SCOPE_MARK, start, end)
                if at >= 0:
                    name_at = at + len(_SCOPE_MARK)
                    scope = bytes(view[name_at : data.find(b'"', name_at, end)])
                    # skipped unparsed only if the line holds that one scope, as collector
                    # lines do: any later "scope" (a second scope of the same resource, or
                    # another resource's) means the line is decoded (a string value "scope"
                    # only costs that)
                    if scope not in wanted and data.find(b'"scope"', name_at, end) < 0:
                        batch.skipped += data.count(_SPAN_MARK, start, end)
                        continue
            try:
                _add_document(view[start:end], scopes, batch, number)
            except orjson.JSONDecodeError as error:
                torn = last and number == before + len(lines) and data[size - 1] != ord("\n")
                if torn:
                    break
                raise TraceFormatError(f"line {number} is not JSON: {error}") from None
    return before + len(lines)


# A trace store is read in blocks of whole lines into one buffer, reused: a block at a time
# stays in the CPU's caches while its lines are found, counted and decoded, and neither the
# whole file nor each block is copied (for a store of hundreds of MB, copying the blocks cost
# a tenth of the whole evaluation).
_BLOCK = 1 << 22


def _read_file(path: Path, scopes: frozenset[str] | None, batch: SpanBatch) -> None:
    with path.open("rb", buffering=0) as file:
        buffer = bytearray(_BLOCK)
        filled = _fill(file, buffer, 0)
        if filled < _BLOCK or not _is_json_lines(buffer):  # small, or one whole document
            read_batch(bytes(buffer[:filled]) + file.read(), scopes, batch)
            return
        number = 0
        while True:
            cut = buffer.rfind(b"\n", 0, filled) + 1
            if cut:  # the whole lines read so far; the rest moves to the front
                number = _read_lines(buffer, cut, scopes, batch, number, last=False)
                buffer[: filled - cut] = buffer[cut:filled]
                filled -= cut
            elif filled == len(buffer):  # a line longer than the buffer: room for more
                buffer.extend(bytes(len(buffer)))
            more = _fill(file, buffer, filled)
            if more == filled:
                break
            filled = more
        _read_lines(buffer, filled, scopes, batch, number, last=True)


def _fill(file: FileIO, buffer: bytearray, filled: int) -> int:
    """Read into ``buffer`` after its first ``filled`` bytes, up to its end or the file's;
    returns how much of it is filled now."""
    with memoryview(buffer) as view:
        while filled < len(buffer):
            got = file.readinto(view[filled:])
            if not got:
                break
            filled += got
    return filled


def _is_json_lines(data: bytes | bytearray) -> bool:
    """Whether ``data`` is JSON lines, known from its first line: a whole JSON object with
    more lines after it (a pretty-printed document's first line is no object). Asked first:
    parsing a large store as one document only to see it fail still reads all of it."""
    first = _NOT_SPACE.search(data)
    start = first.start() if first else 0
    end = data.find(b"\n", start)
    if end < 0 or _NOT_SPACE.search(data, end) is None:  # one line: the document itself
        return False
    try:
        return isinstance(orjson.loads(memoryview(data)[start:end]), dict)
    except orjson.JSONDecodeError:
        return False


def _add_document(
    text: bytes | memoryview, scopes: frozenset[str] | None, batch: SpanBatch, line: int | None
) -> None:
    """Decode one OTLP JSON document (``line``: its line number; ``None``: the whole text)
    straight into its structs and add its spans to ``batch``. JSON of another shape (or a
    time that is no number) is a :class:`TraceFormatError`; text that is no JSON at all
    raises orjson's error, which says where in the text (asked only once msgspec has refused
    it, so never on the way of a good line)."""
    try:
        _records(_DECODER.decode(text), scopes, batch)
    except (TypeError, ValueError) as error:  # (msgspec's DecodeError is a ValueError)
        if isinstance(error, msgspec.DecodeError):
            orjson.loads(text)
        where = "the document" if line is None else f"line {line}"
        raise TraceFormatError(f"{where} is not OTLP JSON traces ({error})") from None


@contextmanager
def paused_gc() -> Iterator[None]:
    """Bulk loading without the cyclic garbage collector.

    Parsed JSON and span records are acyclic (reference counting frees them), but hundreds of
    thousands of new containers trigger full collections that rescan everything retained so
    far: measured, that made parsing a trace store several times slower. On the way out, what
    was built meanwhile goes straight to the oldest generation (``freeze`` then ``unfreeze``
    moves every tracked object there): left young, the first collection after would scan all
    of it at once (measured: 30-40 ms per 200,000 spans read or scored) only to promote it.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def read_spans(paths: Iterable[Path], scopes: frozenset[str] | None = None) -> SpanBatch:
    """The spans in the given trace files (of ``scopes`` only, when given)."""
    batch = SpanBatch()
    with paused_gc():
        for path in paths:
            try:
                _read_file(path, scopes, batch)
            except TraceFormatError as error:
                raise TraceFormatError(f"{path}: {error}") from None
    return batch

"""OTLP protobuf encoding of finished spans, written straight to the wire format.

The SDK's encoder builds a protobuf message object per span, per attribute and per value
before serialising them; on the gateway and tool services that costs more CPU per span than
handling the request did. This module writes the same ``ExportTraceServiceRequest`` bytes
directly (the tests parse both encodings and compare the messages), and
:class:`OTLPSpanExporter` is the SDK's OTLP/HTTP exporter with only the encoding swapped, so
endpoint, headers, compression, timeouts and retries still follow the standard ``OTEL_*``
variables.
"""

from __future__ import annotations

import logging
import struct
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.http import trace_exporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import SpanKind

log = logging.getLogger("sopgym.observability")
_SMALL = [bytes([n]) for n in range(128)]
_KIND = {
    SpanKind.INTERNAL: b"\x30\x01",
    SpanKind.SERVER: b"\x30\x02",
    SpanKind.CLIENT: b"\x30\x03",
    SpanKind.PRODUCER: b"\x30\x04",
    SpanKind.CONSUMER: b"\x30\x05",
}
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200
_pack_u64 = struct.Struct("<Q").pack
_pack_u32 = struct.Struct("<I").pack
_pack_f64 = struct.Struct("<d").pack


def _varint(n: int) -> bytes:
    if n < 128:
        return _SMALL[n]
    out = bytearray()
    while n > 127:
        out.append((n & 127) | 128)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field (``tag`` already encoded)."""
    return tag + _varint(len(payload)) + payload


def _text(tag: bytes, value: str) -> bytes:
    return _field(tag, value.encode())


def _any(value: Any) -> bytes:
    """An ``AnyValue`` message body."""
    kind = type(value)
    if kind is str:
        return _text(b"\x0a", value)
    if kind is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if kind is int:
        return b"\x18" + _varint(value & 0xFFFFFFFFFFFFFFFF)  # int64: two's complement
    if kind is float:
        return b"\x21" + _pack_f64(value)
    if value is None:
        return b""
    if isinstance(value, bool):
        return _any(bool(value))
    if isinstance(value, str):
        return _any(str(value))
    if isinstance(value, int):
        return _any(int(value))
    if isinstance(value, float):
        return _any(float(value))
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        return _field(b"\x2a", b"".join(_field(b"\x0a", _any(v)) for v in value))
    if isinstance(value, Mapping):
        return _field(b"\x32", _key_values(b"\x0a", value))
    raise TypeError(f"cannot encode attribute value of type {kind.__name__}")


_KEYS: dict[str, bytes] = {}  # attribute keys repeat on every span: encode each once


def _key_values(tag: bytes, attributes: Mapping[str, Any] | None) -> bytes:
    if not attributes:
        return b""
    out = []
    for key, value in attributes.items():
        encoded_key = _KEYS.get(key)
        if encoded_key is None:
            encoded_key = _KEYS[key] = _text(b"\x0a", str(key)) + b"\x12"
            if len(_KEYS) > 4096:
                _KEYS.clear()
        encoded = _any(value)
        pair = encoded_key + _varint(len(encoded)) + encoded
        out.append(tag + _varint(len(pair)) + pair)
    return b"".join(out)


def _flags(parent: Any) -> bytes:
    flags = _HAS_IS_REMOTE | (_IS_REMOTE if parent is not None and parent.is_remote else 0)
    return b"\x85\x01" + _pack_u32(flags)


def _trace_state(tag: bytes, context: Any) -> bytes:
    state = context.trace_state
    if not state:
        return b""
    return _text(tag, ",".join(f"{k}={v}" for k, v in state.items()))


def _span(span: ReadableSpan) -> bytes:
    context, parent = span.context, span.parent
    parts = [
        b"\x0a\x10" + context.trace_id.to_bytes(16, "big"),
        b"\x12\x08" + context.span_id.to_bytes(8, "big"),
        _trace_state(b"\x1a", context),
    ]
    if parent is not None:
        parts.append(b"\x22\x08" + parent.span_id.to_bytes(8, "big"))
    if span.name:
        parts.append(_text(b"\x2a", span.name))
    parts += [
        _KIND[span.kind],
        b"\x39" + _pack_u64(span.start_time or 0),
        b"\x41" + _pack_u64(span.end_time or 0),
        _key_values(b"\x4a", span.attributes),
    ]
    if span.dropped_attributes:
        parts.append(b"\x50" + _varint(span.dropped_attributes))
    for event in span.events:
        body = b"\x09" + _pack_u64(event.timestamp)
        if event.name:
            body += _text(b"\x12", event.name)
        body += _key_values(b"\x1a", event.attributes)
        parts.append(_field(b"\x5a", body))
    if span.dropped_events:
        parts.append(b"\x60" + _varint(span.dropped_events))
    for link in span.links:
        body = b"\x0a\x10" + link.context.trace_id.to_bytes(16, "big")
        body += b"\x12\x08" + link.context.span_id.to_bytes(8, "big")
        body += _trace_state(b"\x1a", link.context) + _key_values(b"\x22", link.attributes)
        parts.append(_field(b"\x6a", body + b"\x35" + _flags(link.context)[2:]))
    if span.dropped_links:
        parts.append(b"\x70" + _varint(span.dropped_links))
    status = span.status
    body = _text(b"\x12", status.description) if status.description else b""
    if status.status_code.value:
        body += b"\x18" + _varint(status.status_code.value)
    parts.append(_field(b"\x7a", body))
    parts.append(_flags(parent))
    return b"".join(parts)


def encode_request(spans: Sequence[ReadableSpan]) -> bytes:
    """The serialised ``ExportTraceServiceRequest`` for ``spans``, grouped by resource and
    instrumentation scope like the SDK's encoder does."""
    # keyed by identity: a Resource hashes by serialising its attributes to JSON
    groups: defaultdict[int, defaultdict[int, list[bytes]]] = defaultdict(lambda: defaultdict(list))
    objects: dict[int, Any] = {}
    for span in spans:
        resource, scope = span.resource, span.instrumentation_scope
        objects[id(resource)], objects[id(scope)] = resource, scope
        groups[id(resource)][id(scope)].append(_field(b"\x12", _span(span)))
    out = []
    for resource_id, scopes in groups.items():
        resource = objects[resource_id]
        body = _field(b"\x0a", _key_values(b"\x0a", resource.attributes))
        for scope_id, encoded in scopes.items():
            scope = objects[scope_id]
            scope_body = b""
            if scope is not None:
                scope_body = (
                    (_text(b"\x0a", scope.name) if scope.name else b"")
                    + (_text(b"\x12", scope.version) if scope.version else b"")
                    + _key_values(b"\x1a", scope.attributes)
                )
            scope_spans = _field(b"\x0a", scope_body) + b"".join(encoded)
            if scope is not None and scope.schema_url:
                scope_spans += _text(b"\x1a", scope.schema_url)
            body += _field(b"\x12", scope_spans)
        if resource.schema_url:
            body += _text(b"\x1a", resource.schema_url)
        out.append(_field(b"\x0a", body))
    return b"".join(out)


class OTLPSpanExporter(trace_exporter.OTLPSpanExporter):
    """The SDK's OTLP/HTTP span exporter, encoding with :func:`encode_request`.

    It reuses the SDK exporter's HTTP client (transport, retries, compression, its own
    metrics); should a future SDK rename those internals, it falls back to the SDK's export.
    """

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        client, metrics = getattr(self, "_client", None), getattr(self, "_metrics", None)
        if client is None or metrics is None or getattr(self, "_shutdown", True):
            return super().export(spans)
        with metrics.export_operation(len(spans)) as result:
            try:
                payload = encode_request(spans)
            except Exception as error:  # one bad attribute must not lose the whole batch
                log.warning("fast OTLP encoding failed (%s); using the SDK encoder", error)
                return super().export(spans)
            outcome = client.export(payload)
            if not outcome.success:
                result.error = outcome.error
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

"""OTLP protobuf encoding of finished spans, written straight to the wire format.

The SDK's encoder builds a protobuf message object per span, per attribute and per value
before serialising them; on the gateway and tool services that costs more CPU per span than
handling the request did. This module writes the same ``ExportTraceServiceRequest`` bytes
directly (the tests parse both encodings and compare the messages), and
:class:`OTLPSpanExporter` posts it over OTLP/HTTP following the standard ``OTEL_*`` variables
(endpoint, headers, compression, timeout, retries), on public APIs only: the SDK's exporter
offers no public way to swap its encoder. ``bench/bench_otlp_codecs.py`` holds the encoder to
the SDK's, CPU per span, side by side.
"""

from __future__ import annotations

import gzip
import logging
import os
import struct
import threading
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import trace_exporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

from sopgym.core.keepalive import HttpTransport, TransportError, direct_http

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


# the OTLP exporter variables (the Python SDK's reading: the timeout in seconds)
_ENV = "OTEL_EXPORTER_OTLP_TRACES_{0}", "OTEL_EXPORTER_OTLP_{0}"
_TLS = ("CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE")
_TRANSIENT = frozenset({408, 429, 502, 503, 504})


def _env(name: str) -> str | None:
    return next((os.environ[k.format(name)] for k in _ENV if os.environ.get(k.format(name))), None)


def _headers(text: str | None) -> dict[str, str]:
    pairs = (item.split("=", 1) for item in (text or "").split(",") if "=" in item)
    return {unquote(k).strip().lower(): unquote(v).strip() for k, v in pairs}


class OTLPSpanExporter(SpanExporter):
    """OTLP/HTTP protobuf span exporter over :func:`encode_request`, on public APIs only.

    It follows the standard ``OTEL_EXPORTER_OTLP_[TRACES_]`` variables (endpoint, headers,
    timeout, gzip compression) and retries a transient refusal (408, 429, 502-504, a refused
    connection) with exponential backoff until the export's timeout, as the SDK's exporter
    does; shutdown ends a retry wait at once. A TLS client setting (certificate, client key)
    hands the whole export to the SDK's exporter, which supports them.

    To a plain ``http://`` receiver that no proxy is configured for, the request goes out on
    one kept connection (:class:`~sopgym.core.keepalive.HttpTransport`; the span processor
    exports one batch at a time): an agent worker sends its spans after every few episodes,
    and httpx's own work per request (~0.27 ms of CPU) was a fifth of what tracing added to a
    model call. Anything else goes through httpx.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        compression: str | None = None,
    ) -> None:
        self._sdk: SpanExporter | None = None
        if any(_env(name) for name in _TLS):
            self._sdk = trace_exporter.OTLPSpanExporter(endpoint=endpoint, headers=headers)
        base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")
        self.endpoint = (
            endpoint
            or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            or f"{base.rstrip('/')}/v1/traces"
        )
        self.headers = {
            **_headers(_env("HEADERS")),
            **(headers or {}),
            "content-type": "application/x-protobuf",
        }
        self.timeout = timeout if timeout is not None else float(_env("TIMEOUT") or 10)
        self.gzip = (compression or _env("COMPRESSION") or "none").lower() == "gzip"
        if self.gzip:
            self.headers["content-encoding"] = "gzip"
        self._http = httpx.Client(timeout=self.timeout)
        self._direct: HttpTransport | None = None
        if direct_http(self.endpoint):
            parts = urlsplit(self.endpoint)
            self._direct = HttpTransport(f"http://{parts.netloc}", self.timeout, per_thread=False)
            self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._stopping = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._sdk is not None:
            return self._sdk.export(spans)
        if self._stopping.is_set():
            return SpanExportResult.FAILURE
        try:
            payload = encode_request(spans)
        except Exception as error:  # one bad attribute must not lose the whole batch
            log.warning("fast OTLP encoding failed (%s); using the SDK encoder", error)
            payload = encode_spans(spans).SerializePartialToString()
        if self.gzip:
            payload = gzip.compress(payload)
        deadline, delay = time.monotonic() + self.timeout, 1.0
        while True:
            left = max(deadline - time.monotonic(), 0.01)
            try:
                status, why = self._post(payload, left)
            except (httpx.TransportError, *TransportError) as error:
                status, why = None, str(error)
            except ValueError as error:  # a header the request head cannot carry
                log.warning("OTLP export to %s refused: %s", self.endpoint, error)
                return SpanExportResult.FAILURE
            if status is not None and 200 <= status < 300:
                return SpanExportResult.SUCCESS
            retry = status is None or status in _TRANSIENT
            if not retry or delay > deadline - time.monotonic() or self._stopping.wait(delay):
                log.warning("OTLP export to %s failed: %s %s", self.endpoint, status, why)
                return SpanExportResult.FAILURE
            delay *= 2

    def _post(self, payload: bytes, timeout: float) -> tuple[int, str]:
        """One attempt: the receiver's status and the start of what it said."""
        if self._direct is not None:
            reply = self._direct.request(
                "POST", self._path, self.headers, content=payload, timeout=timeout
            )
            return reply.status, reply.text[:200]
        response = self._http.post(
            self.endpoint, content=payload, headers=self.headers, timeout=timeout
        )
        return response.status_code, response.text[:200]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # nothing is buffered here (the span processor holds the batches)

    def shutdown(self) -> None:
        if self._sdk is not None:
            self._sdk.shutdown()
        self._stopping.set()
        self._http.close()
        if self._direct is not None:
            self._direct.close()

"""``sopgym collector``: a minimal OTLP/HTTP trace receiver that writes a run's trace store.

It accepts ``POST /v1/traces`` with an ``ExportTraceServiceRequest`` (protobuf, or OTLP JSON;
optionally gzip/deflate-encoded) and appends it to
``<out>/otlp-<start>-<pid>.jsonl`` as OTLP JSON lines, one ``TracesData`` per instrumentation
scope. Each line is written with a single ``write()`` on an
``O_APPEND`` descriptor before the exporter gets its 200, so a span the exporter saw accepted
is on disk. ``POST /v1/logs`` (log records: evaluation results, when asked for) is stored
the same way under ``<out>/logs/``. ``--forward URL`` also relays every trace request,
unchanged, to another OTLP/HTTP endpoint (an OpenTelemetry Collector or Jaeger) so the same
spans can be inspected there.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import zlib
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from sopgym.asgi import BodyTooLarge, ClientDisconnected, Receive, Send, read_body, respond
from sopgym.core.exceptions import MalformedRequest
from sopgym.observability.otlp import json_to_request, request_to_json

log = logging.getLogger("sopgym.collector")
PROTOBUF = b"application/x-protobuf"
JSON_TYPE = b"application/json"
JSON_HEADER, PROTOBUF_HEADER = (b"content-type", JSON_TYPE), (b"content-type", PROTOBUF)
MAX_BODY = 64 * 1024 * 1024


class BadRequest(MalformedRequest):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Collector:
    """The receiver as a raw ASGI app (serve it with uvicorn)."""

    def __init__(self, out_dir: Path, forward: list[str] | None = None) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        self.path = out_dir / f"otlp-{stamp}-{os.getpid()}.jsonl"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.forward = list(forward or [])
        self.requests = self.spans = 0
        self._relay: Any = None
        self._log_fd: int | None = None  # logs-*.jsonl, opened with the first log record

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "websocket":
            # There is no websocket route: refuse the handshake (uvicorn answers 403). Returning
            # without a word made uvicorn log an error and answer 500 to any upgrade request.
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"].rstrip("/"), scope["method"]
        headers = dict(scope["headers"])
        # media types and content codings are case-insensitive (RFC 9110)
        content_type = headers.get(b"content-type", PROTOBUF).split(b";")[0].strip().lower()
        try:
            if path in ("/healthz", "/readyz") and method == "GET":
                body = orjson.dumps(
                    {"status": "ok", "requests": self.requests, "spans": self.spans}
                )
                await respond(send, 200, body, JSON_HEADER)
                return
            if path not in ("/v1/traces", "/v1/logs"):
                raise BadRequest(404, f"no route {path}")
            if method != "POST":
                raise BadRequest(405, "use POST")
            if path == "/v1/logs":
                await self._logs(receive, send, headers, content_type)
                return
            try:
                body = await read_body(receive, MAX_BODY)
            except BodyTooLarge as error:
                raise BadRequest(413, str(error)) from None
            except ClientDisconnected:  # a prefix: its spans would come again, whole, on retry
                return
            raw = _decode(body, headers.get(b"content-encoding", b"").strip().lower())
            request = _parse(raw, content_type)
            _check_ids(request)
            self._store(request)
            if self.forward:
                self._relay_later(request.SerializeToString())
        except BadRequest as error:
            await respond(send, error.status, orjson.dumps({"message": str(error)}), JSON_HEADER)
            return
        if content_type == JSON_TYPE:
            await respond(send, 200, b"{}", JSON_HEADER)
        else:
            reply = ExportTraceServiceResponse().SerializeToString()
            await respond(send, 200, reply, PROTOBUF_HEADER)

    async def _logs(
        self, receive: Receive, send: Send, headers: dict[bytes, bytes], content_type: bytes
    ) -> None:
        """``POST /v1/logs``: an ``ExportLogsServiceRequest`` (evaluation results as log
        records, :mod:`sopgym.observability.evaluation_logs`) appended as one OTLP JSON line to
        ``logs/otlp-<start>-<pid>.jsonl`` in the trace store's folder."""
        try:
            body = await read_body(receive, MAX_BODY)
        except BodyTooLarge as error:
            raise BadRequest(413, str(error)) from None
        except ClientDisconnected:
            return
        raw = _decode(body, headers.get(b"content-encoding", b"").strip().lower())
        request = ExportLogsServiceRequest()
        try:
            if content_type == JSON_TYPE:
                json_format.Parse(raw, request)
            else:
                request.ParseFromString(raw)
        except (DecodeError, json_format.ParseError) as error:
            raise BadRequest(400, f"not an OTLP logs request: {error}") from None
        if request.resource_logs:
            line = json_format.MessageToJson(request, indent=None).encode()
            os.write(self._logs_fd(), line + b"\n")
        if content_type == JSON_TYPE:
            await respond(send, 200, b"{}", JSON_HEADER)
        else:
            reply = ExportLogsServiceResponse().SerializeToString()
            await respond(send, 200, reply, PROTOBUF_HEADER)

    def _logs_fd(self) -> int:
        if self._log_fd is None:
            # a folder of their own: the trace readers take every *.json* file of the store
            folder = self.path.parent / "logs"
            folder.mkdir(exist_ok=True)
            path = folder / self.path.name
            self._log_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._log_fd

    def _store(self, request: ExportTraceServiceRequest) -> None:
        count = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
        if not count:
            return
        os.write(self._fd, b"".join(orjson.dumps(d) + b"\n" for d in per_scope(request)))
        self.requests += 1
        self.spans += count

    def _relay_later(self, payload: bytes) -> None:
        import httpx

        if self._relay is None:
            self._relay = httpx.AsyncClient(timeout=10.0)

        async def relay(url: str) -> None:
            try:
                await self._relay.post(
                    url, content=payload, headers={"content-type": "application/x-protobuf"}
                )
            except Exception as error:  # a forward target's trouble never fails the run
                log.warning("forwarding spans to %s failed: %s", url, error)

        for url in self.forward:
            asyncio.get_running_loop().create_task(relay(url))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._relay is not None:
                    await self._relay.aclose()
                os.close(self._fd)
                if self._log_fd is not None:
                    os.close(self._log_fd)
                await send({"type": "lifespan.shutdown.complete"})
                return


def per_scope(request: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    """The request as one ``TracesData`` per (resource, instrumentation scope): each line of
    the store then names a single scope near its start, so readers can skip the scopes they
    do not need without parsing them."""
    documents = []
    for resource_spans in request_to_json(request).get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            if scope_spans.get("spans"):
                documents.append(
                    {"resourceSpans": [{**resource_spans, "scopeSpans": [scope_spans]}]}
                )
    return documents


def _decode(body: bytes, encoding: bytes) -> bytes:
    if encoding == b"gzip":
        return _inflate(body, 16 + zlib.MAX_WBITS, members=True)
    if encoding == b"deflate":
        return _inflate(body, zlib.MAX_WBITS, members=False)
    if encoding not in (b"", b"identity"):
        raise BadRequest(415, f"unsupported content-encoding {encoding.decode(errors='replace')}")
    return body


def _inflate(body: bytes, wbits: int, members: bool) -> bytes:
    """``body`` decompressed (gzip: every member in turn), to at most ``MAX_BODY`` bytes.

    ``gzip.decompress`` had no such cap, so a small compressed body (a "zip bomb": a 64 MiB
    body inflates to some 64 GiB) could take all the receiver's memory; and a truncated gzip
    stream raised ``EOFError``, which was not caught, so it got a 500 and a traceback.
    """
    limit = MAX_BODY
    pieces, size, rest = [], 0, body
    try:
        while True:
            inflater = zlib.decompressobj(wbits)
            piece = inflater.decompress(rest, limit - size + 1)
            size += len(piece)
            if size > limit:
                raise BadRequest(413, f"request body decompresses to over {limit} bytes")
            pieces.append(piece)
            if not inflater.eof:  # the input ran out first
                raise BadRequest(400, "cannot decompress body: the compressed data is truncated")
            rest = inflater.unused_data
            if not members or not rest:  # zlib.decompress ignored a deflate body's trailer
                return b"".join(pieces)
    except zlib.error as error:
        raise BadRequest(400, f"cannot decompress body: {error}") from None


def _parse(raw: bytes, content_type: bytes) -> ExportTraceServiceRequest:
    if content_type == JSON_TYPE:
        try:
            document = orjson.loads(raw)
            if not isinstance(document, dict):
                raise ValueError(f"expected an object, got {type(document).__name__}")
            return json_to_request(document)
        # TypeError and AttributeError too: json_to_request takes the document's shape on
        # trust (a list where OTLP has an object, a number for an id) and orjson cannot copy
        # a document nested over 254 levels; all of them are the client's 400, not a 500
        except (ValueError, TypeError, AttributeError, json_format.ParseError) as error:
            raise BadRequest(400, f"invalid OTLP JSON: {error}") from None
    if content_type != PROTOBUF:
        raise BadRequest(415, f"unsupported content-type {content_type.decode(errors='replace')}")
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(raw)
    except DecodeError as error:
        raise BadRequest(400, f"invalid ExportTraceServiceRequest: {error}") from None
    return request


_TRACE_ID, _SPAN_ID = (0, 16), (0, 8)  # the sizes an id may have (0: absent)


def _check_ids(request: ExportTraceServiceRequest) -> None:
    """Refuse ids that are neither absent nor OTLP's size (16 bytes a trace id, 8 a span id).

    The trace store's reader takes an id of any other length for base64 and fails on it, so
    one such span would make the whole store, every span of the run, unreadable by ``sopgym
    eval``; the OpenTelemetry Collector refuses such a request too.
    """
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                if (
                    len(span.trace_id) in _TRACE_ID
                    and len(span.span_id) in _SPAN_ID
                    and len(span.parent_span_id) in _SPAN_ID
                    and (
                        not span.links
                        or all(
                            len(link.trace_id) in _TRACE_ID and len(link.span_id) in _SPAN_ID
                            for link in span.links
                        )
                    )
                ):
                    continue
                ids = [
                    ("trace_id", span.trace_id, 16),
                    ("span_id", span.span_id, 8),
                    ("parent_span_id", span.parent_span_id, 8),
                ]
                for link in span.links:
                    ids += [("a link's trace_id", link.trace_id, 16)]
                    ids += [("a link's span_id", link.span_id, 8)]
                name, value, size = next(i for i in ids if len(i[1]) not in (0, i[2]))
                raise BadRequest(
                    400, f"span {span.name!r}: {name} is {len(value)} bytes, not {size}"
                )


def serve(out_dir: Path, host: str, port: int, forward: list[str] | None = None) -> None:
    from sopgym.serving import serve as serve_app

    serve_app(Collector(out_dir, forward), host, port)

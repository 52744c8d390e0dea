"""``sopgym collector``: a minimal OTLP/HTTP trace receiver that writes a run's trace store.

It accepts ``POST /v1/traces`` with an ``ExportTraceServiceRequest`` (protobuf, or OTLP JSON;
optionally gzip/deflate-encoded) and appends it to
``<out>/otlp-<start>-<pid>.jsonl`` as OTLP JSON lines, one ``TracesData`` per instrumentation
scope. Each line is written with a single ``write()`` on an
``O_APPEND`` descriptor before the exporter gets its 200, so a span the exporter saw accepted
is on disk. ``--forward URL`` also relays every request, unchanged, to another OTLP/HTTP
endpoint (an OpenTelemetry Collector or Jaeger) so the same spans can be inspected there.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import os
import time
import zlib
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from sopgym.asgi import BodyTooLarge, Receive, Send, read_body, respond
from sopgym.observability.otlp import json_to_request, request_to_json

log = logging.getLogger("sopgym.collector")
PROTOBUF = b"application/x-protobuf"
JSON_TYPE = b"application/json"
JSON_HEADER, PROTOBUF_HEADER = (b"content-type", JSON_TYPE), (b"content-type", PROTOBUF)
MAX_BODY = 64 * 1024 * 1024


class BadRequest(Exception):
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

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"].rstrip("/"), scope["method"]
        headers = dict(scope["headers"])
        content_type = headers.get(b"content-type", PROTOBUF).split(b";")[0].strip()
        try:
            if path in ("/healthz", "/readyz") and method == "GET":
                body = orjson.dumps(
                    {"status": "ok", "requests": self.requests, "spans": self.spans}
                )
                await respond(send, 200, body, JSON_HEADER)
                return
            if path != "/v1/traces":
                raise BadRequest(404, f"no route {path}")
            if method != "POST":
                raise BadRequest(405, "use POST")
            try:
                body = await read_body(receive, MAX_BODY)
            except BodyTooLarge as error:
                raise BadRequest(413, str(error)) from None
            raw = _decode(body, headers.get(b"content-encoding", b""))
            request = _parse(raw, content_type)
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
    try:
        if encoding == b"gzip":
            return gzip.decompress(body)
        if encoding == b"deflate":
            return zlib.decompress(body)
    except (OSError, zlib.error) as error:
        raise BadRequest(400, f"cannot decompress body: {error}") from None
    if encoding not in (b"", b"identity"):
        raise BadRequest(415, f"unsupported content-encoding {encoding.decode(errors='replace')}")
    return body


def _parse(raw: bytes, content_type: bytes) -> ExportTraceServiceRequest:
    if content_type == JSON_TYPE:
        try:
            return json_to_request(orjson.loads(raw))
        except (orjson.JSONDecodeError, json_format.ParseError, ValueError) as error:
            raise BadRequest(400, f"invalid OTLP JSON: {error}") from None
    if content_type != PROTOBUF:
        raise BadRequest(415, f"unsupported content-type {content_type.decode(errors='replace')}")
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(raw)
    except DecodeError as error:
        raise BadRequest(400, f"invalid ExportTraceServiceRequest: {error}") from None
    return request



def serve(out_dir: Path, host: str, port: int, forward: list[str] | None = None) -> None:
    from sopgym.serving import serve as serve_app

    serve_app(Collector(out_dir, forward), host, port)

"""The gateway's gRPC transport (``sopgym.gateway.v1.Gateway``), served from the same core.

Every RPC is a call into :class:`~sopgym.gateway.core.GatewayCore`, exactly like its HTTP
route: one episode store, one validation, one call record. The episode token travels in the
``authorization`` metadata entry and W3C trace context in ``traceparent``; each RPC gets a
SERVER span carrying the gateway's usual episode annotations (and the HTTP-equivalent status,
which the evaluator reads), so gRPC episodes are scored from traces like HTTP ones.

A refusal ends the RPC with the status mapped from its error code (:data:`GRPC_STATUS`), the
error message as details, and the sopgym error in trailing metadata: ``sopgym-error-code``,
``sopgym-error-field``, ``sopgym-http-status``, plus the standard rich error model
(``grpc-status-details-bin``: a google.rpc.Status holding a google.rpc.ErrorInfo).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import orjson
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from sopgym.core.errors import STATUS_BY_CODE, ToolError
from sopgym.core.jsonio import loads_request
from sopgym.gateway.core import GatewayCore
from sopgym.observability import semconv as sc
from sopgym.observability import tracing
from sopgym.proto import gateway_v1
from sopgym.types import JSON

GRPC = "grpc"
SERVICE = "sopgym.gateway.v1.Gateway"
ERROR_DOMAIN = "sopgym"
_SC = grpc.StatusCode
GRPC_STATUS: dict[str, grpc.StatusCode] = {
    "invalid_json": _SC.INVALID_ARGUMENT,
    "invalid_request": _SC.INVALID_ARGUMENT,
    "missing_argument": _SC.INVALID_ARGUMENT,
    "unexpected_argument": _SC.INVALID_ARGUMENT,
    "type_mismatch": _SC.INVALID_ARGUMENT,
    "invalid_value": _SC.INVALID_ARGUMENT,
    "unknown_tool": _SC.NOT_FOUND,
    "not_found": _SC.NOT_FOUND,
    "unknown_episode": _SC.NOT_FOUND,
    "unauthorized": _SC.UNAUTHENTICATED,
    "forbidden": _SC.PERMISSION_DENIED,
    "episode_closed": _SC.FAILED_PRECONDITION,
    "no_conversation": _SC.FAILED_PRECONDITION,
    "conversation_over": _SC.FAILED_PRECONDITION,
    "upstream_unavailable": _SC.UNAVAILABLE,
    "internal_error": _SC.INTERNAL,
    "service_unavailable": _SC.UNAVAILABLE,
    "rate_limited": _SC.RESOURCE_EXHAUSTED,
    "temporarily_unavailable": _SC.UNAVAILABLE,
    "upstream_timeout": _SC.DEADLINE_EXCEEDED,
    "connection_dropped": _SC.UNAVAILABLE,
}
MAX_MESSAGE = 64 * 1024 * 1024


def grpc_status(code: str) -> grpc.StatusCode:
    """The gRPC status of an error code (an unknown code by its HTTP status class)."""
    known = GRPC_STATUS.get(code)
    if known is not None:
        return known
    return _SC.INTERNAL if STATUS_BY_CODE.get(code, 400) >= 500 else _SC.FAILED_PRECONDITION


def error_trailers(error: ToolError) -> tuple[tuple[str, str | bytes], ...]:
    info = error_details_pb2.ErrorInfo(
        reason=error.code,
        domain=ERROR_DOMAIN,
        metadata={"field": error.field or "", "http_status": str(error.status)},
    )
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(
        code=grpc_status(error.code).value[0], message=error.message, details=[detail]
    )
    return (
        ("sopgym-error-code", error.code),
        ("sopgym-error-field", error.field or ""),
        ("sopgym-http-status", str(error.status)),
        ("grpc-status-details-bin", status.SerializeToString()),
    )


def _json(data: bytes, what: str) -> Any:
    return loads_request(data, what) if data else None


class Servicer:
    """The ``Gateway`` service: each method mirrors one HTTP route."""

    def __init__(self, core: GatewayCore) -> None:
        self.core = core
        self.pb2, _ = gateway_v1()
        self._tracer = tracing.tracer(sc.SCOPE_GATEWAY) if tracing.enabled() else None

    async def _serve(
        self,
        method: str,
        grpc_context: grpc.aio.ServicerContext,
        handler: Callable[[str | None], Awaitable[Any]],
        default: Any,
    ) -> Any:
        """Run ``handler(token)`` inside the RPC's server span; a ToolError ends the RPC with
        its mapped status and trailers."""
        metadata = dict(grpc_context.invocation_metadata() or ())
        span = token = None
        if self._tracer is not None:
            span = self._tracer.start_span(
                f"{SERVICE}/{method}",
                context=tracing.parent_from_traceparent(metadata.get("traceparent")),
                kind=SpanKind.SERVER,
                attributes={"rpc.system": "grpc", "rpc.service": SERVICE, "rpc.method": method},
            )
            token = otel_context.attach(trace.set_span_in_context(span))
        http_status, code = 200, _SC.OK
        try:
            reply, http_status = await handler(_bearer(metadata.get("authorization")))
        except ToolError as error:
            reply, http_status, code = default, error.status, grpc_status(error.code)
            grpc_context.set_trailing_metadata(error_trailers(error))
            grpc_context.set_code(code)
            grpc_context.set_details(error.message)
        except Exception as exc:  # never a traceback to the client
            internal = ToolError("internal_error", f"gateway error: {type(exc).__name__}")
            reply, http_status, code = default, internal.status, _SC.INTERNAL
            grpc_context.set_trailing_metadata(error_trailers(internal))
            grpc_context.set_code(code)
            grpc_context.set_details(internal.message)
        if span is not None and token is not None:  # both set when traced
            span.set_attribute("rpc.grpc.status_code", code.value[0])
            span.set_attribute(sc.HTTP_STATUS, http_status)  # what the evaluator reads
            if http_status >= 500:
                span.set_status(Status(StatusCode.ERROR))
            otel_context.detach(token)
            span.end()
        return reply

    # ---- the RPCs ----
    async def ListTools(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        async def handle(_: str | None) -> tuple[Any, int]:
            summary = self.core.catalog_summary()["domains"]
            if request.domain:
                self.core.service(request.domain, "domain")
                summary = {request.domain: summary[request.domain]}
            domains = [
                self.pb2.DomainTools(domain=d, tools=s["tools"], distractors=s["distractors"])
                for d, s in summary.items()
            ]
            return self.pb2.ListToolsResponse(domains=domains), 200

        return await self._serve("ListTools", context, handle, self.pb2.ListToolsResponse())

    async def ListTasks(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        async def handle(_: str | None) -> tuple[Any, int]:
            listed = await self.core.tasks(request.domain or None)
            reply = self.pb2.ListTasksResponse(
                domain=request.domain, tasks_json=orjson.dumps(listed.tasks)
            )
            return reply, 200

        return await self._serve("ListTasks", context, handle, self.pb2.ListTasksResponse())

    async def OpenEpisode(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        async def handle(_: str | None) -> tuple[Any, int]:
            meta = _json(request.meta_json, "meta_json")
            payload: JSON = {
                "task_id": request.task_id,
                "domain": request.domain,
                "sop_variant": request.sop_variant or "clean",
                "meta": meta if meta is not None else {},
            }
            if request.HasField("distractors"):
                payload["distractors"] = request.distractors
            opened = await self.core.open(payload, GRPC)
            reply = self.pb2.OpenEpisodeResponse(
                episode_id=opened["episode_id"],
                token=opened["token"],
                sop=opened["sop"],
                input_schema_json=orjson.dumps(opened["input_schema"]),
                output_schema_json=orjson.dumps(opened["output_schema"]),
                tools=[
                    self.pb2.Tool(name=t["name"], spec_json=orjson.dumps(t))
                    for t in opened["tools"]
                ],
                replica_target=(opened.get("replica") or {}).get("grpc", ""),
            )
            return reply, 201

        return await self._serve("OpenEpisode", context, handle, self.pb2.OpenEpisodeResponse())

    async def CallTool(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        async def handle(token: str | None) -> tuple[Any, int]:
            episode = self.core.episode(request.episode_id)
            self.core.authorize(episode, token)
            outcome = await self.core.call_tool(
                episode, request.tool, request.arguments_json, GRPC
            )
            if outcome.error is not None:
                raise outcome.error
            reply = self.pb2.CallToolResponse(
                result_json=orjson.dumps(outcome.result), http_status=outcome.status
            )
            return reply, outcome.status

        return await self._serve("CallTool", context, handle, self.pb2.CallToolResponse())

    async def FinishEpisode(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        async def handle(token: str | None) -> tuple[Any, int]:
            episode = self.core.episode(request.episode_id)
            self.core.authorize(episode, token)
            outputs = _json(request.outputs_json, "outputs_json")
            done = await self.core.finish(episode, {"outputs": outputs}, GRPC)
            reply = self.pb2.FinishEpisodeResponse(
                episode_id=done["episode_id"], finished=done["finished"], calls=done["calls"]
            )
            return reply, 200

        return await self._serve(
            "FinishEpisode", context, handle, self.pb2.FinishEpisodeResponse()
        )

    async def GetEpisode(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        async def handle(token: str | None) -> tuple[Any, int]:
            episode = self.core.episode(request.episode_id)
            self.core.authorize(episode, token, admin_ok=True)
            return self.pb2.GetEpisodeResponse(record_json=orjson.dumps(episode.record())), 200

        return await self._serve("GetEpisode", context, handle, self.pb2.GetEpisodeResponse())

    async def SendMessage(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        async def handle(token: str | None) -> tuple[Any, int]:
            episode = self.core.episode(request.episode_id)
            self.core.authorize(episode, token)
            said = await self.core.message(episode, {"content": request.content}, GRPC)
            return self.pb2.SendMessageResponse(reply=said["reply"], done=said["done"]), 200

        return await self._serve("SendMessage", context, handle, self.pb2.SendMessageResponse())


def _bearer(value: str | bytes | None) -> str | None:
    if not isinstance(value, str) or not value:  # bytes only under "-bin" keys
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def start(core: GatewayCore, host: str, port: int) -> grpc.aio.Server:
    """Start the gRPC server on the running event loop (the HTTP server's)."""
    _, stubs = gateway_v1()
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
            ("grpc.so_reuseport", 0),
        ]
    )
    stubs.add_GatewayServicer_to_server(Servicer(core), server)
    if server.add_insecure_port(f"{host}:{port}") == 0:
        raise RuntimeError(f"cannot listen for gRPC on {host}:{port}")
    await server.start()
    return server


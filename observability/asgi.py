"""HTTP server spans for ASGI apps, without the contrib auto-instrumentation.

The gateway (raw ASGI, on every tool call's path) calls :func:`start_server_span` and
:func:`end_server_span` itself; FastAPI apps (the tool services, the model server) are wrapped
in :class:`TracingMiddleware`, with FastAPI's heavier native instrumentation switched off
(:func:`fastapi_telemetry`). Either way the
incoming ``traceparent`` makes the span a child of the caller's, and the span is current while
the handler runs, so handlers annotate it with ``trace.get_current_span()``.
"""

from __future__ import annotations

from contextvars import Token
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sopgym.asgi import ASGIApp, Message, Scope, header
from sopgym.observability import semconv as sc
from sopgym.observability.lean import LeanSpan, LeanTracer
from sopgym.observability.tracing import lean_tracer

if TYPE_CHECKING:
    from fastapi.telemetry import TelemetryConfig

UNTRACED_PATHS = frozenset({"/healthz", "/readyz"})  # polled by readiness checks: noise


@dataclass(frozen=True)
class RouteTemplate:
    """What a hand-routed path puts in ``scope["route"]`` for :class:`TracingMiddleware`,
    which names spans by the route's ``path`` template (FastAPI puts its own route there)."""

    path: str


def start_server_span(
    span_tracer: LeanTracer, scope: Scope, route: str | None
) -> tuple[LeanSpan, Token[LeanSpan | None]]:
    """Start the request's SERVER span under the caller's context and make it current
    (``route``: the route template, when known before routing)."""
    parent = header(scope, b"traceparent")
    method = scope["method"]
    attributes = {sc.HTTP_METHOD: method, sc.URL_PATH: scope["path"]}
    if route:
        attributes[sc.HTTP_ROUTE] = route
    return span_tracer.start(f"{method} {route or scope['path']}", parent, attributes)


def end_server_span(
    span_tracer: LeanTracer, span: LeanSpan, token: Token[LeanSpan | None], status: int
) -> None:
    span.attributes[sc.HTTP_STATUS] = status
    # HTTP semconv: a 4xx is the client's fault, not an error of the server span
    span_tracer.end(span, token, error=status >= 500)


def fastapi_telemetry() -> TelemetryConfig:
    """``FastAPI(telemetry=...)`` for sopgym's services: FastAPI's native OpenTelemetry off.

    The tool services sit on every tool call's path, and the native instrumentation costs
    several times what :class:`TracingMiddleware` does per request (more attributes to build
    and then to encode); the middleware's one SERVER span is all the evaluator and Jaeger need.
    """
    return {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}


class TracingMiddleware:
    """One SERVER span per HTTP request (health checks excepted), for FastAPI/Starlette apps:
    method and path at the start; the framework's route template and the status at the end."""

    def __init__(self, app: ASGIApp, span_tracer: LeanTracer) -> None:
        self.app, self.tracer = app, span_tracer

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in UNTRACED_PATHS:
            await self.app(scope, receive, send)
            return
        span, token = start_server_span(self.tracer, scope, None)
        status = 500

        async def send_and_watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_watch)
        finally:
            route = getattr(scope.get("route"), "path", None)
            if route:  # the route template: low-cardinality span names
                span.update_name(f"{scope['method']} {route}")
                span.set_attribute(sc.HTTP_ROUTE, route)
            end_server_span(self.tracer, span, token, status)


def traced(app: ASGIApp, scope_name: str) -> ASGIApp:
    """``app`` with server spans when this process traces, else ``app`` itself."""
    span_tracer = lean_tracer(scope_name)
    return TracingMiddleware(app, span_tracer) if span_tracer is not None else app

"""The gateway: the single door through which agents reach tools.

:class:`Gateway` is the HTTP transport, a plain ASGI application rather than a framework app
because it sits on every tool call's path: routing is a split on the path, and everything an
endpoint does is a call into the shared :class:`~sopgym.gateway.core.GatewayCore`. With a gRPC
port it also serves the gRPC API (:mod:`.grpc_server`) from the same core, on the same event
loop, so an episode opened over one transport can be worked over the other. Paths under
``/mcp/`` go to the MCP door (:mod:`.mcp_server`), on the same port and the same core; the
door starts with its first request, since the MCP SDK takes about a second to import.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from sopgym.asgi import (
    JSON_TYPE,
    ClientDisconnected,
    Receive,
    Scope,
    Send,
    header,
    read_body,
    respond,
)
from sopgym.core.errors import ToolError
from sopgym.core.exceptions import Signal
from sopgym.core.jsonio import dumps, loads_object
from sopgym.gateway.catalog import Catalog
from sopgym.gateway.core import GatewayCore
from sopgym.gateway.episodes import DEFAULT_KEEP_BYTES, DEFAULT_KEEP_EPISODES
from sopgym.gateway.faults import FaultPlan
from sopgym.gateway.metrics import GatewayMetrics
from sopgym.gateway.openapi import gateway_openapi
from sopgym.observability import tracing
from sopgym.observability.asgi import UNTRACED_PATHS, end_server_span, start_server_span
from sopgym.observability.metrics import CONTENT_TYPE as METRICS_TYPE
from sopgym.observability.semconv import SCOPE_GATEWAY
from sopgym.types import JSON

HTTP = "http"
MCP_PREFIX = "/mcp/"
_METRICS_TYPE = (b"content-type", METRICS_TYPE.encode())


class Gateway:
    def __init__(
        self,
        catalog: Catalog,
        default_distractors: int = 0,
        admin_token: str | None = None,
        grpc_port: int | None = None,
        grpc_host: str = "127.0.0.1",
        metrics: GatewayMetrics | None = None,
        user_sim: str | None = None,
        seed: int = 0,
        faults: FaultPlan | None = None,
        service_secret: str | None = None,
        keep_episodes: int = DEFAULT_KEEP_EPISODES,
        replica: JSON | None = None,
        keep_bytes: int = DEFAULT_KEEP_BYTES,
    ) -> None:
        self.core = GatewayCore(
            catalog,
            default_distractors,
            admin_token,
            metrics,
            user_sim=user_sim,
            seed=seed,
            faults=faults,
            service_secret=service_secret,
            keep_episodes=keep_episodes,
            replica=replica,
            keep_bytes=keep_bytes,
        )
        self.grpc_port, self.grpc_host = grpc_port, grpc_host
        self.openapi = dumps(gateway_openapi(catalog))  # the HTTP API, for clients and fuzzers
        self._grpc: Any = None
        self.mcp: Any = None  # the MCP door, once a request needed it
        self._mcp_starting = asyncio.Lock()
        # Manual server spans (no auto-instrumentation): this is every tool call's path.
        self._tracer = tracing.lean_tracer(SCOPE_GATEWAY)  # None when tracing is off

    @property
    def episodes(self) -> Any:
        return self.core.episodes

    # ---- ASGI entry ----
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"].startswith(MCP_PREFIX):  # the MCP door spans each MCP request itself
            await (self.mcp or await self._start_mcp())(scope, receive, send)
            return
        tracer = None if scope["path"] in UNTRACED_PATHS else self._tracer
        if tracer is not None:
            span, token = start_server_span(tracer, scope, _route_name(scope["path"]))
        content_type = JSON_TYPE
        try:
            status, body = await self._route(scope, receive)
            if isinstance(body, bytes):
                payload = body
            elif isinstance(body, str):  # the Prometheus exposition
                payload, content_type = body.encode(), _METRICS_TYPE
            else:
                payload = dumps(body)
        except ToolError as error:
            status, payload = error.status, dumps(error.to_body())
        except _Dropped:  # an injected fault: the answer starts and never ends
            if tracer is not None:
                end_server_span(tracer, span, token, 502)
            await send({"type": "http.response.start", "status": 502, "headers": []})
            await send({"type": "http.response.body", "body": b"", "more_body": True})
            return
        except ClientDisconnected:  # under a server that streams bodies: nothing was asked
            if tracer is not None:
                end_server_span(tracer, span, token, 499)  # "client closed request"
            return
        except Exception as exc:  # never a traceback to the client
            status = 500
            payload = dumps(
                ToolError("internal_error", f"gateway error: {type(exc).__name__}").to_body()
            )
        if tracer is not None:
            end_server_span(tracer, span, token, status)
        await respond(send, status, payload, content_type)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if self.grpc_port is not None:
                    from sopgym.gateway.grpc_server import start

                    self._grpc = await start(self.core, self.grpc_host, self.grpc_port)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._grpc is not None:
                    await self._grpc.stop(grace=2.0)
                if self.mcp is not None:
                    await self.mcp.stop()
                self.core.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _start_mcp(self) -> Any:
        async with self._mcp_starting:
            if self.mcp is None:
                from sopgym.gateway.mcp_server import McpDoor

                door = McpDoor(self.core)
                await door.start()
                self.mcp = door
        return self.mcp

    async def _route(self, scope: Scope, receive: Receive) -> tuple[int, Any]:
        core, method = self.core, scope["method"]
        parts = scope["path"].strip("/").split("/")
        if len(parts) == 1:
            if parts[0] in ("healthz", "readyz"):
                return 200, {**core.health(), "grpc_port": self.grpc_port}
            if parts[0] == "metrics" and method == "GET":
                return 200, core.metrics.exposition().decode()
            if parts[0] == "openapi.json" and method == "GET":
                return 200, self.openapi
        if parts[:1] != ["v1"]:
            raise ToolError("not_found", f"no route {scope['path']}")
        if parts[1:] == ["catalog"] and method == "GET":
            return 200, core.catalog_summary()
        if parts[1:] == ["tasks"] and method == "GET":
            domain = parse_qs(scope["query_string"].decode()).get("domain", [None])[0]
            return 200, (await core.tasks(domain)).payload
        if parts[1:2] == ["episodes"]:
            if len(parts) == 2 and method == "POST":
                return 201, await core.open(loads_object(await read_body(receive)), HTTP)
            episode = core.episode(parts[2] if len(parts) > 2 else "")
            if len(parts) == 3 and method == "GET":
                core.authorize(episode, _bearer(scope), admin_ok=True)
                return 200, core.record(episode)
            if len(parts) == 5 and parts[3] == "tools" and method == "POST":
                core.authorize(episode, _bearer(scope))
                outcome = await core.call_tool(episode, parts[4], await read_body(receive), HTTP)
                if outcome.dropped:
                    raise _Dropped
                return outcome.status, outcome.body
            if len(parts) == 4 and parts[3] == "messages" and method == "POST":
                core.authorize(episode, _bearer(scope))
                request = loads_object(await read_body(receive))
                return 200, await core.message(episode, request, HTTP)
            if len(parts) == 4 and parts[3] == "finish" and method == "POST":
                core.authorize(episode, _bearer(scope))
                finishing = loads_object(await read_body(receive))
                return 200, await core.finish(episode, finishing, HTTP)
        raise ToolError("not_found", f"no route {method} {scope['path']}")


class _Dropped(Signal):
    """An injected ``drop`` fault: the connection closes with the answer unfinished."""


def _route_name(path: str) -> str:
    """The route template of a path, for low-cardinality span names."""
    parts = path.strip("/").split("/")
    if parts[:2] == ["v1", "episodes"] and len(parts) > 2:
        parts[2] = "{episode_id}"
        if len(parts) == 5 and parts[3] == "tools":
            parts[4] = "{tool_name}"
    return "/" + "/".join(parts)


def _bearer(scope: Scope) -> str | None:
    value = header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, token = value.decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None

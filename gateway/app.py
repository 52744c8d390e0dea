"""The gateway: the single door through which agents reach tools.

It is a plain ASGI application rather than a framework app because it sits on every tool
call's path; routing is a split on the path, and the hop to the owning service goes through
:class:`~sopgym.gateway.upstream.UpstreamPool`.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from sopgym.core.errors import ToolError
from sopgym.core.jsonio import dumps, loads_object
from sopgym.core.trajectory import CallRecord
from sopgym.gateway.catalog import Catalog
from sopgym.gateway.episodes import Episode, EpisodeStore
from sopgym.gateway.upstream import UpstreamError, UpstreamPool

JSON = dict[str, Any]
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_JSON_HEADERS = [(b"content-type", b"application/json")]


class Reply(Exception):
    """Raised anywhere in a handler to answer with ``status`` and a JSON ``body``."""

    def __init__(self, status: int, body: Any) -> None:
        self.status, self.body = status, body

    @classmethod
    def error(cls, error: ToolError) -> Reply:
        return cls(error.status, error.to_body())


class Gateway:
    def __init__(
        self, catalog: Catalog, default_distractors: int = 0, admin_token: str | None = None
    ) -> None:
        self.catalog = catalog
        self.default_distractors = default_distractors
        self.admin_token = admin_token
        self.episodes = EpisodeStore()
        self._pools: dict[str, UpstreamPool] = {}

    # ---- ASGI entry ----
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            status, body = await self._route(scope, receive)
            payload = body if isinstance(body, bytes) else dumps(body)
        except Reply as reply:
            status, payload = reply.status, dumps(reply.body)
        except ToolError as error:
            status, payload = error.status, dumps(error.to_body())
        except Exception as exc:  # never a traceback to the client
            status = 500
            payload = dumps(
                ToolError("internal_error", f"gateway error: {type(exc).__name__}").to_body()
            )
        await send({"type": "http.response.start", "status": status, "headers": _JSON_HEADERS})
        await send({"type": "http.response.body", "body": payload})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for pool in self._pools.values():
                    pool.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _route(self, scope: Scope, receive: Receive) -> tuple[int, Any]:
        method, parts = scope["method"], scope["path"].strip("/").split("/")
        if parts[0] in ("healthz", "readyz") and len(parts) == 1:
            return 200, {"status": "ok", "episodes": len(self.episodes)}
        if parts[:1] != ["v1"]:
            raise Reply.error(ToolError("not_found", f"no route {scope['path']}"))
        if parts[1:] == ["catalog"] and method == "GET":
            return 200, self._catalog_summary()
        if parts[1:2] == ["episodes"]:
            if len(parts) == 2 and method == "POST":
                return self._open(loads_object(await _body(receive)))
            episode = self._episode(parts[2] if len(parts) > 2 else "")
            if len(parts) == 3 and method == "GET":
                self._authorize(scope, episode, admin_ok=True)
                return 200, episode.record()
            if len(parts) == 5 and parts[3] == "tools" and method == "POST":
                self._authorize(scope, episode)
                return await self._call_tool(scope, episode, parts[4], await _body(receive))
            if len(parts) == 4 and parts[3] == "finish" and method == "POST":
                self._authorize(scope, episode)
                return self._finish(episode, loads_object(await _body(receive)))
        raise Reply.error(ToolError("not_found", f"no route {method} {scope['path']}"))

    # ---- handlers ----
    def _catalog_summary(self) -> JSON:
        return {
            "domains": {
                name: {"tools": list(s.tools), "distractors": list(s.distractors)}
                for name, s in self.catalog.services.items()
            }
        }

    def _open(self, request: JSON) -> tuple[int, JSON]:
        domain, task_id = request.get("domain"), request.get("task_id")
        if not isinstance(domain, str) or domain not in self.catalog.services:
            known = ", ".join(sorted(self.catalog.services))
            raise Reply.error(
                ToolError("invalid_value", f"unknown domain {domain!r}; serving: {known}", "domain")
            )
        if not isinstance(task_id, str) or not task_id:
            raise Reply.error(ToolError("missing_argument", "task_id is required", "task_id"))
        count = request.get("distractors", self.default_distractors)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise Reply.error(
                ToolError("invalid_value", "distractors must be an integer >= 0", "distractors")
            )
        tools, distractors = self.catalog.episode_tools(domain, task_id, count)
        service = self.catalog.services[domain]
        variant = request.get("sop_variant", "clean")
        if variant not in service.sop:
            raise Reply.error(
                ToolError(
                    "invalid_value",
                    f"no SOP variant {variant!r}; have: {', '.join(service.sop)}",
                    "sop_variant",
                )
            )
        meta = request.get("meta") if isinstance(request.get("meta"), dict) else {}
        episode = self.episodes.open(task_id, domain, tools, distractors, meta)
        return 201, {
            "episode_id": episode.id,
            "token": episode.token,
            "sop": service.sop[variant],
            "input_schema": service.input_schema,
            "output_schema": service.output_schema,
            "tools": [self.catalog.spec(n) for n in tools],
        }

    async def _call_tool(
        self, scope: Scope, episode: Episode, name: str, body: bytes
    ) -> tuple[int, bytes]:
        if episode.finished:
            raise Reply.error(ToolError("episode_closed", "episode already finished"))
        started = time.perf_counter()
        try:
            arguments: Any = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            arguments = body.decode(errors="replace")
            return self._recorded(
                episode,
                name,
                arguments,
                started,
                ToolError("invalid_json", "tool arguments are not valid JSON"),
            )
        if name not in episode.tools:
            return self._recorded(
                episode,
                name,
                arguments,
                started,
                ToolError("unknown_tool", f"no tool named {name!r} in this episode's catalog"),
                in_catalog=False,
            )
        service = self.catalog.owner[name]
        pool = self._pools.get(service.domain)
        if pool is None:
            pool = self._pools[service.domain] = UpstreamPool(service.host, service.port)
        try:
            status, payload = await pool.post(
                f"/v1/tools/{name}",
                body or b"{}",
                b"x-sopgym-episode: " + episode.id.encode() + b"\r\n",
            )
        except (UpstreamError, TimeoutError) as error:
            return self._recorded(
                episode,
                name,
                arguments,
                started,
                ToolError(
                    "upstream_unavailable", f"tool service {service.domain} unreachable: {error}"
                ),
            )
        try:
            response = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return self._recorded(
                episode,
                name,
                arguments,
                started,
                ToolError(
                    "upstream_unavailable", f"tool service {service.domain} sent a non-JSON reply"
                ),
            )
        error_body = response.get("error") if status >= 400 else None
        episode.calls.append(
            CallRecord(
                name=name,
                arguments=arguments,
                status=status,
                error_code=error_body["code"] if error_body else None,
                error_field=error_body.get("field") if error_body else None,
                result=response.get("result"),
                duration_ms=(time.perf_counter() - started) * 1000,
                distractor=name in episode.distractors,
            )
        )
        return status, payload

    def _recorded(
        self,
        episode: Episode,
        name: str,
        arguments: Any,
        started: float,
        error: ToolError,
        in_catalog: bool = True,
    ) -> tuple[int, JSON]:
        episode.calls.append(
            CallRecord(
                name=name,
                arguments=arguments,
                status=error.status,
                error_code=error.code,
                error_field=error.field,
                duration_ms=(time.perf_counter() - started) * 1000,
                in_catalog=in_catalog,
                distractor=name in episode.distractors,
            )
        )
        return error.status, error.to_body()

    def _finish(self, episode: Episode, request: JSON) -> tuple[int, JSON]:
        if episode.finished:
            raise Reply.error(ToolError("episode_closed", "episode already finished"))
        outputs = request.get("outputs")
        if not isinstance(outputs, dict):
            raise Reply.error(
                ToolError("invalid_value", "outputs must be a JSON object", "outputs")
            )
        episode.outputs = outputs
        episode.finished_at = time.time()
        return 200, {"episode_id": episode.id, "finished": True, "calls": len(episode.calls)}

    # ---- helpers ----
    def _episode(self, episode_id: str) -> Episode:
        episode = self.episodes.get(episode_id)
        if episode is None:
            raise Reply.error(ToolError("unknown_episode", f"no episode {episode_id!r}"))
        return episode

    def _authorize(self, scope: Scope, episode: Episode, admin_ok: bool = False) -> None:
        token = _bearer(scope)
        if token is None:
            raise Reply.error(ToolError("unauthorized", "missing bearer token"))
        if hmac.compare_digest(token, episode.token):
            return
        if admin_ok and self.admin_token and hmac.compare_digest(token, self.admin_token):
            return
        raise Reply.error(ToolError("forbidden", "token does not grant access to this episode"))


def _bearer(scope: Scope) -> str | None:
    for key, value in scope["headers"]:
        if key == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)

"""A domain's tool service: one HTTP app serving every tool (and distractor) of a pack.

Arguments are validated against each tool's JSON Schema before the implementation runs; any
refusal is a 4xx with ``{"error": {"code", "message", "field"}}``. The dataset is loaded and
indexed once at start-up.

``POST /v1/tools/{name}`` is every tool call's last hop, so :class:`ToolService` serves it
straight on ASGI (FastAPI's request handling cost about twice the tool's own work); the
catalog, task list, health and episode endpoints stay a small FastAPI app behind it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from sopgym.asgi import (
    MAX_API_BODY,
    ASGIApp,
    BodyTooLarge,
    ClientDisconnected,
    Receive,
    Scope,
    Send,
    header,
    read_body,
    respond,
)
from sopgym.core import dataset
from sopgym.core.domain import DomainPack
from sopgym.core.errors import ToolError
from sopgym.core.jsonio import dumps, loads_object
from sopgym.core.tools import Tool, ToolContext
from sopgym.observability.asgi import RouteTemplate, fastapi_telemetry
from sopgym.observability.episode_spans import record_tool_error

EPISODE_HEADER = b"x-sopgym-episode"  # set by the gateway on stateful domains
TOOL_PATH = "/v1/tools/"
TOOL_ROUTE = RouteTemplate(TOOL_PATH + "{name}")
log = logging.getLogger("sopgym.services")


def _json(body: object, status: int = 200) -> Response:
    return Response(dumps(body), status_code=status, media_type="application/json")


def _error(error: ToolError) -> Response:
    return _json(error.to_body(), error.status)


class ToolService:
    """The tool service's ASGI app: tool calls here, every other request to ``rest``."""

    def __init__(
        self,
        domain: str,
        tools: dict[str, Tool],
        context_for: Callable[[str | None], ToolContext],
        rest: ASGIApp,
    ) -> None:
        self.domain, self.tools, self.context_for, self.rest = domain, tools, context_for, rest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and scope["method"] == "POST" and path.startswith(TOOL_PATH):
            scope["route"] = TOOL_ROUTE
            try:
                body = await read_body(receive, MAX_API_BODY)
            except BodyTooLarge as error:  # 413, with the structured body every refusal has
                await respond(send, 413, dumps(ToolError("invalid_request", str(error)).to_body()))
                return
            except ClientDisconnected:  # no call was made: nothing to run, no one to answer
                return
            status, payload = self.call(path[len(TOOL_PATH) :], scope, body)
            await respond(send, status, payload)
            return
        await self.rest(scope, receive, send)

    def call(self, name: str, scope: Scope, payload: bytes) -> tuple[int, bytes]:
        """Run one tool call; the status and the JSON reply, whatever the input."""
        tool = self.tools.get(name)
        try:
            if tool is None:
                raise ToolError("unknown_tool", f"no tool named {name!r} in {self.domain}")
            episode = header(scope, EPISODE_HEADER)
            context = self.context_for(episode.decode("latin-1") if episode else None)
            return 200, dumps({"result": tool(loads_object(payload), context)})
        except ToolError as error:
            record_tool_error(error)  # a span event with the code and field, when traced
            return error.status, dumps(error.to_body())
        except Exception:  # a defect in the pack: report it structurally, log the traceback
            log.exception("tool %s failed", name)
            internal = ToolError("internal_error", f"tool {name!r} failed internally")
            return internal.status, dumps(internal.to_body())


def create_app(domain: DomainPack, data_root: Path | None = None) -> ToolService:
    data = dataset.load(domain, data_root)
    tools = domain.tool_map()
    catalog = {
        "domain": domain.name,
        "title": domain.title,
        "sop": {variant: domain.sop(variant) for variant in domain.sop_files},
        "input_schema": domain.input_schema,
        "output_schema": domain.output_schema,
        "tools": [t.spec.rendered() for t in domain.tools],
        "distractors": [t.spec.rendered() for t in domain.distractors],
    }
    shared = domain.context(data.tables, data.files_dir)
    # Stateful domains get one mutable state per episode, created on the episode's first call.
    episode_contexts: dict[str, ToolContext] = {}

    app = FastAPI(
        title=f"sopgym tools: {domain.name}",
        docs_url=None,
        redoc_url=None,
        telemetry=fastapi_telemetry(),  # spans only when the process set up tracing
    )

    def context_for(episode_id: str | None) -> ToolContext:
        if domain.initial_state is None or episode_id is None:
            return shared
        ctx = episode_contexts.get(episode_id)
        if ctx is None:
            ctx = episode_contexts[episode_id] = domain.context(
                data.tables, data.files_dir, episode_id
            )
        return ctx

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> Response:
        code = "not_found" if exc.status_code == 404 else "invalid_request"
        return _json(
            {"error": {"code": code, "message": str(exc.detail), "field": None}}, exc.status_code
        )

    @app.exception_handler(RequestValidationError)
    async def request_error(_: Request, exc: RequestValidationError) -> Response:
        return _error(ToolError("invalid_request", "malformed request"))

    @app.get("/healthz")
    async def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> Response:
        return _json({"status": "ready", "domain": domain.name, "tasks": len(data.tasks)})

    @app.get("/v1/tools")
    async def list_tools() -> Response:
        return _json(catalog)

    task_list = dumps({"domain": domain.name, "tasks": [t.to_json() for t in data.tasks]})

    @app.get("/v1/tasks")
    async def list_tasks() -> Response:
        """The task inputs, never the gold: sharded agent workers take their tasks from here."""
        return Response(task_list, media_type="application/json")

    @app.delete("/v1/episodes/{episode_id}")
    async def drop_episode(episode_id: str) -> Response:
        episode_contexts.pop(episode_id, None)
        return _json({"dropped": episode_id})

    return ToolService(domain.name, tools, context_for, app)

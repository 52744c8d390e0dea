"""The user simulator over HTTP: ``POST /v1/reply`` answers the agent's latest message.

Request ``{"domain", "task_id", "messages": [{"role": "agent" | "user", "content"}, ...]}``
(the turns exchanged in the episode so far, the agent's last); reply ``{"reply": str,
"done": bool}``. Refusals are 4xx ``{"error": {"code", "message", "field"}}``. The gateway is
its only client: agents never reach it, so the profiles it holds never reach them. Given the
stack's secret (:mod:`sopgym.core.access`), it answers only requests carrying it, as the tool
services do: a query from anyone else would be an exchange no episode records.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.responses import Response

from sopgym.asgi import MAX_API_BODY, BodyTooLarge, ClientDisconnected, read_body
from sopgym.core.access import SECRET_HEADER, check_secret
from sopgym.core.errors import ToolError
from sopgym.core.jsonio import dumps, loads_object
from sopgym.observability.asgi import fastapi_telemetry
from sopgym.services.user.simulator import UserModel, UserSimulator


def _json(body: object, status: int = 200) -> Response:
    return Response(dumps(body), status_code=status, media_type="application/json")


def _error(error: ToolError) -> Response:
    return _json(error.to_body(), error.status)


def create_app(
    domains: list[str],
    data_root: Path | None = None,
    seed: int | None = None,
    model: UserModel | None = None,
    secret: str | None = None,
) -> FastAPI:
    simulator = UserSimulator(domains, data_root, seed, model)
    app = FastAPI(
        title="sopgym user simulator",
        docs_url=None,
        redoc_url=None,
        telemetry=fastapi_telemetry(),  # spans only when the process set up tracing
    )

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, error: HTTPException) -> Response:
        code = "not_found" if error.status_code == 404 else "invalid_request"
        return _json({"error": {"code": code, "message": str(error.detail), "field": None}},
                     error.status_code)  # fmt: skip

    @app.get("/healthz")
    async def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> Response:
        return _json({
            "status": "ready",
            "domains": simulator.domains,
            "users": len(simulator.personas),
            "mode": "model" if model is not None else "rules",
        })  # fmt: skip

    @app.post("/v1/reply")
    async def reply(request: Request) -> Response:
        try:
            check_secret(secret, request.headers.get(SECRET_HEADER.decode(), "").encode() or None)
            body = loads_object(await read_body(request.receive, MAX_API_BODY))
            if model is None:
                turn = simulator.reply(body)
            else:  # a model call blocks: off the event loop
                turn = await run_in_threadpool(simulator.reply, body)
        except ClientDisconnected:
            return _error(ToolError("invalid_request", "the client disconnected"))
        except BodyTooLarge as error:
            return _json(ToolError("invalid_request", str(error)).to_body(), 413)
        except ToolError as error:
            return _error(error)
        return Response(orjson.dumps({"reply": turn.content, "done": turn.done}),
                        media_type="application/json")  # fmt: skip

    return app

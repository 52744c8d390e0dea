"""The scripted model over HTTP: the OpenAI Chat Completions surface agents already speak.

``POST /v1/chat/completions`` (tools, tool_calls, usage) and ``GET /v1/models``; errors use
OpenAI's ``{"error": {"message", "type", ...}}`` shape so clients report them as they would
a real endpoint's.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

import orjson
from fastapi import FastAPI, Request
from starlette.exceptions import HTTPException
from starlette.responses import Response

from sopgym.asgi import MAX_API_BODY, BodyTooLarge, ClientDisconnected, read_body
from sopgym.core import dataset
from sopgym.core.registry import domain_names, load_domain
from sopgym.observability.asgi import fastapi_telemetry
from sopgym.services.model import behaviours
from sopgym.services.model.engine import BadRequest, ScriptedModel
from sopgym.services.model.profiles import PRESETS, parse_profile
from sopgym.services.model.providers import add_provider_routes


def _json(body: object, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


# A conversation is small JSON; a cap keeps one request from taking the server's memory (and,
# since replies are computed on the event loop, its time): uvicorn buffers a body of any size.
MAX_BODY = MAX_API_BODY


def _error(
    message: str,
    status: int = 400,
    kind: str = "invalid_request_error",
    param: str | None = None,
) -> Response:
    error = {"message": message, "type": kind, "param": param, "code": None}
    return _json({"error": error}, status)


def create_app(
    domains: list[str] | None = None,
    data_root: Path | None = None,
    profile: str = "perfect",
    injection_log: Path | None = None,
) -> FastAPI:
    names = domains or domain_names()
    data = [dataset.load(load_domain(name), data_root) for name in names]
    model = ScriptedModel(data, parse_profile(profile), injection_log)

    def answer(body: dict, size: int = 0) -> dict:
        """A Chat Completions body's reply (every API door answers through here)."""
        return behaviours.play(model, body, size)

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        yield
        model.close()

    app = FastAPI(
        title="sopgym scripted model",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        telemetry=fastapi_telemetry(),  # spans come from TracingMiddleware (sopgym.observability)
    )

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, error: HTTPException) -> Response:
        """An unknown path or a wrong method, in the same OpenAI error shape as every other
        error here (FastAPI's own is ``{"detail": ...}``, which OpenAI clients do not read)."""
        return _error(str(error.detail), error.status_code)

    @app.get("/healthz")
    async def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> Response:
        return _json({"status": "ready", "domains": names, "tasks": len(model.cases)})

    @app.get("/v1/models")
    async def models() -> Response:
        ids = ["scripted", *(f"scripted:{p}" for p in PRESETS)]
        return _json(
            {
                "object": "list",
                "data": [
                    {"id": i, "object": "model", "created": 0, "owned_by": "sopgym"} for i in ids
                ],
            }
        )

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        try:
            raw = await read_body(request.receive, MAX_BODY)
        except ClientDisconnected:  # gone mid-body: nobody to answer, and nothing went wrong
            return _error("the client disconnected before sending the whole body")
        except BodyTooLarge as error:
            return _error(str(error), 413)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return _error("request body is not valid JSON")
        if not isinstance(body, dict):
            return _error("request body must be a JSON object")
        try:
            return _json(answer(body, len(raw)))
        except BadRequest as error:
            return _error(str(error), param=error.param)

    add_provider_routes(app, answer)
    return app

"""The scripted model over HTTP: the OpenAI Chat Completions surface agents already speak.

``POST /v1/chat/completions`` (tools, tool_calls, usage) and ``GET /v1/models``; errors use
OpenAI's ``{"error": {"message", "type", ...}}`` shape so clients report them as they would
a real endpoint's. A model name it does not serve is refused as OpenAI refuses one (404,
``model_not_found``). A profile's latency knobs hold each reply on the event loop for its
simulated time (:mod:`.latency`); ``GET /v1/stats`` shows the simulated servers' figures.
"""

from __future__ import annotations

import time
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
from sopgym.services.model.latency import LATENCY_PRESETS, Pacer, SimulatedGPU, job_for
from sopgym.services.model.profiles import PRESETS, parse_profile, profile_for_model
from sopgym.services.model.providers import add_provider_routes
from sopgym.types import JSON


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
    code: str | None = None,
) -> Response:
    error = {"message": message, "type": kind, "param": param, "code": code}
    return _json({"error": error}, status)


def served(model: str) -> bool:
    """Whether the Chat Completions door serves ``model``: ``scripted`` or ``scripted:<spec>``
    (a spec that does not parse is the request's 400, naming what is wrong)."""
    return model == "scripted" or model.startswith("scripted:")


STATS_WINDOW = 60.0  # seconds ``GET /v1/stats`` reports utilisation over, unless asked


def create_app(
    domains: list[str] | None = None,
    data_root: Path | None = None,
    profile: str = "perfect",
    injection_log: Path | None = None,
) -> FastAPI:
    names = domains or domain_names()
    data = [dataset.load(load_domain(name), data_root) for name in names]
    model = ScriptedModel(data, parse_profile(profile), injection_log)
    pacer = Pacer()
    calls = {"served": 0, "in_flight": 0, "prompt_tokens": 0, "generated_tokens": 0}
    started = time.monotonic()

    async def answer(body: JSON, size: int = 0) -> JSON:
        """A Chat Completions body's reply (every API door answers through here), computed at
        once and held for the profile's simulated time."""
        calls["in_flight"] += 1
        try:
            reply = behaviours.play(model, body, size)
            usage = reply.get("usage") or {}
            latency = profile_for_model(body.get("model"), model.default_profile).latency
            if latency.delays:
                await pacer.pace(latency, job_for(body, reply))
            calls["served"] += 1
            calls["prompt_tokens"] += usage.get("prompt_tokens") or 0
            calls["generated_tokens"] += usage.get("completion_tokens") or 0
            return reply
        finally:
            calls["in_flight"] -= 1

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        yield
        pacer.stop()
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

    app.state.pacer = pacer  # the server's shutdown stops it (main.py)

    @app.get("/v1/stats")
    async def stats(request: Request) -> Response:
        """Calls served and in flight, and each simulated server's figures (utilisation over
        the last ``window`` seconds, default 60); docs/model-latency.md shows the shape."""
        text = request.query_params.get("window", str(STATS_WINDOW))
        try:
            window = float(text)
        except ValueError:
            window = -1.0
        if not 0 < window <= SimulatedGPU.KEEP:
            return _error(
                f"window must be a number of seconds above 0 and at most {SimulatedGPU.KEEP:g}",
                param="window",
            )
        gpus = pacer.stats(window)
        return _json(
            {
                "object": "sopgym.model.stats",
                "uptime_s": round(time.monotonic() - started, 3),
                **calls,
                "queued": sum(g["queued"] for g in gpus),
                "servers": gpus,
            }
        )

    @app.get("/v1/models")
    async def models() -> Response:
        ids = ["scripted", *(f"scripted:{p}" for p in (*PRESETS, *LATENCY_PRESETS))]
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
        name = body.get("model")
        if isinstance(name, str) and not served(name):  # a non-string is the engine's 400
            return _error(
                f"The model `{name}` does not exist or you do not have access to it "
                "(this server serves scripted and scripted:<profile>; GET /v1/models)",
                404,
                param="model",
                code="model_not_found",
            )
        try:
            return _json(await answer(body, len(raw)))
        except BadRequest as error:
            return _error(str(error), param=error.param)

    add_provider_routes(app, answer)
    return app

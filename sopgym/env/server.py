"""The environment API over HTTP, for trainers in other processes or on other machines.

Shaped after OpenEnv's reset/step/state: ``POST /reset`` opens an environment's next episode
(a new environment when no ``env_id`` is given) and answers its id and first observation;
``POST /step`` takes ``{"env_id", "action"}`` and answers ``{"observation", "reward",
"terminated", "truncated", "done", "info"}``; ``GET /state/<env_id>`` tells the episode's id,
task, step count and, once done, its score; ``DELETE /envs/<env_id>`` closes one. Every
environment is a :class:`~.environment.SopgymEnv` behind the same gateway client, so one
trainer process can keep thousands of episodes in flight: each request blocks only a worker
thread of this server, on the gateway's keep-alive connections. Refusals are the usual
structured ``{"error": {"code", "message", "field"}}`` with a 4xx status. A finished episode's
score is the verdict only (:func:`coarse_score`) unless the server was started with
``--score-detail``.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import orjson
from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from sopgym.asgi import MAX_API_BODY, read_body
from sopgym.client import GatewayError, connect
from sopgym.client.transports import GatewayClientProtocol
from sopgym.core import dataset
from sopgym.core.errors import ToolError
from sopgym.core.jsonio import loads_object
from sopgym.core.registry import load_domain
from sopgym.env.environment import SopgymEnv
from sopgym.observability.asgi import fastapi_telemetry
from sopgym.types import JSON

MAX_ENVS = 100_000
# What a score tells a remote trainer by default: the verdict, not which answer fields or calls
# were right (with unlimited resets to one task, that detail is a per-field answer oracle).
COARSE_SCORE_KEYS = ("task_id", "domain", "completed", "success", "infra_error")


def coarse_score(score: JSON | None, detail: bool) -> JSON | None:
    """``score`` as env-serve answers it: whole with ``detail`` (``--score-detail``), else
    only its :data:`COARSE_SCORE_KEYS`."""
    if detail or not score:
        return score
    return {key: score.get(key) for key in COARSE_SCORE_KEYS}


class EnvPool:
    """Environments by id, over one gateway client and each domain's loaded task set."""

    def __init__(
        self,
        client: GatewayClientProtocol,
        domains: list[str],
        data_root: Path | None,
        score_detail: bool = False,
        **options: Any,
    ) -> None:
        self.client, self.options, self.score_detail = client, options, score_detail
        self.data = {name: dataset.load(load_domain(name), data_root) for name in domains}
        self.envs: dict[str, SopgymEnv] = {}
        self._lock = threading.Lock()

    def reset(self, request: JSON) -> JSON:
        env_id = request.get("env_id")
        if env_id is None:
            domain = request.get("domain", next(iter(self.data)))
            if not isinstance(domain, str) or domain not in self.data:
                known = ", ".join(self.data)
                raise ToolError(
                    "invalid_value", f"no domain {domain!r}; serving: {known}", "domain"
                )
            with self._lock:
                if len(self.envs) >= MAX_ENVS:
                    raise ToolError("invalid_request", f"{MAX_ENVS} environments are open")
                env_id = f"env-{secrets.token_hex(8)}"
                self.envs[env_id] = SopgymEnv(self.client, self.data[domain], **self.options)
        env = self.env(env_id)
        seed = request.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ToolError("invalid_value", "seed must be an integer", "seed")
        task_id = request.get("task_id")
        if task_id is not None and not isinstance(task_id, str):
            raise ToolError("invalid_value", "task_id must be a string", "task_id")
        observation, info = env.reset(
            seed=seed, options={"task_id": task_id} if task_id is not None else None
        )
        return {"env_id": env_id, "observation": observation, "info": info,
                "episode_id": env.episode_id}  # fmt: skip

    def step(self, request: JSON) -> JSON:
        env = self.env(request.get("env_id"))
        action = request.get("action")
        if not isinstance(action, dict):
            raise ToolError("invalid_value", "action must be a JSON object", "action")
        if env.episode is None or env.done:
            raise ToolError("episode_closed", "the episode is over: reset the environment")
        observation, reward, terminated, truncated, info = env.step(action)
        if "score" in info:
            info = {**info, "score": coarse_score(info["score"], self.score_detail)}
        return {
            "observation": observation,
            "reward": float(reward),
            "terminated": terminated,
            "truncated": truncated,
            "done": terminated or truncated,
            "info": info,
        }

    def state(self, env_id: str) -> JSON:
        env = self.env(env_id)
        return {
            "env_id": env_id,
            "episode_id": env.episode_id,
            "task_id": env.task.id if env.task is not None else None,
            "step_count": env.steps,
            "done": env.done,
            "score": coarse_score(env.score or None, self.score_detail),
        }

    def close(self, env_id: str) -> JSON:
        env = self.env(env_id)
        with self._lock:
            self.envs.pop(env_id, None)
        env.close()
        return {"env_id": env_id, "closed": True}

    def env(self, env_id: Any) -> SopgymEnv:
        env = self.envs.get(env_id) if isinstance(env_id, str) else None
        if env is None:
            raise ToolError("not_found", f"no environment {env_id!r}", "env_id")
        return env


DEFAULT_CONCURRENCY = 1000  # requests worked at once (each holds a thread on the gateway)


def create_app(pool: EnvPool, concurrency: int = DEFAULT_CONCURRENCY) -> FastAPI:
    """The API over ``pool``; ``concurrency``: how many requests are worked at once (each
    blocks a thread on the gateway while its step runs: anyio's default of 40 threads would
    cap a trainer's episodes in flight at 40)."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = concurrency
        yield

    app = FastAPI(
        title="sopgym environments", docs_url=None, redoc_url=None, telemetry=fastapi_telemetry(),
        lifespan=lifespan,
    )  # fmt: skip

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, error: HTTPException) -> Response:
        code = "not_found" if error.status_code == 404 else "invalid_request"
        return _error(ToolError(code, str(error.detail)), error.status_code)

    @app.exception_handler(RequestValidationError)
    async def request_error(_: Request, __: RequestValidationError) -> Response:
        return _error(ToolError("invalid_request", "malformed request"))

    @app.get("/healthz")
    async def healthz() -> Response:
        return _json({"status": "ok", "envs": len(pool.envs)})

    @app.post("/reset")
    async def reset(request: Request) -> Response:
        return await _serve(pool.reset, await _body(request))

    @app.post("/step")
    async def step(request: Request) -> Response:
        return await _serve(pool.step, await _body(request))

    @app.get("/state/{env_id}")
    async def state(env_id: str) -> Response:
        return await _serve(pool.state, env_id)

    @app.delete("/envs/{env_id}")
    async def close(env_id: str) -> Response:
        return await _serve(pool.close, env_id)

    from sopgym.env.openenv import PREFIX, openenv_app  # (it imports this module)

    app.mount(PREFIX, openenv_app(pool))  # OpenEnv's wire format, beside ours
    return app


def build(
    gateway: str, domains: list[str], data_root: Path | None, transport: str = "http",
    score_detail: bool = False, concurrency: int = DEFAULT_CONCURRENCY, **options: Any,
) -> FastAPI:  # fmt: skip
    client = connect(gateway, transport)
    return create_app(EnvPool(client, domains, data_root, score_detail, **options), concurrency)


async def _body(request: Request) -> JSON | ToolError:
    try:
        return loads_object(await read_body(request.receive, MAX_API_BODY))
    except ToolError as error:
        return error


async def _serve(handler: Any, argument: Any) -> Response:
    """Run a blocking pool operation on a worker thread; a refusal is a structured 4xx."""
    try:
        if isinstance(argument, ToolError):
            raise argument
        return _json(await run_in_threadpool(handler, argument))
    except ToolError as error:
        return _error(error)
    except GatewayError as error:
        return _error(ToolError("upstream_unavailable", str(error)))


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status, media_type="application/json")


def _error(error: ToolError, status: int | None = None) -> Response:
    return _json(error.to_body(), status or error.status)

"""A domain's tool service: one HTTP app serving every tool (and distractor) of a pack.

Arguments are validated against each tool's JSON Schema before the implementation runs; any
refusal is a 4xx with ``{"error": {"code", "message", "field"}}``. The dataset is loaded and
indexed once at start-up.

``POST /v1/tools/{name}`` is every tool call's last hop, so :class:`ToolService` serves it
straight on ASGI (FastAPI's request handling cost about twice the tool's own work), and so
the two requests every episode makes, its registration and its close; the catalog, task
list and health endpoints stay a small FastAPI app behind it.

Episodes (:mod:`.episodes`) are registered and closed by the gateway; a tool call carrying
an ``x-sopgym-episode`` header acts on that registered episode, and one without acts on the
shared read-only context, which stateful domains do not have. Given the stack's secret
(:mod:`sopgym.core.access`), the service takes tool calls and episode requests only from the
gateway that sends it.

A tool implementation runs in a thread of the service's own pool, bounded by a per-call timeout
(``--tool-timeout``, ``$SOPGYM_TOOL_TIMEOUT``): a tool that hangs is answered 504
``tool_timeout`` (the evaluator's ``tool_error``) while the service goes on answering every
other call. Python cannot stop a thread, so a hung call keeps its thread; the pool is sized so
that a few hung tools leave the others room, and its threads are daemons, so that a hung one
never keeps the service from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import queue
import threading
from collections.abc import Callable
from functools import partial
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
from sopgym.core.access import SECRET_HEADER, check_secret
from sopgym.core.domain import DomainPack
from sopgym.core.errors import ToolError
from sopgym.core.jsonio import dumps, loads_object
from sopgym.core.tools import DEFAULT_TOOL_TIMEOUT_S, Tool, ToolContext
from sopgym.observability.asgi import RouteTemplate, fastapi_telemetry
from sopgym.observability.episode_spans import record_tool_error
from sopgym.services.tools.episodes import DEFAULT_IDLE_TIMEOUT_S, EpisodeRegistry
from sopgym.services.tools.openapi import tool_service_openapi
from sopgym.types import JSON

EPISODE_HEADER = b"x-sopgym-episode"  # set by the gateway on every call it forwards
TOOL_PATH = "/v1/tools/"
TOOL_ROUTE = RouteTemplate(TOOL_PATH + "{name}")
EPISODES_PATH = "/v1/episodes"
TOOL_THREADS = 64  # started as needed: an idle service holds few
# How many calls of one tool may hold pool threads at once (the others wait their turn, within
# the same per-call limit): a tool that hangs keeps at most this many threads, so the domain's
# other tools always have the rest of the pool. Half the pool: a quarter (8 of 32) cut a busy
# service's throughput by a third (bench/bench_gateway.py, 32 connections calling one tool:
# 14,500 req/s against 21,700 with the gate as wide as the connections).
CALLS_PER_TOOL = TOOL_THREADS // 2
EPISODES_ROUTE = RouteTemplate(EPISODES_PATH)
EPISODE_ROUTE = RouteTemplate(EPISODES_PATH + "/{episode_id}")
log = logging.getLogger("sopgym.services")


def _json(body: object, status: int = 200) -> Response:
    return Response(dumps(body), status_code=status, media_type="application/json")


def _error(error: ToolError) -> Response:
    return _json(error.to_body(), error.status)


class ToolService:
    """The tool service's ASGI app: tool calls and episodes here, the rest to ``rest``.

    ``shared`` is the read-only context of calls outside any episode; stateful domains have
    none, since their every call acts on one episode's state.
    """

    def __init__(
        self,
        domain: str,
        tools: dict[str, Tool],
        episodes: EpisodeRegistry,
        shared: ToolContext | None,
        rest: ASGIApp,
        secret: str | None = None,
        tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
    ) -> None:
        self.domain, self.tools, self.episodes, self.shared = domain, tools, episodes, shared
        self.rest, self.secret, self.tool_timeout_s = rest, secret, tool_timeout_s
        self._threads = ToolThreads(TOOL_THREADS)
        self._gates: dict[str, asyncio.Semaphore] = {}  # per tool: CALLS_PER_TOOL threads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope.get("path", ""), scope.get("method")  # only HTTP has a method
        gateway_only = (method == "POST" and path.startswith((TOOL_PATH, EPISODES_PATH))) or (
            method == "DELETE" and path.startswith(EPISODES_PATH + "/")
        )
        if gateway_only and self.secret:
            try:
                check_secret(self.secret, header(scope, SECRET_HEADER))
            except ToolError as refusal:
                await respond(send, refusal.status, dumps(refusal.to_body()))
                return
        if method == "POST" and path.startswith(TOOL_PATH):
            scope["route"] = TOOL_ROUTE
            body = await _body(receive, send)
            if body is not None:
                await respond(send, *await self.call(path[len(TOOL_PATH) :], scope, body))
        elif method == "POST" and path == EPISODES_PATH:
            scope["route"] = EPISODES_ROUTE
            body = await _body(receive, send)
            if body is not None:
                await respond(send, *self._answer(lambda: self._open(body)))
        elif method == "DELETE" and path.startswith(EPISODES_PATH + "/"):
            scope["route"] = EPISODE_ROUTE
            episode_id = path[len(EPISODES_PATH) + 1 :]
            await respond(send, *self._answer(lambda: (200, self._close(episode_id))))
        else:
            await self.rest(scope, receive, send)

    def _open(self, body: bytes) -> tuple[int, JSON]:
        """The gateway registers an episode (``{"episode_id", "task_id"}``) before any call."""
        return (201 if self.episodes.open(loads_object(body)) else 200), {"open": True}

    def _close(self, episode_id: str) -> JSON:
        """The gateway closes an episode: its final state (null when stateless), then freed."""
        return {"episode_id": episode_id, "final_state": self.episodes.close(episode_id)}

    @staticmethod
    def _answer(handle: Callable[[], tuple[int, JSON]]) -> tuple[int, bytes]:
        try:
            status, body = handle()
        except ToolError as error:
            status, body = error.status, error.to_body()
        return status, dumps(body)

    def context(self, episode_id: str | None) -> ToolContext:
        """The context a call acts on: its episode's, or outside any the shared one."""
        if episode_id is not None:
            return self.episodes.context(episode_id)
        if self.shared is None:
            raise ToolError(
                "episode_required",
                f"{self.domain} is stateful: a tool call acts on an episode the gateway "
                "opened (header x-sopgym-episode)",
            )
        return self.shared

    @staticmethod
    def _refusal(error: ToolError) -> tuple[int, bytes]:
        record_tool_error(error)  # a span event with the code and field, when traced
        return error.status, dumps(error.to_body())

    async def call(self, name: str, scope: Scope, payload: bytes) -> tuple[int, bytes]:
        """Run one tool call; the status and the JSON reply, whatever the input. The call is
        resolved here, on the event loop (the episode registry is not shared with threads);
        the tool's own code runs in the pool, at most :attr:`tool_timeout_s` seconds."""
        tool = self.tools.get(name)
        try:
            if tool is None:
                raise ToolError("unknown_tool", f"no tool named {name!r} in {self.domain}")
            arguments = loads_object(payload)  # a malformed body is refused as such anywhere
            episode = header(scope, EPISODE_HEADER)
            episode_id = episode.decode("latin-1") if episode else None
            context = self.context(episode_id)
        except ToolError as error:
            return self._refusal(error)
        turn = self.episodes.turn(episode_id) if episode_id is not None else None
        in_trace = contextvars.copy_context()  # the tool's spans join the request's trace
        job = partial(in_trace.run, self._run, tool, arguments, context, turn)
        gate = self._gates.get(name)
        if gate is None:
            gate = self._gates[name] = asyncio.Semaphore(CALLS_PER_TOOL)
        try:
            # the wait for the tool's gate counts against the call's limit too; the gate is
            # given back when the tool's code returns, however late (a timed-out call keeps
            # it), in the same loop callback that delivers the answer. (No task per call, and
            # one wake-up of the loop: wrapping this in wait_for and releasing the gate on
            # its own wake-up cost a third of the service's throughput.)
            async with asyncio.timeout(self.tool_timeout_s):
                await gate.acquire()
                return await self._threads.run(job, gate.release)
        except TimeoutError:  # the thread runs on; its answer, if any, is dropped
            log.error("tool %s did not answer within %g s", name, self.tool_timeout_s)
            return self._refusal(
                ToolError(
                    "tool_timeout",
                    f"tool {name!r} did not answer within {self.tool_timeout_s:g} s",
                )
            )

    def _run(
        self, tool: Tool, arguments: JSON, context: ToolContext, turn: threading.Lock | None
    ) -> tuple[int, bytes]:
        """A tool's own code, in a pool thread, after the episode's calls before it (``turn``):
        its answer, or its failure as a structured error."""
        name = tool.spec.name
        if turn is not None and not turn.acquire(timeout=self.tool_timeout_s):
            # a call before it still holds the episode (it hung): this one was answered
            # tool_timeout already, and gives its thread back
            return self._refusal(ToolError("tool_timeout", f"episode busy: {name!r} never ran"))
        try:
            result, warnings = tool.call(arguments, context)
            return 200, dumps(
                {"result": result, "warnings": warnings} if warnings else {"result": result}
            )
        except (OverflowError, ValueError) as error:
            # A value the schema admits but the tool cannot compute with: a number past a
            # float, a database integer or Python's digit limit. The caller's value, not a
            # defect of the service: refused as such.
            log.warning("tool %s refused a value: %s", name, error)
            return self._refusal(
                ToolError("invalid_value", f"{name!r} cannot work with a value given: {error}")
            )
        except ToolError as error:
            return self._refusal(error)
        except Exception:  # a defect in the pack: report it structurally, log the traceback
            log.exception("tool %s failed", name)
            failure = ToolError("internal_error", f"tool {name!r} failed internally")
            return failure.status, dumps(failure.to_body())
        finally:
            if turn is not None:
                turn.release()


Reply = tuple[int, bytes]


# a job, the future of its answer, the loop that awaits it and what runs there once it returned
_Done = Callable[[], object] | None
_Job = tuple[Callable[[], Reply], asyncio.Future[Reply], asyncio.AbstractEventLoop, _Done]


class ToolThreads:
    """At most ``size`` daemon threads running tool implementations, started as needed. Not
    the standard pool: its threads are joined when the interpreter exits, so one hung tool
    would keep a stopped service alive."""

    def __init__(self, size: int) -> None:
        self._size, self._started, self._idle = size, 0, 0
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()

    def run(
        self, job: Callable[[], Reply], on_done: Callable[[], object] | None = None
    ) -> asyncio.Future[Reply]:
        """``job``'s answer, as a future of the running loop; ``on_done`` runs on the loop
        once the job has returned, even when no one waits for its answer any more."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Reply] = loop.create_future()
        with self._lock:
            if self._idle == 0 and self._started < self._size:
                self._started += 1
                threading.Thread(target=self._work, name="tool", daemon=True).start()
            else:
                self._idle -= 1  # an idle thread takes this job
        self._jobs.put((job, answer, loop, on_done))
        return answer

    def _work(self) -> None:
        while True:
            job, answer, loop, on_done = self._jobs.get()
            try:
                outcome: Reply | BaseException = job()
            except BaseException as error:  # handed to the caller, never lost in a thread
                outcome = error
            with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: no one waits
                loop.call_soon_threadsafe(_settle, answer, outcome, on_done)
            with self._lock:
                self._idle += 1


def _settle(
    answer: asyncio.Future[Reply],
    outcome: Reply | BaseException,
    on_done: Callable[[], object] | None,
) -> None:
    if on_done is not None:
        on_done()
    if answer.done():  # timed out meanwhile: the caller was answered tool_timeout
        return
    if isinstance(outcome, BaseException):
        answer.set_exception(outcome)
    else:
        answer.set_result(outcome)


async def _body(receive: Receive, send: Send) -> bytes | None:
    """The request body, or ``None`` once a too large one was refused or the client left."""
    try:
        return await read_body(receive, MAX_API_BODY)
    except BodyTooLarge as error:  # 413, with the structured body every refusal has
        await respond(send, 413, dumps(ToolError("invalid_request", str(error)).to_body()))
    except ClientDisconnected:  # nothing was asked: nothing to run, no one to answer
        pass
    return None


def create_app(
    domain: DomainPack,
    data_root: Path | None = None,
    episode_idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    secret: str | None = None,
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
) -> ToolService:
    data = dataset.load(domain, data_root)
    tools = domain.tool_map()
    catalog = {
        "domain": domain.name,
        "title": domain.title,
        "kind": domain.kind,
        "sop": {variant: domain.sop(variant) for variant in domain.sop_files},
        "input_schema": domain.input_schema,
        "output_schema": domain.output_schema,
        "stateful": domain.stateful,
        "tools": [t.spec.rendered() for t in domain.tools],
        "distractors": [t.spec.rendered() for t in domain.distractors],
    }
    # Calls outside any episode (contract tests, direct use) share one read-only context.
    shared = None if domain.stateful else domain.context(data.tables, data.files_dir)
    tasks = {t.id: t for t in data.tasks}

    def episode_context(episode_id: str, task_id: str) -> ToolContext:
        if shared is not None:  # nothing of the task to hold: any task id is taken as given
            return shared
        task = tasks.get(task_id)
        if task is None:
            raise ToolError("not_found", f"no task {task_id!r} in {domain.name}", "task_id")
        return domain.context(data.tables, data.files_dir, task, episode_id)

    episodes = EpisodeRegistry(episode_context, episode_idle_timeout_s)

    app = FastAPI(
        title=f"sopgym tools: {domain.name}",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # its own would not describe the tools: ours below does
        telemetry=fastapi_telemetry(),  # spans only when the process set up tracing
    )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> Response:
        code = "not_found" if exc.status_code == 404 else "invalid_request"
        return _json(
            {"error": {"code": code, "message": str(exc.detail), "field": None}}, exc.status_code
        )

    @app.exception_handler(RequestValidationError)
    async def request_error(_: Request, exc: RequestValidationError) -> Response:
        return _error(ToolError("invalid_request", "malformed request"))

    openapi = dumps(tool_service_openapi(domain.name, domain.all_tools()))

    @app.get("/openapi.json")
    async def openapi_document() -> Response:
        """Every tool's arguments as its JSON Schema, for clients and fuzzers."""
        return Response(openapi, media_type="application/json")

    @app.get("/healthz")
    async def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> Response:
        episodes.expire()
        return _json(
            {
                "status": "ready",
                "domain": domain.name,
                "tasks": len(data.tasks),
                "stateful": domain.stateful,
                "episodes": len(episodes),
            }
        )

    @app.get("/v1/tools")
    async def list_tools() -> Response:
        return _json(catalog)

    task_list = dumps({"domain": domain.name, "tasks": [t.to_json() for t in data.tasks]})

    @app.get("/v1/tasks")
    async def list_tasks() -> Response:
        """The task inputs, never the gold: sharded agent workers take their tasks from here."""
        return Response(task_list, media_type="application/json")

    return ToolService(domain.name, tools, episodes, shared, app, secret, tool_timeout_s)

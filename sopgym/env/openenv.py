"""OpenEnv's wire format, beside the environment server's own API (mounted at
:data:`PREFIX`: an OpenEnv client is given ``http://HOST:PORT/openenv`` as its base URL).

OpenEnv (``openenv-core``) talks to an environment server over:

* ``POST /reset`` ``{"seed", "episode_id", ...}`` and ``POST /step`` ``{"action", ...}``, both
  answering ``{"observation", "reward", "done"}``; ``GET /state``; ``GET /schema`` (the
  action's, observation's and state's JSON Schemas); ``GET /metadata``; ``GET /health``;
* a WebSocket session at ``/ws``: messages ``{"type": "reset" | "step" | "state" | "close",
  "data": {...}}``, answered ``{"type": "observation" | "state" | "error", "data": {...}}``.
  One session is one environment: its episodes follow one another, as OpenEnv's clients expect.

Over plain HTTP each request stands alone, so the environment is named by ``env_id``: ``reset``
puts it in the observation and ``step`` / ``state`` take it (``step``'s body, ``state``'s
query). Reset takes our options too (``domain``, ``task_id``).

Actions: OpenEnv's MCP-shaped ``{"type": "list_tools"}`` (the episode's catalog, plus
``finish_episode``, whose input schema is the answer's, and, in a dialogue task, the message
action; it is not a step) and ``{"type": "call_tool", "tool_name", "arguments"}`` (calling
``finish_episode`` ends the episode with ``arguments`` as the answer); our own actions
(``tool`` / ``message`` / ``finish``, :mod:`.environment`) work as well. A call's observation
is shaped as OpenEnv's ``CallToolObservation`` (``tool_name``, ``result``, ``error`` with an
``error_type`` and our error code in the message) plus our ``status``, ``ok`` and ``content``.
The reward is the environment's: the scorers' verdict when the episode ends.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from fastapi import FastAPI, Request, Response, WebSocket, WebSocketDisconnect
from fastapi.concurrency import run_in_threadpool

import sopgym
from sopgym.client import GatewayError
from sopgym.core.answers import MESSAGE_ACTION, message_action_spec
from sopgym.core.dialogue import DIALOGUE
from sopgym.core.errors import ToolError
from sopgym.core.jsonio import loads_request
from sopgym.env.server import EnvPool, _body, _error, _json
from sopgym.types import JSON

PREFIX = "/openenv"
# the MCP door's answer tool (sopgym.gateway.mcp_server.FINISH_TOOL, whose module imports the
# MCP SDK: a second of start-up this server does not need)
FINISH_TOOL = "finish_episode"

ACTION_SCHEMA: JSON = {
    "oneOf": [
        {"type": "object", "required": ["type"], "properties": {"type": {"const": "list_tools"}}},
        {
            "type": "object",
            "required": ["type", "tool_name"],
            "properties": {
                "type": {"const": "call_tool"},
                "tool_name": {"type": "string"},
                "arguments": {"type": "object"},
            },
        },
        {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"enum": ["tool", "message", "finish"]}},
        },
    ]
}
STATE_SCHEMA: JSON = {
    "type": "object",
    "properties": {
        "env_id": {"type": "string"},
        "episode_id": {"type": ["string", "null"]},
        "task_id": {"type": ["string", "null"]},
        "step_count": {"type": "integer"},
        "done": {"type": "boolean"},
        "score": {"type": ["object", "null"]},
    },
}
# a refusal's error code, as OpenEnv's ToolErrorType classes it
_ERROR_TYPES = {"unknown_tool": "tool_not_found", "timeout": "timeout"}
_INVALID_ARGS = {"missing_argument", "unexpected_argument", "type_mismatch", "invalid_value"}


class OpenEnvSessions:
    """OpenEnv's reset / step / state over the environment server's pool, and its MCP
    interface's sessions (:meth:`mcp`)."""

    def __init__(self, pool: EnvPool) -> None:
        self.pool = pool
        # MCP sessions (env ids) made by openenv/session/create: what their first episode opens
        # with, until a reset or their first tools request opens it
        self.pending: dict[str, JSON] = {}
        self.lock = threading.Lock()

    def reset(self, data: JSON, env_id: str | None = None) -> JSON:
        request: JSON = {k: data[k] for k in ("domain", "task_id", "seed") if k in data}
        env_id = env_id or data.get("env_id")
        if env_id is not None:
            request["env_id"] = env_id
            with self.lock:
                self.pending.pop(env_id, None)
        opened = self.pool.reset(request)
        observation = {
            **opened["observation"],
            "env_id": opened["env_id"],
            "episode_id": opened["episode_id"],
            "done": False,
            "reward": None,
            "metadata": opened["info"],
        }
        return {"observation": observation, "reward": None, "done": False}

    def step(self, env_id: Any, action: Any) -> JSON:
        if not isinstance(action, dict):
            raise ToolError("invalid_value", "action must be a JSON object", "action")
        if action.get("type") == "list_tools":
            return self._list_tools(env_id)
        name = action.get("tool_name")
        stepped = self.pool.step({"env_id": env_id, "action": _ours(action)})
        observation: JSON = {
            **stepped["observation"],
            "done": stepped["done"],
            "reward": stepped["reward"],
            "metadata": stepped["info"],
        }
        if action.get("type") == "call_tool":
            observation.update(_call_tool_view(str(name), stepped["observation"]))
        return {"observation": observation, "reward": stepped["reward"], "done": stepped["done"]}

    def state(self, env_id: Any) -> JSON:
        return self.pool.state(env_id)

    def _list_tools(self, env_id: Any) -> JSON:
        env = self.pool.env(env_id)
        if env.episode is None or env.task is None:
            raise ToolError("episode_closed", "no episode: reset the environment")
        specs = list(env.episode.tools)
        if env.task.kind == DIALOGUE:
            specs.append(message_action_spec())
        tools = [
            {"name": s["name"], "description": s.get("description", ""),
             "input_schema": s.get("input_schema") or {"type": "object"}}
            for s in specs
        ]  # fmt: skip
        tools.append({
            "name": FINISH_TOOL,
            "description": "Submit the final answer and end the episode.",
            "input_schema": env.episode.output_schema or {"type": "object"},
        })  # fmt: skip
        observation = {"tools": tools, "done": env.done, "reward": None, "metadata": {}}
        return {"observation": observation, "reward": None, "done": env.done}

    # ---- OpenEnv's MCP interface (JSON-RPC 2.0 at /mcp) ----
    def mcp(self, message: Any) -> JSON:
        """One JSON-RPC request of OpenEnv's MCP interface, answered (errors included) as a
        JSON-RPC response: ``openenv/session/create`` (params: optional ``domain``,
        ``task_id``, ``seed``) and ``openenv/session/close``; ``tools/list`` and
        ``tools/call`` (``name``, ``arguments``) with the session's ``session_id``. A
        session's first episode opens at its WebSocket reset or, without one, at its first
        tools request. A refusal of ours is error -32602 with our ``{"code", "message",
        "field"}`` as its data; the gateway unreachable, -32000."""
        request_id = message.get("id") if isinstance(message, dict) else None
        if (
            not isinstance(message, dict)
            or message.get("jsonrpc") != "2.0"
            or not isinstance(message.get("method"), str)
        ):
            return _rpc_error(request_id, INVALID_REQUEST, "not a JSON-RPC 2.0 request")
        params = message.get("params", {})
        if not isinstance(params, dict):
            return _rpc_error(request_id, INVALID_PARAMS, "params must be an object")
        try:
            result = self._mcp_method(message["method"], params)
        except ToolError as error:
            return _rpc_error(request_id, INVALID_PARAMS, str(error), error.to_body()["error"])
        except GatewayError as error:
            return _rpc_error(request_id, SERVER_ERROR, f"upstream_unavailable: {error}")
        if result is None:
            return _rpc_error(request_id, METHOD_NOT_FOUND, f"no method {message['method']}")
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _mcp_method(self, method: str, params: JSON) -> JSON | None:
        if method == "openenv/session/create":
            created = self.pool.create(params.get("domain"))
            with self.lock:
                self.pending[created] = {k: params[k] for k in ("task_id", "seed") if k in params}
            return {"session_id": created}
        if method not in ("openenv/session/close", "tools/list", "tools/call"):
            return None
        env_id = params.get("session_id")
        if not isinstance(env_id, str):
            raise ToolError("missing_argument", "session_id is required", "session_id")
        if method == "openenv/session/close":
            with self.lock:
                self.pending.pop(env_id, None)
            self.pool.close(env_id)
            return {"session_id": env_id, "closed": True}
        self._opened(env_id)
        if method == "tools/list":
            return {"tools": self._list_tools(env_id)["observation"]["tools"]}
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str):
            raise ToolError("missing_argument", "name is required", "name")
        if not isinstance(arguments, dict):
            raise ToolError("type_mismatch", "arguments must be an object", "arguments")
        action = {"type": "call_tool", "tool_name": name, "arguments": arguments}
        observation: JSON = self.step(env_id, action)["observation"]
        return observation

    def _opened(self, env_id: str) -> None:
        """Open the session's first episode if nothing has yet."""
        env = self.pool.env(env_id)
        with self.lock:
            first = self.pending.pop(env_id, None)
        if env.episode is None:
            self.reset(first or {}, env_id)


# JSON-RPC 2.0 error codes
INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, SERVER_ERROR = -32600, -32601, -32602, -32000
PARSE_ERROR = -32700


def _rpc_error(request_id: Any, code: int, message: str, data: Any = None) -> JSON:
    error: JSON = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def mcp_route(sessions: OpenEnvSessions) -> Callable[[Request], Awaitable[Response]]:
    """``POST /mcp``: OpenEnv's MCP interface over ``sessions`` (always HTTP 200, the outcome
    in the JSON-RPC response, as OpenEnv's client reads it)."""

    async def handle(request: Request) -> Response:
        body = await _body(request)
        if isinstance(body, ToolError):
            return _json(_rpc_error(None, PARSE_ERROR, str(body)))
        return _json(await run_in_threadpool(sessions.mcp, body))

    return handle


def _ours(action: JSON) -> JSON:
    """An OpenEnv ``call_tool`` action as ours; ours pass through."""
    if action.get("type") != "call_tool":
        return action
    name, arguments = action.get("tool_name"), action.get("arguments") or {}
    if name == FINISH_TOOL:
        return {"type": "finish", "outputs": arguments}
    if name == MESSAGE_ACTION:
        content = arguments.get("content") if isinstance(arguments, dict) else None
        return {"type": "message", "content": content}
    return {"type": "tool", "name": name, "arguments": arguments}


def _call_tool_view(name: str, observed: JSON) -> JSON:
    """OpenEnv's CallToolObservation fields of one of our step observations."""
    if observed.get("ok"):
        return {"tool_name": name, "result": observed.get("content"), "error": None}
    body = observed.get("content")
    error = body.get("error") if isinstance(body, dict) else None
    code = str(error.get("code")) if isinstance(error, dict) else "refused"
    kind = _ERROR_TYPES.get(code, "invalid_args" if code in _INVALID_ARGS else "execution_error")
    message = f"{code}: {error.get('message', '')}" if isinstance(error, dict) else code
    return {"tool_name": name, "result": None,
            "error": {"error_type": kind, "message": message}}  # fmt: skip


def openenv_app(pool: EnvPool, sessions: OpenEnvSessions | None = None) -> FastAPI:
    """The OpenEnv endpoints over ``pool``, to mount at :data:`PREFIX`."""
    sessions = sessions or OpenEnvSessions(pool)
    app = FastAPI(title="sopgym environments (OpenEnv)", docs_url=None, redoc_url=None)

    async def serve(handler: Any, *args: Any) -> Response:
        try:
            return _json(await run_in_threadpool(handler, *args))
        except ToolError as error:
            return _error(error)
        except GatewayError as error:
            return _error(ToolError("upstream_unavailable", str(error)))

    @app.get("/health")
    async def health() -> Response:
        return _json({"status": "healthy"})

    @app.get("/metadata")
    async def metadata() -> Response:
        return _json({
            "name": "sopgym",
            "description": "Standard operating procedures worked through real HTTP tool "
            "services; domains served: " + ", ".join(pool.data),
            "version": sopgym.__version__,
        })  # fmt: skip

    @app.get("/schema")
    async def schema() -> Response:
        return _json({"action": ACTION_SCHEMA, "observation": {"type": "object"},
                      "state": STATE_SCHEMA})  # fmt: skip

    @app.post("/reset")
    async def reset(request: Request) -> Response:
        body = await _body(request)
        if isinstance(body, ToolError):
            return _error(body)
        return await serve(sessions.reset, body)

    @app.post("/step")
    async def step(request: Request) -> Response:
        body = await _body(request)
        if isinstance(body, ToolError):
            return _error(body)
        return await serve(sessions.step, body.get("env_id"), body.get("action"))

    @app.get("/state")
    async def state(env_id: str = "") -> Response:
        return await serve(sessions.state, env_id)

    app.add_api_route("/mcp", mcp_route(sessions), methods=["POST"])

    @app.websocket("/ws")
    async def session(socket: WebSocket) -> None:
        await socket.accept()
        # ?session_id=: the WebSocket of an MCP session (OpenEnv's MCP client attaches one for
        # reset/step/state); the session outlives it, closed by openenv/session/close
        env_id: str | None = socket.query_params.get("session_id") or None
        attached = env_id is not None
        if attached:
            try:
                sessions.pool.env(env_id)
            except ToolError as error:
                await _send_error(socket, error)
                await _close(socket)
                return
        try:
            while True:
                frame = await socket.receive()
                if frame["type"] == "websocket.disconnect":
                    break
                try:
                    kind, data = _frame_message(frame)
                    if kind == "close":
                        break
                    if kind == "reset":
                        answer = await run_in_threadpool(sessions.reset, data, env_id)
                        env_id = answer["observation"]["env_id"]
                        await _send(socket, "observation", answer)
                    elif kind == "step":
                        # OpenEnv's clients send the action itself as the data
                        action = data.get("action") if "type" not in data else data
                        answer = await run_in_threadpool(sessions.step, env_id, action)
                        await _send(socket, "observation", answer)
                    elif kind == "state":
                        current = await run_in_threadpool(sessions.state, env_id)
                        await _send(socket, "state", current)
                    else:
                        raise ToolError(
                            "invalid_request", "type is reset, step, state or close", "type"
                        )
                except ToolError as error:
                    await _send_error(socket, error)
                except GatewayError as error:
                    await _send_error(socket, ToolError("upstream_unavailable", str(error)))
        except WebSocketDisconnect:
            pass
        finally:
            # (closed already, or the gateway is gone: nothing left to release)
            if env_id is not None and not attached:
                with contextlib.suppress(ToolError, GatewayError):
                    await run_in_threadpool(pool.close, env_id)
        await _close(socket)

    return app


def _frame_message(frame: Any) -> tuple[Any, JSON]:
    """A WebSocket frame's message type and data; a binary frame, text that is not JSON (or
    nests too deep), a message that is not an object or ``data`` that is not one is a
    :class:`ToolError`, answered as an error message on the open socket."""
    text = frame.get("text")
    if text is None:
        raise ToolError("invalid_request", "binary frames are not accepted: send JSON as text")
    message = loads_request(text.encode(), "message")
    if not isinstance(message, dict):
        raise ToolError("invalid_request", 'a message is a JSON object {"type", "data"}')
    data = message.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ToolError("invalid_value", "data must be a JSON object", "data")
    return message.get("type"), data


async def _send(socket: WebSocket, kind: str, data: JSON) -> None:
    await socket.send_text(orjson.dumps({"type": kind, "data": data}).decode())


async def _send_error(socket: WebSocket, error: ToolError) -> None:
    body = error.to_body()["error"]
    await _send(socket, "error", {**body, "code": error.code})


async def _close(socket: WebSocket) -> None:
    with contextlib.suppress(RuntimeError):  # the client closed it first
        await socket.close()

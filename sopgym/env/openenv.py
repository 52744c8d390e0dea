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
    """OpenEnv's reset / step / state over the environment server's pool."""

    def __init__(self, pool: EnvPool) -> None:
        self.pool = pool

    def reset(self, data: JSON, env_id: str | None = None) -> JSON:
        request: JSON = {k: data[k] for k in ("domain", "task_id", "seed") if k in data}
        env_id = env_id or data.get("env_id")
        if env_id is not None:
            request["env_id"] = env_id
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


def openenv_app(pool: EnvPool) -> FastAPI:
    """The OpenEnv endpoints over ``pool``, to mount at :data:`PREFIX`."""
    sessions = OpenEnvSessions(pool)
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

    @app.websocket("/ws")
    async def session(socket: WebSocket) -> None:
        await socket.accept()
        env_id: str | None = None
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
            if env_id is not None:
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

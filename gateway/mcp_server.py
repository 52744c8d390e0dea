"""The gateway's MCP door: the Model Context Protocol (streamable HTTP), from the same core.

Off-the-shelf MCP clients (IDE agents, desktop apps, LangChain's MCP adapters) are configured
with a URL and nothing else, so the task is in the URL: ``/mcp/<domain>/<task_id>`` (query:
``distractors``, ``sop_variant``). One MCP session is one episode: its first request opens the
episode through :meth:`GatewayCore.open`, and every later request of the session works that
episode. The session is the MCP handshake's (``Mcp-Session-Id``), so the door speaks the
handshake era of the protocol; sessionless (2026) requests are refused.

What the session offers:

* tools: the episode's catalog exactly as ``open`` serves it (names, descriptions, input
  schemas, distractors included), plus :data:`FINISH_TOOL`, whose input schema is the task's
  output schema, and in a dialogue the message action (``send_message_to_user``);
* the SOP and the task input as resources (:data:`SOP_URI`, :data:`TASK_URI`) and together as
  the prompt :data:`TASK_PROMPT`.

A tool call goes through :meth:`GatewayCore.call_tool`, so it is validated, recorded, counted
and annotated on its span exactly like an HTTP or gRPC call. A refusal comes back as an MCP
tool error (``isError``) whose structured content is our ``{"error": {"code", "message",
"field"}}``; a request the door cannot serve at all (unknown task, no such resource) is a
JSON-RPC error carrying the same body as its ``data``.

The door is mounted on the gateway's own HTTP port (it is an ASGI app, and the gateway's
server streams responses), so a deployment exposes one port and one URL for all agents.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote

import mcp_types as types
import orjson
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import DEFAULT_MAX_SESSIONS, StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from sopgym.asgi import Receive, Scope, Send, header, respond
from sopgym.core.answers import MESSAGE_ACTION, message_action_spec
from sopgym.core.dialogue import DIALOGUE
from sopgym.core.errors import ToolError
from sopgym.core.jsonio import dumps
from sopgym.core.wire import FINISH_TOOL, MCP, SOP_URI, TASK_PROMPT, TASK_URI
from sopgym.gateway.app import MCP_PREFIX
from sopgym.gateway.core import GatewayCore
from sopgym.gateway.episodes import Episode
from sopgym.observability import tracing
from sopgym.observability.lean import current_span, current_traceparent
from sopgym.observability.semconv import HTTP_STATUS, SCOPE_GATEWAY
from sopgym.types import JSON

INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603  # JSON-RPC: the client's fault, or ours
_T = TypeVar("_T")


@dataclass
class McpEpisode:
    """A session's episode and what it was opened for."""

    episode: Episode
    opened: JSON  # what GatewayCore.open answered (SOP, schemas, catalog)
    task: JSON  # the task's listed inputs (never its gold)
    kind: str


class McpDoor:
    """The MCP server of one gateway core; :meth:`__call__` is its ASGI entry."""

    def __init__(self, core: GatewayCore) -> None:
        self.core = core
        self.server: Server[Any] = Server(
            "sopgym-gateway",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
        )
        self.manager = StreamableHTTPSessionManager(self.server, json_response=True)
        # by MCP session id, least recently used first: past the manager's cap of live
        # sessions, the oldest entry is one whose session has ended (or idled out)
        self._episodes: OrderedDict[str, asyncio.Future[McpEpisode]] = OrderedDict()
        self._tracer = tracing.lean_tracer(SCOPE_GATEWAY)
        self._stopping = asyncio.Event()
        self._held: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Run the session manager in a task of its own (its task group is entered and left
        in one task, as anyio requires) until :meth:`stop`."""
        ready = asyncio.Event()

        async def hold() -> None:
            try:
                async with self.manager.run():
                    ready.set()
                    await self._stopping.wait()
            finally:
                ready.set()  # a manager that failed to start must not leave start() waiting

        self._held = asyncio.get_running_loop().create_task(hold())
        await ready.wait()
        if self._held.done():
            self._held.result()  # raises why it stopped

    async def stop(self) -> None:
        if self._held is not None:
            self._stopping.set()
            await self._held

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = header(scope, b"mcp-protocol-version")
        if version is not None and version.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS:
            refusal = ToolError(
                "invalid_request",
                "this MCP door keeps one episode per session: connect with the initialize "
                f"handshake (protocol versions {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)})",
                "mcp-protocol-version",
            )
            await respond(send, refusal.status, dumps(refusal.to_body()))
            return
        await self.manager.handle_request(scope, receive, send)

    # ---- the session's episode ----
    async def _session_episode(self, ctx: Any) -> McpEpisode:
        """The session's episode, opened by its first request from the URL's task (requests
        that arrive together wait for the same opening; a failed one is tried again)."""
        request = ctx.request
        session_id = request.headers.get(MCP_SESSION_ID_HEADER) if request is not None else None
        if session_id is None:
            raise ToolError("invalid_request", "no MCP session: connect with the handshake")
        opening = self._episodes.get(session_id)
        if opening is None:
            opening = self._episodes[session_id] = asyncio.ensure_future(self._open(request))
            if len(self._episodes) > DEFAULT_MAX_SESSIONS:
                self._episodes.popitem(last=False)
        else:
            self._episodes.move_to_end(session_id)
        try:
            return await asyncio.shield(opening)
        except ToolError:
            self._episodes.pop(session_id, None)
            raise

    async def _open(self, request: Any) -> McpEpisode:
        domain, task_id, options = _task_address(request.url.path, request.url.query)
        opened = await self.core.open({"domain": domain, "task_id": task_id, **options}, MCP)
        listed = await self.core.tasks(domain)
        task = next((t for t in listed.tasks if t.get("id") == task_id), {"id": task_id})
        kind = self.core.catalog.services[domain].kind
        return McpEpisode(self.core.episode(opened["episode_id"]), opened, task, kind)

    async def _serve(self, ctx: Any, method: str, handle: Callable[[], Awaitable[_T]]) -> _T:
        """Run one MCP request inside its SERVER span (the gateway's episode annotations land
        there, as on an HTTP request's); a ToolError becomes a JSON-RPC error."""
        tracer, span, token = self._tracer, None, None
        if tracer is not None:
            parent = current_traceparent()  # the SDK's own span of the request, if it made one
            span, token = tracer.start(f"MCP {method}", parent, {"mcp.method.name": method})
        status = 200
        try:
            return await handle()
        except ToolError as error:
            status = error.status
            raise _jsonrpc_error(error) from None
        finally:
            if tracer is not None and span is not None and token is not None:
                span.attributes.setdefault(HTTP_STATUS, status)
                tracer.end(span, token, error=status >= 500)

    # ---- handlers ----
    async def _list_tools(self, ctx: Any, _: Any) -> types.ListToolsResult:
        async def handle() -> types.ListToolsResult:
            session = await self._session_episode(ctx)
            specs = list(session.opened["tools"])
            if session.kind == DIALOGUE:
                specs.append(message_action_spec())
            tools = [_tool(spec) for spec in specs]
            tools.append(
                types.Tool(
                    name=FINISH_TOOL,
                    description="Submit the final answer and end the episode (no calls after).",
                    input_schema=session.opened["output_schema"] or {"type": "object"},
                )
            )
            return types.ListToolsResult(tools=tools)

        return await self._serve(ctx, "tools/list", handle)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        async def handle() -> types.CallToolResult:
            session = await self._session_episode(ctx)
            episode, arguments = session.episode, params.arguments or {}
            try:
                if params.name == FINISH_TOOL:
                    body: JSON = await self.core.finish(episode, {"outputs": arguments}, MCP)
                elif params.name == MESSAGE_ACTION and session.kind == DIALOGUE:
                    body = await self.core.message(
                        episode, {"content": arguments.get("content")}, MCP
                    )
                else:
                    outcome = await self.core.call_tool(
                        episode, params.name, orjson.dumps(arguments), MCP
                    )
                    _set_status(outcome.status)
                    if outcome.error is not None:
                        return _tool_error(outcome.error)
                    return _tool_result(outcome.result)
            except ToolError as refused:  # the episode refused (closed, no conversation...)
                _set_status(refused.status)
                return _tool_error(refused)
            return _tool_result(body)

        return await self._serve(ctx, "tools/call", handle)

    async def _list_prompts(self, ctx: Any, _: Any) -> types.ListPromptsResult:
        prompt = types.Prompt(
            name=TASK_PROMPT, description="The SOP to follow and the task's input, to start on."
        )
        return types.ListPromptsResult(prompts=[prompt])

    async def _get_prompt(
        self, ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        async def handle() -> types.GetPromptResult:
            if params.name != TASK_PROMPT:
                raise ToolError("not_found", f"no prompt {params.name!r}", "name")
            session = await self._session_episode(ctx)
            text = (
                f"{session.opened['sop']}\n\nTask input:\n{_json_text(_task_view(session))}\n\n"
                f"Work the task with the tools, then call {FINISH_TOOL} with the final answer."
            )
            message = types.PromptMessage(
                role="user", content=types.TextContent(type="text", text=text)
            )
            return types.GetPromptResult(messages=[message])

        return await self._serve(ctx, "prompts/get", handle)

    async def _list_resources(self, ctx: Any, _: Any) -> types.ListResourcesResult:
        resources = [
            types.Resource(
                name="sop",
                uri=SOP_URI,
                mime_type="text/markdown",
                description="The standard operating procedure to follow.",
            ),
            types.Resource(
                name="task",
                uri=TASK_URI,
                mime_type="application/json",
                description="The episode id; the task's id, kind, input and its schema.",
            ),
        ]
        return types.ListResourcesResult(resources=resources)

    async def _read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        async def handle() -> types.ReadResourceResult:
            session = await self._session_episode(ctx)
            uri = str(params.uri)
            if uri == SOP_URI:
                text, mime = session.opened["sop"], "text/markdown"
            elif uri == TASK_URI:
                text, mime = _json_text(_task_view(session)), "application/json"
            else:
                raise ToolError("not_found", f"no resource {uri!r}", "uri")
            contents = types.TextResourceContents(uri=uri, mime_type=mime, text=text)
            return types.ReadResourceResult(contents=[contents])

        return await self._serve(ctx, "resources/read", handle)


def _task_address(path: str, query: str) -> tuple[str, str, JSON]:
    """``/mcp/<domain...>/<task_id>?distractors=N&sop_variant=V`` → domain, task, and the
    options of :meth:`GatewayCore.open` (``agent`` and ``run_id`` go to the episode's meta).
    A family pack's domain has a slash in it (``family/pack``): the task id is the last part."""
    parts = [unquote(p) for p in path.removeprefix(MCP_PREFIX).strip("/").split("/")]
    if len(parts) < 2 or not all(parts):
        raise ToolError("invalid_request", "connect to /mcp/<domain>/<task_id>", "path")
    given = {key: values[-1] for key, values in parse_qs(query).items()}
    options: JSON = {"meta": {"transport": MCP}}
    for key in ("agent", "run_id"):
        if key in given:
            options["meta"][key] = given[key]
    if "sop_variant" in given:
        options["sop_variant"] = given["sop_variant"]
    if "distractors" in given:
        try:
            options["distractors"] = int(given["distractors"])
        except ValueError:
            raise ToolError(
                "invalid_value", "distractors must be an integer >= 0", "distractors"
            ) from None
    return "/".join(parts[:-1]), parts[-1], options


def _task_view(session: McpEpisode) -> JSON:
    """The task resource: the task's input and the episode's id (which names the episode's
    record and trace), with the input's schema."""
    task = session.task
    view: JSON = {
        "episode_id": session.episode.id,
        "id": task.get("id"),
        "kind": session.kind,
        "inputs": task.get("inputs", {}),
        "input_schema": session.opened["input_schema"],
    }
    if task.get("conversation"):
        view["conversation"] = task["conversation"]
    return view


def _tool(spec: JSON) -> types.Tool:
    return types.Tool(
        name=spec["name"],
        description=spec.get("description", ""),
        input_schema=spec.get("input_schema") or {"type": "object"},
    )


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def _tool_result(result: Any) -> types.CallToolResult:
    structured = result if isinstance(result, dict) else {"result": result}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=_json_text(result))],
        structured_content=structured,
    )


def _tool_error(error: ToolError) -> types.CallToolResult:
    body = error.to_body()
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=_json_text(body))],
        structured_content=body,
        is_error=True,
    )


def _jsonrpc_error(error: ToolError) -> MCPError:
    """A request the door cannot serve, as JSON-RPC sees it; ``data`` is our error."""
    code = INTERNAL_ERROR if error.status >= 500 else INVALID_PARAMS
    return MCPError(code, error.message, error.to_body()["error"])


def _set_status(status: int) -> None:
    """The HTTP-equivalent status of a call, on its span: what the evaluator reads."""
    span = current_span()
    if span is not None:
        span.set_attribute(HTTP_STATUS, status)

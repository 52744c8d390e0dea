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
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from sopgym.asgi import Receive, Scope, Send
from sopgym.core.answers import MESSAGE_ACTION, message_action_spec
from sopgym.core.dialogue import DIALOGUE
from sopgym.core.errors import ToolError
from sopgym.core.wire import (
    EPISODE_PATH,
    FINISH_TOOL,
    MCP,
    OPEN_TOOL,
    SOP_URI,
    TASK_PROMPT,
    TASK_URI,
)
from sopgym.gateway.app import MCP_PREFIX
from sopgym.gateway.core import GatewayCore
from sopgym.gateway.episodes import Episode
from sopgym.observability import semconv as sc
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
        # 2026-07-28: the episodes this replica opened, by id. An entry lives as long as its
        # episode in the core's store (bounded by count and bytes, as for every door), never
        # pushed out by other clients' openings: see _forget_gone_handles
        self._handles: dict[str, McpEpisode] = {}
        self._sweep_at = DEFAULT_MAX_SESSIONS
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
        # both revisions: the SDK's manager routes a 2026-07-28 request (by its version
        # header) to its single-exchange entry, and a handshake-era one to its session
        await self.manager.handle_request(scope, receive, send)

    # ---- the session's episode ----
    async def _session_episode(self, ctx: Any) -> McpEpisode:
        """The request's episode: named by its handle in the URL (2026-07-28), or its
        session's, opened by the session's first request from the URL's task (requests
        that arrive together wait for the same opening; a failed one is tried again)."""
        request = ctx.request
        if request is not None and _handle(request.url.path) is not None:
            return self._by_handle(request.url.path)
        session_id = request.headers.get(MCP_SESSION_ID_HEADER) if request is not None else None
        if session_id is None:
            raise ToolError(
                "invalid_request",
                f"no episode: call {OPEN_TOOL} and send the episode's requests to its URL "
                "(2026-07-28), or connect with the initialize handshake",
            )
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

    def _by_handle(self, path: str) -> McpEpisode:
        """The episode a 2026-07-28 handle names, if this replica opened it (the handle's
        token is checked as the HTTP door checks its bearer token)."""
        episode_id, token = _handle(path) or ("", "")
        session = self._handles.get(episode_id)
        if session is None or self.core.episodes.get(episode_id) is not session.episode:
            raise ToolError("not_found", f"no episode {episode_id!r} on this gateway", "url")
        self.core.authorize(session.episode, token)
        return session

    async def _open_by_handle(self, ctx: Any) -> types.CallToolResult:
        """2026-07-28's :data:`OPEN_TOOL`: a new episode of the URL's task, and its URL."""
        request = ctx.request
        session = await self._open(request)
        episode = session.episode
        self._handles[episode.id] = session
        if len(self._handles) > self._sweep_at:
            self._forget_gone_handles()
        base = (self.core.replica or {}).get("http") or str(request.base_url).rstrip("/")
        url = f"{base}{MCP_PREFIX}{EPISODE_PATH}{episode.id}/{episode.token}"
        return _tool_result({"episode_id": episode.id, "url": url})

    def _forget_gone_handles(self) -> None:
        """Drop the handles whose episode the core no longer keeps. A handle is only ever
        forgotten with its episode: a client opening 10,001 episodes cannot push out another's
        (issue 41), and the handles cost no more than the core's own records allow. Sweeping
        again only when the table has doubled keeps an opening's cost constant on average."""
        kept = self.core.episodes
        gone = [i for i, s in self._handles.items() if kept.get(i) is not s.episode]
        for episode_id in gone:
            del self._handles[episode_id]
        self._sweep_at = max(DEFAULT_MAX_SESSIONS, 2 * len(self._handles))

    async def _open(self, request: Any) -> McpEpisode:
        domain, task_id, options = _task_address(request.url.path, request.url.query)
        opened = await self.core.open({"domain": domain, "task_id": task_id, **options}, MCP)
        listed = await self.core.tasks(domain)
        task = next((t for t in listed.tasks if t.get("id") == task_id), {"id": task_id})
        kind = self.core.catalog.services[domain].kind
        return McpEpisode(self.core.episode(opened["episode_id"]), opened, task, kind)

    async def _serve(
        self, ctx: Any, method: str, handle: Callable[[], Awaitable[_T]], target: str = ""
    ) -> _T:
        """Run one MCP request inside its SERVER span ``{method} {target}`` (the gateway's
        episode annotations land there, as on an HTTP request's); a ToolError becomes a
        JSON-RPC error. The parent: the request's ``_meta.traceparent`` (the client's span),
        else the HTTP request's."""
        tracer, span, token = self._tracer, None, None
        if tracer is not None:
            meta = ctx.meta or {}
            parent = meta.get("traceparent") or current_traceparent()
            span, token = tracer.start(
                f"{method} {target}" if target else method, parent, _mcp_attributes(ctx, method)
            )
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

    def _at_task_url(self, ctx: Any) -> bool:
        """A 2026-07-28 request at the task's URL: no episode yet, only :data:`OPEN_TOOL`."""
        request = ctx.request
        return (
            ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            and request is not None
            and _handle(request.url.path) is None
        )

    # ---- handlers ----
    async def _list_tools(self, ctx: Any, _: Any) -> types.ListToolsResult:
        async def handle() -> types.ListToolsResult:
            if self._at_task_url(ctx):
                return types.ListToolsResult(tools=[_OPEN_TOOL_SPEC])
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
            if self._at_task_url(ctx):
                if params.name != OPEN_TOOL:
                    raise ToolError(
                        "invalid_request",
                        f"no episode yet: call {OPEN_TOOL}, then use the episode's URL",
                        "name",
                    )
                return await self._open_by_handle(ctx)
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

        return await self._serve(ctx, "tools/call", handle, params.name)

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

        return await self._serve(ctx, "prompts/get", handle, params.name)

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

        return await self._serve(ctx, "resources/read", handle, str(params.uri))


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


_OPEN_TOOL_SPEC = types.Tool(
    name=OPEN_TOOL,
    description=(
        "Open an episode of this task; send every request of the episode to the URL it "
        "returns (its handle)."
    ),
    input_schema={"type": "object", "properties": {}},
)


def _handle(path: str) -> tuple[str, str] | None:
    """(episode id, token) of a 2026-07-28 episode URL's path, else None."""
    rest = path.removeprefix(MCP_PREFIX)
    if not rest.startswith(EPISODE_PATH):
        return None
    episode_id, _, token = rest.removeprefix(EPISODE_PATH).strip("/").partition("/")
    return unquote(episode_id), unquote(token)


def _mcp_attributes(ctx: Any, method: str) -> dict[str, Any]:
    """The OpenTelemetry MCP attributes of one request's span."""
    attributes: dict[str, Any] = {sc.MCP_METHOD_NAME: method}
    if getattr(ctx, "protocol_version", None):
        attributes[sc.MCP_PROTOCOL_VERSION] = ctx.protocol_version
    if getattr(ctx, "request_id", None) is not None:
        attributes[sc.JSONRPC_REQUEST_ID] = str(ctx.request_id)
    request = ctx.request
    session_id = request.headers.get(MCP_SESSION_ID_HEADER) if request is not None else None
    if session_id:
        attributes[sc.MCP_SESSION_ID] = session_id
    return attributes


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

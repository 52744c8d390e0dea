"""The gateway's MCP door for agents: the same client and episode interface as HTTP and gRPC.

:class:`McpGatewayClient` opens an episode the way any MCP client would: it connects to the
task's URL (``/mcp/<domain>/<task_id>``) with the official SDK's client, lists the tools,
reads the SOP and task resources, calls tools, talks to the user through the message action
and finishes through the ``finish_episode`` tool. Nothing of the episode travels outside MCP;
only the task listing and the record, which are not episode actions, use the HTTP API.

Both revisions of the protocol the door speaks: ``protocol="2026-07-28"`` (the default, MCP's
current stable revision) is stateless: no initialize handshake and no ``Mcp-Session-Id``; the
client calls ``open_episode`` at the task's URL and sends every request of the episode to the
episode's own URL that it returns. ``protocol="2025-11-25"``, kept for old servers and
clients, connects with the initialize handshake, one session per episode.

The SDK's client is asynchronous and agents are not, so each client runs one event loop on a
thread of its own; each episode's MCP session is a task on it, entered and left in that task
(as anyio requires), and the agent's calls are submitted to the loop and awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import mcp_types as types
import orjson
from mcp import Client

from sopgym.client import Episode, GatewayClient, GatewayError
from sopgym.core.answers import MESSAGE_ACTION
from sopgym.core.errors import ToolError
from sopgym.core.wire import FINISH_TOOL, OPEN_TOOL, SOP_URI, TASK_URI
from sopgym.types import JSON

_T = TypeVar("_T")
HANDSHAKE = "2025-11-25"  # the handshake revision: the SDK's "legacy" mode negotiates it
STATELESS = "2026-07-28"  # the current stable revision
PROTOCOLS = (STATELESS, HANDSHAKE)
DEFAULT_PROTOCOL = STATELESS  # what the mcp agent and ``--transport mcp`` speak


class McpGatewayClient(GatewayClient):
    """Episodes over MCP; ``base_url`` is the gateway's HTTP base URL (the door's port)."""

    def __init__(
        self,
        base_url: str,
        timeout: float = 30.0,
        protocol: str = DEFAULT_PROTOCOL,
        **options: Any,
    ) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"MCP protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
        super().__init__(base_url, timeout, **options)
        self.timeout = timeout
        self.mode = "legacy" if protocol == HANDSHAKE else protocol
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.sessions: set[_Session] = set()  # open ones, closed with the client

    def submit(self, work: Coroutine[Any, Any, _T]) -> Future[_T]:
        return asyncio.run_coroutine_threadsafe(work, self.loop)

    def task_url(
        self,
        task_id: str,
        domain: str,
        distractors: int | None = None,
        sop_variant: str = "clean",
        meta: JSON | None = None,
    ) -> str:
        """The URL an MCP client connects to for one episode of ``task_id``."""
        query: dict[str, Any] = {"sop_variant": sop_variant}
        query.update({k: v for k, v in (meta or {}).items() if k in ("agent", "run_id") and v})
        if distractors is not None:
            query["distractors"] = distractors
        path = "/".join(quote(part, safe="") for part in (*domain.split("/"), task_id))
        return f"{self.base_url}/mcp/{path}?{urlencode(query)}"

    def open(
        self,
        task_id: str,
        domain: str,
        *,
        distractors: int | None = None,
        sop_variant: str = "clean",
        meta: JSON | None = None,
    ) -> McpEpisode:
        url = self.task_url(task_id, domain, distractors, sop_variant, meta)
        if self.mode != "legacy":  # stateless: open at the task's URL, work at the episode's
            opener = _Session(self, url)
            try:
                opened = _outcome(opener.run(opener.client.call_tool(OPEN_TOOL, {})))
            finally:
                opener.close()
            if opened[0] != 200:
                raise GatewayError(f"cannot open an episode at {url}: {opened[1]}")
            url = opened[1]["result"]["url"]
        session = _Session(self, url)
        try:
            return McpEpisode(self, session)
        except BaseException:
            session.close()
            raise

    def close(self) -> None:
        for session in list(self.sessions):
            session.close()
        super().close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        self.loop.close()


class _Session:
    """One MCP session, held open by a task on the client's loop until :meth:`close`."""

    def __init__(self, client: McpGatewayClient, url: str) -> None:
        self._owner = client
        self._ready: Future[Client] = Future()
        self._closing: asyncio.Event | None = None
        self._held = client.submit(self._hold(url))
        try:
            self.client = self._ready.result(timeout=client.timeout)
        except Exception as error:
            raise GatewayError(f"cannot open an MCP session at {url}: {error}") from error
        client.sessions.add(self)

    async def _hold(self, url: str) -> None:
        self._closing = asyncio.Event()
        try:
            async with Client(
                url, mode=self._owner.mode, read_timeout_seconds=self._owner.timeout
            ) as client:
                self._ready.set_result(client)
                await self._closing.wait()
        except BaseException as error:
            if not self._ready.done():
                self._ready.set_exception(error)
            raise

    def run(self, work: Coroutine[Any, Any, _T]) -> _T:
        return self._owner.submit(work).result(timeout=self._owner.timeout)

    def close(self) -> None:
        self._owner.sessions.discard(self)
        if self._closing is not None and not self._held.done():
            self._owner.loop.call_soon_threadsafe(self._closing.set)
            with contextlib.suppress(Exception):  # a session that failed to close is gone too
                self._held.result(timeout=self._owner.timeout)


class McpEpisode(Episode):
    """An episode worked through its MCP session; agents cannot tell it from an HTTP one."""

    def __init__(self, client: McpGatewayClient, session: _Session) -> None:
        self._session = session
        listed = session.run(session.client.list_tools())
        specs = {tool.name: tool for tool in listed.tools}
        finish = specs.pop(FINISH_TOOL)
        specs.pop(MESSAGE_ACTION, None)  # offered by the agent itself in a dialogue
        task = orjson.loads(_resource_text(session.run(session.client.read_resource(TASK_URI))))
        sop = _resource_text(session.run(session.client.read_resource(SOP_URI)))
        super().__init__(
            client,
            {
                "episode_id": task["episode_id"],
                "token": "",  # the session is the credential: no token travels over MCP
                "tools": [
                    {
                        "name": t.name,
                        "description": t.description or "",
                        "input_schema": t.input_schema,
                    }
                    for t in specs.values()
                ],
                "sop": sop,
                "input_schema": task.get("input_schema", {}),
                "output_schema": finish.input_schema,
            },
        )

    def _call(self, name: str, arguments: Any) -> tuple[int, JSON]:
        if not isinstance(arguments, dict):  # MCP carries tool arguments as an object only
            refused = ToolError("invalid_request", "tool arguments must be a JSON object")
            return refused.status, refused.to_body()
        return _outcome(self._session.run(self._session.client.call_tool(name, arguments)))

    def _message(self, content: Any) -> tuple[int, JSON]:
        return self._call(MESSAGE_ACTION, {"content": content})

    def finish(self, outputs: JSON) -> None:
        try:
            status, body = self._call(FINISH_TOOL, outputs)
        finally:
            self._session.close()
        if status != 200:
            raise GatewayError(f"cannot finish episode {self.id}: {body}")


def _resource_text(read: types.ReadResourceResult) -> str:
    content = read.contents[0]
    return content.text if isinstance(content, types.TextResourceContents) else ""


def _outcome(result: Any) -> tuple[int, JSON]:
    """An MCP tool result as the HTTP API's status and body."""
    text = next((c.text for c in result.content if isinstance(c, types.TextContent)), "null")
    if result.is_error:
        body = result.structured_content or {}
        code = body.get("error", {}).get("code", "internal_error")
        return ToolError(code, "").status, body
    return 200, {"result": orjson.loads(text)}

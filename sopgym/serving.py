"""Running sopgym's HTTP servers: one place for the uvicorn settings they all share.

Every server runs uvicorn on uvloop with httptools. The one addition is
:class:`CoalescingHttpToolsProtocol`: uvicorn writes a response's status line and headers to
the socket as soon as the app starts the response, then the body in a second write, so each
small JSON reply leaves as two TCP segments and the reader wakes up twice for it. On every
tool call's path (agent → gateway → tool service and back) those extra wake-ups cost more than
the work itself, so a response head is held back and leaves in one write with the body that
follows it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import sys
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class _CoalescingTransport:
    """A transport that holds a response head (a write ending in a blank line) until the next
    write, and sends both at once; a head with nothing after it (a HEAD request, a ``100
    Continue``) leaves at the end of the event-loop step."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport, self._loop = transport, loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if self._pending:
            self._pending.append(data)
            self._flush()
        elif data.endswith(b"\r\n\r\n"):  # a response head: its body follows at once
            self._pending.append(data)
            self._loop.call_soon(self._flush)
        else:
            self._transport.write(data)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, writing through a :class:`_CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]


def serve(
    app: Any,
    host: str,
    port: int,
    backlog: int = 2048,
    on_shutdown: Callable[[], None] | None = None,
) -> None:
    """Serve an ASGI app until SIGINT/SIGTERM, quietly (sopgym logs what matters itself).

    ``backlog``: connections the kernel holds before they are accepted (uvicorn's default
    2048; the OS caps it at ``net.core.somaxconn``). ``on_shutdown`` runs on the event loop
    as shutdown begins, before uvicorn waits for the requests in flight: a server that holds
    requests on timers (the scripted model's simulated latency) answers them then, so a
    Ctrl-C never waits the simulated time out."""
    import uvicorn
    from uvicorn.main import STARTUP_FAILURE

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        loop="uvloop",
        http=CoalescingHttpToolsProtocol,
        log_level="warning",
        access_log=False,
        backlog=backlog,
    )
    server = NotifyingServer(config, on_shutdown)
    with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run: a second Ctrl-C, quietly
        server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)


class NotifyingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_shutdown: Callable[[], None] | None) -> None:
        super().__init__(config)
        self._on_shutdown = on_shutdown

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # What start-up built (imports, the datasets, the app) lives as long as the server:
        # frozen, the collector's full passes stop walking it on every pass (as an agent
        # worker's: sopgym.agents.worker.freeze_start_up_heap).
        gc.collect()
        gc.freeze()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._on_shutdown is not None:
            self._on_shutdown()
        await super().shutdown(sockets)

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
from typing import Any

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


def serve(app: Any, host: str, port: int) -> None:
    """Serve an ASGI app until SIGINT/SIGTERM, quietly (sopgym logs what matters itself)."""
    import uvicorn

    uvicorn.run(
        app,
        host=host,
        port=port,
        loop="uvloop",
        http=CoalescingHttpToolsProtocol,
        log_level="warning",
        access_log=False,
    )

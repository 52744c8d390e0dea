"""A lean HTTP/1.1 keep-alive client for the gateway's hop to tool services.

General-purpose clients (httpx, aiohttp) spend most of a loopback round trip in their own
machinery; the gateway only ever sends small JSON POSTs to known hosts, so it writes the
request bytes itself and parses responses with httptools on pooled asyncio connections.
"""

from __future__ import annotations

import asyncio
from collections import deque

import httptools

from sopgym.core.exceptions import InfrastructureError


class UpstreamError(InfrastructureError, ConnectionError):
    """The service could not be reached or closed the connection mid-response."""


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._parser = httptools.HttpResponseParser(self)
        self._body: list[bytes] = []
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        # When the answer to the request in flight is due (loop time). A timer per call (what
        # asyncio.wait_for sets, with a future and a callback of its own) costs more than the
        # rest of the pool's work, so the connection keeps one timer, set for the earliest
        # deadline it may have to enforce and moved on when it fires early: see _check_deadline.
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self.closed = False
        self.keep_alive = True  # false once the service said it closes after its answer

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(UpstreamError(f"bad response from upstream: {error}"))
            self.transport.close()  # type: ignore[union-attr]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._fail(UpstreamError("upstream closed the connection"))

    # httptools callbacks
    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        self.keep_alive = self._parser.should_keep_alive()
        waiter, self._waiter = self._waiter, None
        body, self._body = b"".join(self._body), []
        if waiter is not None and not waiter.done():
            waiter.set_result((self._parser.get_status_code(), body))

    def _fail(self, error: Exception) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def _check_deadline(self) -> None:
        """The timer fired: time out the request in flight if its answer is overdue, else wait
        on until its deadline; an idle connection's timer is set again by its next send."""
        self._timer = None
        if self._waiter is None or self._waiter.done():
            return
        if self._loop.time() >= self._deadline:
            self._fail(TimeoutError("no answer from upstream in time"))
        else:
            self._timer = self._loop.call_at(self._deadline, self._check_deadline)

    def send(self, request: bytes, timeout: float) -> asyncio.Future[tuple[int, bytes]]:
        """Send ``request``; the future is its status and body, or fails with
        :class:`UpstreamError`, or :class:`TimeoutError` past ``timeout`` seconds."""
        waiter = self._waiter = self._loop.create_future()
        self._deadline = self._loop.time() + timeout
        if self._timer is None:  # else it fires no later than this deadline, and moves on
            self._timer = self._loop.call_at(self._deadline, self._check_deadline)
        self.transport.write(request)  # type: ignore[union-attr]
        return waiter

    @property
    def usable(self) -> bool:
        return (
            self.keep_alive
            and not self.closed
            and self.transport is not None
            and not self.transport.is_closing()
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class UpstreamPool:
    """Keep-alive connections to one ``host:port``, at most ``limit`` open at once;
    ``headers`` (ready-encoded lines) go with every request, whose path follows ``base_path``
    (a service mounted below the root, as in a group of tool services)."""

    def __init__(
        self,
        host: str,
        port: int,
        limit: int = 128,
        timeout: float = 30.0,
        headers: bytes = b"",
        base_path: str = "",
    ) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._base_path = base_path.rstrip("/").encode()
        self._idle: deque[_Connection] = deque()
        self._slots = asyncio.Semaphore(limit)
        self._fixed_headers = f"Host: {host}:{port}\r\n".encode() + headers

    async def post(self, path: str, body: bytes, headers: bytes = b"") -> tuple[int, bytes]:
        """POST a JSON body; ``headers`` are extra ready-encoded ``Name: value\\r\\n`` lines."""
        request = b"".join(
            (
                b"POST ",
                self._base_path,
                path.encode(),
                b" HTTP/1.1\r\n",
                self._fixed_headers,
                b"Content-Type: application/json\r\nContent-Length: ",
                str(len(body)).encode(),
                b"\r\n",
                headers,
                b"\r\n",
                body,
            )
        )
        return await self._send(request)

    async def get(self, path: str) -> tuple[int, bytes]:
        """GET ``path`` (rare: task lists, fetched once per domain)."""
        return await self._send(
            b"GET "
            + self._base_path
            + path.encode()
            + b" HTTP/1.1\r\n"
            + self._fixed_headers
            + b"\r\n"
        )

    async def delete(self, path: str, headers: bytes = b"") -> tuple[int, bytes]:
        """DELETE ``path`` (an episode closing), with extra header lines as for :meth:`post`."""
        return await self._send(
            b"DELETE "
            + self._base_path
            + path.encode()
            + b" HTTP/1.1\r\n"
            + self._fixed_headers
            + headers
            + b"\r\n"
        )

    async def _send(self, request: bytes) -> tuple[int, bytes]:
        async with self._slots:
            connection, reused = await self._acquire()
            try:
                try:
                    result = await connection.send(request, self.timeout)
                except UpstreamError:
                    if not reused:
                        raise
                    # A kept connection the service closed as the request went out (its
                    # keep-alive timeout): no answer came, so one retry on a fresh connection.
                    connection, _ = await self._acquire(fresh=True)
                    result = await connection.send(request, self.timeout)
            except BaseException:
                connection.close()  # whichever attempt failed: never pooled, never leaked
                raise
            if connection.usable:
                self._idle.append(connection)
            else:
                connection.close()
            return result

    async def _acquire(self, fresh: bool = False) -> tuple[_Connection, bool]:
        while self._idle and not fresh:
            connection = self._idle.pop()
            if connection.usable:
                return connection, True
        loop = asyncio.get_running_loop()
        try:
            _, connection = await loop.create_connection(_Connection, self.host, self.port)
        except OSError as error:
            raise UpstreamError(f"cannot connect to {self.host}:{self.port}: {error}") from error
        return connection, False

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()

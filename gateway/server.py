"""The gateway's HTTP/1.1 server: a small ASGI server on uvloop and httptools.

The gateway sits on every tool call's path, so what its server costs counts. Serving the same
app, uvicorn measured 4-9 µs more CPU per proxied call than this server and 0-0.04 ms more
latency (six runs on a loaded 2-core machine, 2026-11-24; ``bench/bench_gateway.py
--side-by-side`` keeps that a measured choice). This server does only what the gateway
needs, in one place:

* HTTP/1.1 keep-alive and pipelining (answers leave in request order), HTTP/1.0 and
  ``Connection: close``; ``Expect: 100-continue``; request bodies with Content-Length or
  chunked (httptools decodes them), buffered whole and capped (413 past ``max_body``, as soon
  as a declared length or the bytes received pass it);
* responses written in one piece with a Content-Length, or chunked when an app streams;
* a malformed request gets a 400 (HTTP/0.9, protocol upgrades and CONNECT included), one whose
  head passes 64 KiB a 431, and one that takes over ``keep_alive_s`` to arrive a 408;
  the connection then closes, after reading what the client was still sending for a moment
  (see ``_Connection._abort``); an app that fails before answering gets a structured 500
  (never a traceback); idle connections close after ``keep_alive_s``;
* ASGI lifespan (the gateway starts its gRPC server there) and a graceful stop on SIGINT or
  SIGTERM: stop accepting, let requests in flight finish, then run the lifespan shutdown.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from collections import deque
from http import HTTPStatus
from urllib.parse import unquote

import httptools

from sopgym.asgi import MAX_API_BODY, ASGIApp, Message, Scope, header
from sopgym.core.errors import ToolError
from sopgym.core.exceptions import InfrastructureError, Signal
from sopgym.core.jsonio import dumps

log = logging.getLogger("sopgym.gateway.server")

MAX_HEAD = 64 * 1024  # request line and headers
KEEP_ALIVE_S = 60.0
GRACE_S = 10.0
LINGER_S = 2.0  # after an error answer: how long to drop what the client still sends
MAX_PIPELINED = 32  # parsed requests waiting on one connection before it stops reading
_ASGI = {"version": "3.0", "spec_version": "2.3"}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def _status_line(status: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    return f"HTTP/1.1 {status} {phrase}\r\n".encode()


_STATUS_LINES = {status.value: _status_line(status.value) for status in HTTPStatus}


def _error_response(status: int, code: str, message: str) -> bytes:
    body = dumps(ToolError(code, message).to_body())
    return b"".join((
        _STATUS_LINES.get(status) or _status_line(status),
        b"content-type: application/json\r\ncontent-length: ",
        b"%d" % len(body),
        b"\r\nconnection: close\r\n\r\n",
        body,
    ))


class ServerError(InfrastructureError, RuntimeError):
    """The server could not start: the port is taken, or the app's lifespan startup failed."""


class _Refusal(Signal):
    """Raised from a parser callback to stop parsing and refuse the request with ``status``
    (httptools hands it back as the ``__context__`` of the parser error it raises)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Request:
    __slots__ = ("body", "continue_asked", "headers", "headers_done", "keep_alive", "refusal",
                 "scope", "size")  # fmt: skip

    def __init__(self) -> None:
        self.scope: Scope = {}  # made when the head is complete
        self.headers: list[tuple[bytes, bytes]] = []
        self.continue_asked = False  # "Expect: 100-continue"
        self.body: list[bytes] = []
        self.size = 0
        self.headers_done = False  # header callbacks after this are trailers: not headers
        self.keep_alive = True
        # answered with this error, in its turn, and the connection closed after it
        self.refusal: tuple[int, str, str] | None = None


class _Connection(asyncio.Protocol):
    """One client connection: parses requests and answers them in order, one at a time."""

    def __init__(self, server: HttpServer) -> None:
        self.server = server
        self.loop = server.loop
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.client: tuple[str, int] | None = None
        self.local: tuple[str, int] | None = None
        self.url = b""
        self.head_size = 0
        self.request: _Request | None = None
        # A request part-received and how far its parsing had got when last looked at, and
        # the bytes received since without progress: see _check_progress.
        self.progress_mark: tuple[_Request, int, int] | None = None
        self.unparsed = 0
        self.arrival_watch: tuple[_Request, float] | None = None  # see check_request_deadline
        self.queue: deque[_Request] = deque()
        self.runner: asyncio.Task[None] | None = None
        self.closed = False
        self.refused = False  # a refusal is queued: nothing more is read
        self.eof = False  # the client sent its last byte: answer what it asked, then close
        self.disconnected = self.loop.create_future()
        self.writable: asyncio.Future[None] | None = None  # set while the peer is not reading
        self.last_active = self.loop.time()

    # ---- asyncio.Protocol ----
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.client = transport.get_extra_info("peername")
        self.local = transport.get_extra_info("sockname")
        self.server.connections.add(self)

    def data_received(self, data: bytes) -> None:
        self.last_active = self.loop.time()
        if self.refused:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # llhttp stops right after the message asking to switch protocols (an Upgrade,
            # or a CONNECT, which carries no Upgrade header): that one, queued last, is
            # refused, not answered.
            if self.queue and (
                self.queue[-1].scope["method"] == "CONNECT"
                or header(self.queue[-1].scope, b"upgrade") is not None
            ):
                self.queue.pop()
            self._refuse(400, "invalid_request", "protocol upgrades are not supported")
            return
        except httptools.HttpParserError as error:
            refusal = error.__context__
            if isinstance(refusal, _Refusal):
                self._refuse(refusal.status, "invalid_request", str(refusal))
            else:
                self._refuse(400, "invalid_request", f"malformed HTTP request: {error}")
            return
        request = self.request
        if request is not None:  # a request only part-received (rare: most come whole)
            self._check_progress(request, len(data))

    def _check_progress(self, request: _Request, size: int) -> None:
        """Refuse a request that sends more than ``MAX_HEAD`` bytes without completing a
        header line, a piece of URL or of body.

        httptools gathers a header (or trailer) line in a buffer of its own, calling back only
        when the line ends, so ``MAX_HEAD`` alone can't stop a line that never ends: the buffer
        would grow without bound, and as it grows by concatenation, copying it would stall the
        event loop, and every other connection with it, for seconds."""
        mark = (request, self.head_size, request.size)
        if mark == self.progress_mark:
            self.unparsed += size
            if self.unparsed > MAX_HEAD and not request.headers_done:
                self._refuse(431, "invalid_request", f"request header line over {MAX_HEAD} bytes")
            elif self.unparsed > MAX_HEAD:  # a trailer line, or a chunk size line
                self._refuse(400, "invalid_request", f"chunk framing over {MAX_HEAD} bytes")
        else:
            self.progress_mark, self.unparsed = mark, 0

    def check_request_deadline(self, now: float, limit_s: float) -> None:
        """Refuse (408) a request that has been arriving for over ``limit_s`` (head and body),
        timed from when the server's sweeper first saw it, so within two of its rounds: a
        client trickling a request a byte at a time is never idle, and would otherwise hold its
        connection forever. Run by the sweeper, not per request."""
        request = self.request
        if request is None or self.refused:
            self.arrival_watch = None
        elif self.arrival_watch is None or self.arrival_watch[0] is not request:
            self.arrival_watch = (request, now)
        elif now - self.arrival_watch[1] > limit_s:
            self._refuse(408, "invalid_request", "request not received in time")

    def eof_received(self) -> bool:
        """A half-close: requests already received are still answered (``True`` keeps the
        transport open for that); the connection closes when the last one is."""
        self.eof = True
        return self.runner is not None or bool(self.queue)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        if not self.disconnected.done():
            self.disconnected.set_result(None)
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)

    def pause_writing(self) -> None:
        if self.writable is None or self.writable.done():
            self.writable = self.loop.create_future()

    def resume_writing(self) -> None:
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)

    # ---- httptools callbacks ----
    def on_message_begin(self) -> None:
        self.url = b""
        self.head_size = 0
        self.request = _Request()

    def on_url(self, url: bytes) -> None:
        self.url += url
        self._count_head(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        request = self.request
        assert request is not None  # on_message_begin made it
        # ": " and CRLF count too: else a flood of empty headers would pass as a small head
        self._count_head(len(name) + len(value) + 4)
        if request.headers_done:  # a chunked body's trailer: never a request header
            return
        name = name.lower()
        request.headers.append((name, value))
        if name == b"expect" and value.lower() == b"100-continue":
            request.continue_asked = True
        elif name == b"content-length" and int(value) > self.server.max_body:
            # refused before the body comes (and instead of a 100 Continue, if asked for);
            # llhttp has checked the value is digits, and the only Content-Length
            limit = self.server.max_body
            raise _Refusal(413, f"request body over {limit} bytes")

    def _count_head(self, size: int) -> None:
        self.head_size += size
        if self.head_size > MAX_HEAD:
            raise _Refusal(431, f"request head over {MAX_HEAD} bytes")

    def on_headers_complete(self) -> None:
        request, parser = self.request, self.parser
        assert request is not None  # on_message_begin made it
        request.headers_done = True
        url = self.url
        if url[0] != 47 and b"://" in url:  # absolute-form (http://host/path): take the path
            parsed = httptools.parse_url(url)
            url = (parsed.path or b"/") + (b"?" + parsed.query if parsed.query else b"")
        path, _, query = url.partition(b"?")
        version = parser.get_http_version()
        request.scope = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": version,
            "method": parser.get_method().decode("ascii"),
            "scheme": "http",
            "path": unquote(path.decode("latin-1")),
            "raw_path": path,
            "query_string": query,
            "root_path": "",
            "headers": request.headers,
            "client": self.client,
            "server": self.local,
        }
        request.keep_alive = parser.should_keep_alive()
        if not request.keep_alive and version == "0.9":  # "GET /": no version, no headers
            raise _Refusal(400, "HTTP/0.9 is not supported")
        # not while earlier requests are answered: the 100 would precede their answers
        if request.continue_asked and self.runner is None and not self.queue:
            self.transport.write(_CONTINUE)  # type: ignore[union-attr]

    def on_body(self, body: bytes) -> None:
        request = self.request
        if request is None:
            return
        request.size += len(body)
        if request.size > self.server.max_body:  # a chunked body: refused as soon as it passes
            raise _Refusal(413, f"request body over {self.server.max_body} bytes")
        request.body.append(body)

    def on_message_complete(self) -> None:
        request, self.request = self.request, None
        if request is not None:
            self._enqueue(request)

    def _enqueue(self, request: _Request) -> None:
        self.queue.append(request)
        if len(self.queue) >= MAX_PIPELINED:
            self.transport.pause_reading()  # type: ignore[union-attr]
        if self.runner is None:
            self.runner = self.loop.create_task(self._answer_queue())

    def _refuse(self, status: int, code: str, message: str) -> None:
        """Refuse what the client sent: at once when nothing is being answered, else after
        the requests before it (their answers must not be displaced), then close."""
        if self.runner is None and not self.queue:
            self._abort(status, code, message)
            return
        self.refused = True
        refusal = _Request()
        refusal.refusal = (status, code, message)
        self._enqueue(refusal)

    # ---- answering ----
    async def _answer_queue(self) -> None:
        try:
            while self.queue and not self.closed:
                request = self.queue.popleft()
                if len(self.queue) == MAX_PIPELINED - 1 and not self.refused:
                    self.transport.resume_reading()  # type: ignore[union-attr]
                if request.refusal is not None:
                    self._abort(*request.refusal)
                    return
                await self._answer(request)
                self.last_active = self.loop.time()
                if not request.keep_alive:
                    self.close()
                    return
        finally:
            self.runner = None
            if self.eof and not self.queue:
                self.close()

    async def _answer(self, request: _Request) -> None:
        exchange = _Exchange(self, request)
        try:
            await self.server.app(request.scope, exchange.receive, exchange.send)
        except Exception:  # an app defect: log it, answer structurally if still possible
            log.exception("request %s %s failed", request.scope["method"], request.scope["path"])
            if exchange.started:
                self.close()
            else:
                self._abort(500, "internal_error", "gateway error")
            return
        if not exchange.started:
            log.error("app sent no response to %s %s", request.scope["method"],
                      request.scope["path"])
            self._abort(500, "internal_error", "gateway sent no response")
        elif not exchange.finished:
            self.close()  # a truncated stream: end it

    def _abort(self, status: int, code: str, message: str) -> None:
        """Answer with an error and close: the connection's state can't be trusted further.

        The client may still be sending (the rest of a body refused with a 413, pipelined
        requests): closing a socket with unread input makes the kernel reset the connection,
        which can destroy the answer before the client reads it. So the answer is followed by
        a half-close, what still comes is read and dropped, and the connection closes when the
        client closes its side, or after ``LINGER_S``."""
        transport = self.transport
        if self.closed or transport is None:
            self.close()
            return
        transport.write(_error_response(status, code, message))
        self.closed = self.refused = True  # nothing more is written, nor parsed
        self.queue.clear()
        if self.eof or transport.is_closing() or not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        transport.resume_reading()  # in case MAX_PIPELINED had paused it
        self.loop.call_later(LINGER_S, transport.close)

    def write(self, data: bytes) -> None:
        if not self.closed:
            self.transport.write(data)  # type: ignore[union-attr]

    @property
    def stalled(self) -> bool:
        """The client stopped reading what it is sent (the transport's buffer is full)."""
        return self.writable is not None and not self.writable.done()

    def idle_for(self, now: float) -> float:
        """Seconds since the connection last read a request or finished an answer; answering
        counts as activity, unless the client stopped reading the answer."""
        if self.runner is not None and not self.stalled:
            return 0.0
        return now - self.last_active

    def close(self, abort: bool = False) -> None:
        """Close after what was written (``abort``: at once, dropping it); requests still
        queued are dropped unanswered."""
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:  # also ends a lingering close (_abort) early; a no-op when already closed
                self.transport.close()
        self.closed = True
        self.queue.clear()


class _Exchange:
    """One request's ASGI ``receive`` and ``send``."""

    __slots__ = ("bodiless", "body_read", "chunked", "connection", "finished", "head", "request",
                 "started")  # fmt: skip

    def __init__(self, connection: _Connection, request: _Request) -> None:
        self.connection, self.request = connection, request
        self.started = self.finished = self.chunked = self.body_read = self.bodiless = False
        self.head: list[bytes] = []

    async def receive(self) -> Message:
        if not self.body_read:
            self.body_read = True
            body = b"".join(self.request.body)
            return {"type": "http.request", "body": body, "more_body": False}
        await self.connection.disconnected
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        connection = self.connection
        if connection.writable is not None:
            await connection.writable
        kind = message["type"]
        if kind == "http.response.start" and not self.started:
            self.started = True
            status = message["status"]
            head = [_STATUS_LINES.get(status) or _status_line(status)]
            has_length = False
            for name, value in message.get("headers", ()):
                has_length = has_length or name.lower() == b"content-length"
                head += (name, b": ", value, b"\r\n")
            self.bodiless = self.request.scope["method"] == "HEAD" or status in (204, 304)
            self.head, self.chunked = head, not has_length and not self.bodiless
        elif kind == "http.response.body" and self.started and not self.finished:
            body = message.get("body", b"")
            more = message.get("more_body", False)
            self.finished = not more
            if self.head:
                self._frame_head(len(body), more)
            if self.bodiless:
                body = b""
            elif self.chunked:
                framed = b"%x\r\n%s\r\n" % (len(body), body) if body else b""
                body = framed + (b"" if more else b"0\r\n\r\n")
            if self.head:
                self.head += (b"\r\n", body)
                body, self.head = b"".join(self.head), []
            if body:
                connection.write(body)
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r} at this point of the response")

    def _frame_head(self, first_size: int, more: bool) -> None:
        """The framing headers, known once the first body part is: a body sent whole gets its
        length; a streamed one is chunked, or for an HTTP/1.0 client (no chunking there) ends
        when the connection closes."""
        request = self.request
        if self.chunked and not more:
            self.head.append(b"content-length: %d\r\n" % first_size)
            self.chunked = False
        elif self.chunked and request.scope["http_version"] == "1.0":
            self.chunked, request.keep_alive = False, False
        if not request.keep_alive:
            self.head.append(b"connection: close\r\n")
        elif request.scope["http_version"] == "1.0":  # it asked; without the echo it must close
            self.head.append(b"connection: keep-alive\r\n")
        if self.chunked:
            self.head.append(b"transfer-encoding: chunked\r\n")


class _Lifespan:
    """Runs the app's ASGI lifespan protocol: startup before serving, shutdown after."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.inbox: asyncio.Queue[Message] = asyncio.Queue()
        self.outbox: asyncio.Queue[Message] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        try:
            await self.app({"type": "lifespan", "asgi": _ASGI, "state": {}}, self.inbox.get,
                           self.outbox.put)
        except Exception as error:  # surfaces as a failed startup/shutdown below
            await self.outbox.put({"type": "lifespan.failed", "message": repr(error)})
        else:  # an app without lifespan support may just return: nothing more will come
            await self.outbox.put({"type": "lifespan.returned"})

    async def _event(self, name: str) -> None:
        await self.inbox.put({"type": f"lifespan.{name}"})
        reply = await self.outbox.get()
        if reply["type"] == "lifespan.returned":
            return
        if reply["type"] != f"lifespan.{name}.complete":
            raise ServerError(f"lifespan {name} failed: {reply.get('message', reply['type'])}")

    async def startup(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._run())
        await self._event("startup")

    async def shutdown(self, timeout_s: float = GRACE_S) -> None:
        if self.task is None or self.task.done():
            return
        await asyncio.wait_for(self._event("shutdown"), timeout_s)
        await self.task


class HttpServer:
    """Serve an ASGI ``app`` on ``host:port`` (``port=0``: any free port, see ``.port``)."""

    def __init__(
        self,
        app: ASGIApp,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_body: int = MAX_API_BODY,
        keep_alive_s: float = KEEP_ALIVE_S,
    ) -> None:
        self.app, self.host, self.port = app, host, port
        self.max_body, self.keep_alive_s = max_body, keep_alive_s
        self.connections: set[_Connection] = set()
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # at start()
        self._server: asyncio.Server | None = None
        self._lifespan = _Lifespan(app)
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        await self._lifespan.startup()
        try:
            self._server = await self.loop.create_server(
                lambda: _Connection(self), self.host, self.port, backlog=2048
            )
        except OSError as error:
            await self._lifespan.shutdown()
            raise ServerError(f"cannot listen on {self.host}:{self.port}: {error}") from None
        self.port = self._server.sockets[0].getsockname()[1]
        self._sweeper = self.loop.create_task(self._close_idle())

    async def stop(self, grace_s: float = GRACE_S) -> None:
        """Stop accepting, close idle connections, give requests in flight ``grace_s`` to
        finish, then run the lifespan shutdown."""
        if self._server is not None:
            self._server.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        deadline = self.loop.time() + grace_s
        while True:
            for connection in list(self.connections):
                if connection.runner is None:
                    connection.close()
            if not self.connections or self.loop.time() > deadline:
                break
            await asyncio.sleep(0.02)
        for connection in list(self.connections):
            connection.close(abort=True)
        await self._lifespan.shutdown()

    async def _close_idle(self) -> None:
        while True:
            await asyncio.sleep(min(5.0, self.keep_alive_s / 2))
            now = self.loop.time()
            for connection in list(self.connections):
                if connection.idle_for(now) > self.keep_alive_s:
                    connection.close(abort=connection.stalled)
                else:
                    connection.check_request_deadline(now, self.keep_alive_s)

    async def serve_until_signalled(self) -> None:
        await self.start()
        stopping = asyncio.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.loop.add_signal_handler(signum, stopping.set)
        await stopping.wait()
        await self.stop()


# Allocations (net of frees) between two young-generation collections: CPython's default is 700.
GC_YOUNG_THRESHOLD = 10_000


def tune_gc() -> None:
    """Set the cyclic garbage collector for the gateway process (whichever HTTP server it
    runs), a long-running server holding many live objects.

    The gateway keeps every call record of up to ``--keep-episodes`` episodes. With CPython's
    default thresholds a young collection ran every few dozen calls, each promoting the
    objects of the requests then in flight, which soon triggered full collections over the
    whole heap: measured under wrk, 7-10 µs of CPU per proxied call, a fifth of the
    gateway's. Collecting the young generation every 10,000 surviving allocations instead
    makes that under 1 µs (a few MB of cyclic garbage at most waits a little longer), and
    freezing what start-up made (modules, the catalog) keeps it out of every later full
    collection."""
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def serve(app: ASGIApp, host: str, port: int) -> None:
    """Serve ``app`` until SIGINT/SIGTERM (the ``sopgym gateway`` command)."""
    import uvloop

    uvloop.run(HttpServer(app, host, port).serve_until_signalled())


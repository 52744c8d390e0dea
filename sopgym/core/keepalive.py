"""Keep-alive HTTP/1.1 on the hot paths (an agent's calls to the gateway and to the model, a
worker's span exports): a socket per thread (or one, shared, where calls are serialised), the
request written in one send, the answer read by httptools (llhttp, the parser the gateway's
own server uses).

Agents call the gateway once or more per step, so the client's own cost is part of every step.
Through httpx a call cost ~2.2 ms of client time. bench/bench_grpc.py's "client CPU per call"
(Episode.call, its tool span included, beside a bare socket's 13 µs) measured ~140 µs on the
standard library's http.client, most of it in its e-mail header parser, and ~70 µs on this.

Each thread keeps its own connection (the runner's scoring threads share one client). Before a
kept connection is reused it is checked for a close (or anything else) the server sent while
it sat idle, and replaced if so; a request is never sent twice here, since one that failed
after sending may have run. A connection whose exchange failed in any way (a timeout included)
is closed: its state is unknown. Answers are framed by Content-Length, chunked encoding, or
the server's close; a server that asks to close (``Connection: close``, HTTP/1.0) is obeyed.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import struct
import sys
import threading
import urllib.request
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httptools
import orjson

# What a failed exchange raises: the socket's errors (timeouts and resets included) and an
# answer that is not HTTP.
TransportError = (OSError, httptools.HttpParserError)
_READ_SIZE = 65536

# Linux takes SO_RCVTIMEO / SO_SNDTIMEO as a struct timeval of two longs.
KERNEL_TIMEOUTS = sys.platform == "linux"
_NO_LIMIT = struct.pack("ll", 0, 0)


def direct_http(url: str) -> bool:
    """Whether ``url`` is a plain ``http://`` address that no proxy is configured for, which
    these clients may speak to themselves; anything else goes through httpx, which honours
    proxies and TLS settings."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return False
    proxied = urllib.request.getproxies().get("http")
    return not proxied or bool(urllib.request.proxy_bypass(parts.hostname))


def _timeval(seconds: float | None) -> bytes:
    if seconds is None:
        return _NO_LIMIT
    micros = max(1, round(seconds * 1_000_000))  # 0 would mean no limit to the kernel
    return struct.pack("ll", micros // 1_000_000, micros % 1_000_000)


def set_timeout(connection: socket.socket, seconds: float | None) -> None:
    """``connection.settimeout(seconds)``, the limit kept by the kernel on a plain connection.

    A socket with a Python timeout waits in ``poll`` before every ``send`` and ``recv``: two
    system calls, each letting go of the GIL, where a blocking socket makes one. With many
    episodes on a worker's threads every release hands the GIL to another thread and costs a
    context switch to get it back (about 4 switches a model call fewer at 10 in flight, some
    4% of the worker's CPU). So on Linux a plain connection is blocking, with
    ``SO_RCVTIMEO`` and ``SO_SNDTIMEO`` set to the limit: it means the same (each send or
    receive may wait that long) and running out raises ``TimeoutError`` as before
    (:func:`read_answer`, :func:`send_all`). Elsewhere, and for TLS, the Python timeout
    stays."""
    if not KERNEL_TIMEOUTS or isinstance(connection, ssl.SSLSocket):
        connection.settimeout(seconds)
        return
    if connection.gettimeout() is not None:
        connection.settimeout(None)
    limit = _timeval(seconds)
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, limit)
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, limit)


def send_all(connection: socket.socket, data: bytes) -> None:
    """``sendall``, a kernel-kept limit running out raising ``TimeoutError`` as a Python
    timeout does."""
    try:
        connection.sendall(data)
    except BlockingIOError as error:  # SO_SNDTIMEO ran out
        raise TimeoutError("timed out") from error


@dataclass
class Reply:
    """A gateway answer: the status and the raw body."""

    status: int
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class Answer:
    """One answer as httptools hands it over (its callbacks): status, headers, body, whether it
    is complete and whether the connection may carry another request."""

    __slots__ = ("body", "complete", "framed", "headers", "headers_done", "keep_alive", "parser",
                 "status")  # fmt: skip

    def __init__(self) -> None:
        self.body: list[bytes] = []
        self.headers: list[tuple[bytes, bytes]] = []
        self.complete = self.headers_done = self.keep_alive = False
        self.framed = False  # Content-Length or chunked: else the body ends at the close
        self.status = 0
        self.parser = httptools.HttpResponseParser(self)

    @property
    def reusable(self) -> bool:
        return self.complete and self.keep_alive

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        self.headers_done = True  # llhttp knows these only until the answer is complete
        self.keep_alive = self.parser.should_keep_alive()
        self.status = self.parser.get_status_code()

    def on_body(self, data: bytes) -> None:
        self.body.append(data)

    def on_message_complete(self) -> None:
        self.complete = True


def read_answer(connection: socket.socket) -> Answer:
    """Read one answer off ``connection``. A close before the answer is whole raises
    :class:`ConnectionResetError` (saying whether any of it came), a malformed answer
    :class:`httptools.HttpParserError`; the socket's own errors (timeouts included) pass."""
    answer = Answer()
    while not answer.complete:
        try:
            data = connection.recv(_READ_SIZE)
        except BlockingIOError as error:  # SO_RCVTIMEO ran out (set_timeout)
            raise TimeoutError("timed out") from error
        if not data:
            if answer.headers_done and not answer.framed:  # the close ends the body
                break
            said = "mid-answer" if answer.headers_done else "without answering"
            raise ConnectionResetError(f"the server closed the connection {said}")
        answer.parser.feed_data(data)
    return answer


def _SHARED() -> int:
    return 0  # the owner of a shared connection: never a thread's ident


class Connections:
    """Kept connections, one per thread and origin (a connection is never shared between
    threads). A kept connection the server spoke to while it sat idle (its close, mostly) is
    not handed out again. A thread that ends its work closes its own with
    :meth:`close_thread` (an agent worker's pool threads keep theirs from one episode to the
    next and close them when they end: without it, every thread gone would leave its sockets
    open). With ``per_thread=False`` there is one connection per origin for all threads: the
    caller serialises its requests (:class:`HttpTransport` does)."""

    _all: ClassVar[weakref.WeakSet[Connections]] = weakref.WeakSet()
    _all_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, per_thread: bool = True) -> None:
        self._kept: dict[tuple[int, str, int], socket.socket] = {}
        self._lock = threading.Lock()
        self._owner: Callable[[], int] = threading.get_ident if per_thread else _SHARED
        with Connections._all_lock:
            Connections._all.add(self)

    @classmethod
    def close_thread(cls) -> None:
        """Close the calling thread's connections in every pool of this process."""
        ident = threading.get_ident()
        with cls._all_lock:
            pools = list(cls._all)
        for pool in pools:
            with pool._lock:
                mine = [key for key in pool._kept if key[0] == ident]
                connections = [pool._kept.pop(key) for key in mine]
            for connection in connections:
                connection.close()

    def kept(self, host: str, port: int) -> socket.socket | None:
        """This thread's connection to ``host:port`` if it can carry a request, else None."""
        connection = self._kept.get((self._owner(), host, port))
        if connection is not None and _spoken_to_while_idle(connection):
            self.drop(host, port, connection)
            return None
        return connection

    def keep(self, host: str, port: int, connection: socket.socket) -> None:
        """Keep ``connection`` as this thread's to ``host:port``, closing the one it replaces."""
        with self._lock:
            previous = self._kept.get((self._owner(), host, port))
            self._kept[(self._owner(), host, port)] = connection
        if previous is not None and previous is not connection:
            previous.close()

    def drop(self, host: str, port: int, connection: socket.socket) -> None:
        """Close ``connection``; this thread's next request to ``host:port`` opens another."""
        key = (self._owner(), host, port)
        with self._lock:
            if self._kept.get(key) is connection:
                del self._kept[key]
        connection.close()

    def release(self, host: str, port: int) -> None:
        """Close this thread's connection to ``host:port``, if any."""
        with self._lock:
            connection = self._kept.pop((self._owner(), host, port), None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        with self._lock:
            connections, self._kept = list(self._kept.values()), {}
        for connection in connections:
            connection.close()


class HttpTransport:
    """Requests to one base URL (``http://`` or ``https://``, optionally with a path prefix):
    a kept connection per thread, or with ``per_thread=False`` one for all, its requests taking
    turns."""

    def __init__(self, base_url: str, timeout: float, per_thread: bool = True) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._tls = ssl.create_default_context() if parts.scheme == "https" else None
        self._host, self._timeout = parts.hostname, timeout
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        authority = parts.netloc.rpartition("@")[2]  # without any user:password@
        self._head = f"Host: {authority}\r\nAccept-Encoding: identity\r\n"
        self._connections = Connections(per_thread)
        self._turns = contextlib.nullcontext() if per_thread else threading.Lock()

    def request(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        json: Any = None,
        *,
        content: bytes | None = None,
        timeout: float | None = None,
    ) -> Reply:
        """One exchange; raises one of :data:`TransportError` when it fails. ``path`` must be
        URL-encoded already (a name from a model goes through :func:`urllib.parse.quote`).
        The body is ``json`` (sent as JSON) or ``content`` (bytes, its type in ``headers``);
        ``timeout``: this exchange's limit instead of the transport's."""
        body = orjson.dumps(json) if json is not None else content or b""
        head = f"{method} {self._prefix}{path} HTTP/1.1\r\n{self._head}"
        for name, value in headers.items():
            head += f"{name}: {value}\r\n"
        if json is not None:
            head += "Content-Type: application/json\r\n"
        if json is not None or content is not None or method != "GET":
            head += f"Content-Length: {len(body)}\r\n"
        given = f"{method}{path}{''.join(headers)}{''.join(headers.values())}"
        if "\r" in given or "\n" in given or " " in path:  # nothing may add or split a line
            raise ValueError(f"{method} {path!r}: a space or line break in the request head")
        with self._turns:
            connection = self._connections.kept(self._host, self._port) or self._open()
            try:
                if timeout is not None:
                    set_timeout(connection, timeout)
                send_all(connection, (head + "\r\n").encode("latin-1") + body)
                answer = read_answer(connection)
            except BaseException:
                self._connections.drop(self._host, self._port, connection)  # state unknown
                raise
            if not answer.reusable:
                self._connections.drop(self._host, self._port, connection)
            elif timeout is not None:
                set_timeout(connection, self._timeout)
        return Reply(answer.status, b"".join(answer.body))

    def _open(self) -> socket.socket:
        """A fresh connection for this thread, replacing (and closing) its previous one."""
        connection = socket.create_connection((self._host, self._port), self._timeout)
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls is not None:
            connection = self._tls.wrap_socket(connection, server_hostname=self._host)
        set_timeout(connection, self._timeout)
        self._connections.keep(self._host, self._port, connection)
        return connection

    def release(self) -> None:
        """Close this thread's connection: its next request opens a new one, which a load
        balancer that spreads connections (a Kubernetes Service) may send elsewhere."""
        self._connections.release(self._host, self._port)

    def close(self) -> None:
        self._connections.close()


def _spoken_to_while_idle(connection: socket.socket) -> bool:
    """Whether the server sent anything (its close, mostly) to a connection between requests:
    then it cannot carry the next one. (A TLS connection's buffered bytes count too.)"""
    if isinstance(connection, ssl.SSLSocket) and connection.pending():
        return True
    poller = select.poll()  # not select(): a worker holding hundreds of episodes has fds > 1023
    poller.register(connection, select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(0))

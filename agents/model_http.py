"""The bytes-on-the-wire layer under the model SDKs for plain-HTTP endpoints: an httpx transport
on kept sockets, replies parsed by httptools (llhttp, the parser uvicorn serves with).

The OpenAI SDK and LangChain stay the path a model call takes (request building, auth headers,
typed errors, reply parsing); only the exchange of bytes changes. Against the scripted model
server on our 2-core machines one ``/v1/chat/completions`` exchange cost ~0.40 ms of client
time through an httpx client (httpcore, h11), ~0.22 ms over ``http.client`` (its per-reply
file object and ``email`` header parser) and ~0.14 ms as one socket write and an httptools
parse, and an agent step makes one such call.

Only ``http://`` endpoints that no proxy is configured for are served here (the scripted model,
local or compose/k8s OpenAI-compatible servers); ``https://`` providers and proxied URLs keep
httpx's own transport, with its TLS, proxy and HTTP/2 handling. Connections and reading are
:mod:`sopgym.core.keepalive`'s (the agents' client to the gateway): each thread keeps one
connection per origin, checked before reuse for a close the server sent while it sat idle. A
request is never resent here: an exchange that fails closes its connection and raises the httpx
error the default transport would (connect errors and timeouts, read/write timeouts, protocol
errors), so the SDK's and :mod:`sopgym.agents.llm`'s retry and timeout handling see what they
always saw, the socket's own error (``ConnectionRefusedError``, say) kept as the cause.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from urllib.parse import urlsplit

import httptools
import httpx

from sopgym.core.keepalive import (
    Answer,
    Connections,
    direct_http,
    read_answer,
    send_all,
    set_timeout,
)


class KeepAliveTransport(httpx.BaseTransport):
    """HTTP/1.1 over one kept socket per thread and origin; replies parsed by httptools.

    :meth:`handle_request` serves httpx; :meth:`exchange` takes a request already in bytes
    (:class:`~sopgym.agents.models.PlainChatCompletions` builds one without an
    ``httpx.Request``, a tenth of an agent step's CPU) and returns the raw answer."""

    def __init__(self) -> None:
        self._connections = Connections()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"only http:// is served here, not {request.url}")
        lines = [b"%s %s HTTP/1.1" % (request.method.encode(), request.url.raw_path)]
        for name, value in request.headers.raw:
            if b"\r" in value or b"\n" in value:  # would end the header early: a request smuggled
                raise httpx.LocalProtocolError(f"line break in header {name!r}", request=request)
            lines.append(b"%s: %s" % (name, value))
        lines.extend((b"", request.read()))
        answer = self.exchange(
            request.url.host,
            request.url.port or 80,
            b"\r\n".join(lines),
            request.extensions.get("timeout", {}),
            lambda: request,
        )
        return httpx.Response(
            answer.status,
            headers=answer.headers,
            stream=httpx.ByteStream(b"".join(answer.body)),
            request=request,
        )

    def exchange(
        self,
        host: str,
        port: int,
        data: bytes,
        timeouts: dict[str, float | None],
        request: Callable[[], httpx.Request],
    ) -> Answer:
        """Send ``data`` (a whole HTTP/1.1 request) to ``host:port`` on this thread's kept
        connection and read the answer. Failures raise the httpx error the default transport
        would, made with ``request()`` (called only then)."""
        kept = self._connections.kept(host, port)
        sock = kept or self._connect(host, port, timeouts.get("connect"), request)
        try:
            answer = self._send(host, port, sock, data, timeouts, request)
        except (httpx.RemoteProtocolError, httpx.WriteError) as error:
            if kept is None or not _closed_while_idle(error):
                raise
            # the server closed the kept connection as the request left (its keep-alive
            # timeout): nothing of an answer came, so the request goes once more, on a new one
            sock = self._connect(host, port, timeouts.get("connect"), request)
            answer = self._send(host, port, sock, data, timeouts, request)
        if not answer.reusable:
            self._connections.drop(host, port, sock)
        return answer

    def _send(
        self,
        host: str,
        port: int,
        sock: socket.socket,
        data: bytes,
        timeouts: dict[str, float | None],
        request: Callable[[], httpx.Request],
    ) -> Answer:
        try:
            set_timeout(sock, timeouts.get("read"))
            return _exchange(sock, data, request)
        except BaseException:
            self._connections.drop(host, port, sock)  # its state is unknown: the next opens anew
            raise

    def _connect(
        self,
        host: str,
        port: int,
        timeout: float | None,
        request: Callable[[], httpx.Request],
    ) -> socket.socket:
        """A fresh connection to ``host:port`` for this thread, replacing its previous one."""
        try:
            sock = socket.create_connection((host, port), timeout)
        except TimeoutError as error:
            message = str(error) or "connect timed out"
            raise httpx.ConnectTimeout(message, request=request()) from error
        except OSError as error:
            raise httpx.ConnectError(str(error), request=request()) from error
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a request is one write
        self._connections.keep(host, port, sock)
        return sock

    def close(self) -> None:
        self._connections.close()


def _closed_while_idle(error: httpx.HTTPError) -> bool:
    """Whether a request on a kept connection failed because the server had closed it: a
    reset or a broken pipe before any of an answer came (never one cut mid-answer)."""
    cause = error.__cause__
    return isinstance(cause, ConnectionResetError | BrokenPipeError) and "mid-answer" not in str(
        cause
    )


def _exchange(sock: socket.socket, data: bytes, request: Callable[[], httpx.Request]) -> Answer:
    """Send ``data`` in one write and read its answer. Failures raise the httpx error the
    default transport would, the socket's own error kept as the cause."""
    try:
        send_all(sock, data)
    except TimeoutError as error:
        raise httpx.WriteTimeout(str(error) or "write timed out", request=request()) from error
    except OSError as error:
        raise httpx.WriteError(str(error), request=request()) from error
    try:
        return read_answer(sock)
    except TimeoutError as error:
        raise httpx.ReadTimeout(str(error) or "read timed out", request=request()) from error
    except ConnectionResetError as error:
        # a transport failure (as http.client's RemoteDisconnected is), which our retries
        # treat as one: the cause says what happened
        raise httpx.RemoteProtocolError(str(error), request=request()) from error
    except httptools.HttpParserError as error:
        message = f"malformed reply: {error}"
        raise httpx.RemoteProtocolError(message, request=request()) from error
    except OSError as error:
        raise httpx.ReadError(str(error), request=request()) from error


def keep_alive_mounts(base_url: str | None) -> dict[str, httpx.BaseTransport]:
    """httpx ``mounts`` that send requests to ``base_url``'s origin through
    :class:`KeepAliveTransport`: for a plain ``http://`` URL that no proxy is configured for;
    none otherwise (httpx's default transport serves everything)."""
    if not base_url or not direct_http(base_url):
        return {}
    return {f"http://{urlsplit(base_url).netloc}": KeepAliveTransport()}

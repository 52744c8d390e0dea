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
httpx's own transport, with its TLS, proxy and HTTP/2 handling. Each thread keeps one
connection per origin, checked before reuse for a close the server sent while it sat idle (as
:mod:`sopgym.client.keepalive` does for the gateway). A request is never resent here: an
exchange that fails closes its connection and raises the httpx error the default transport
would (connect errors and timeouts, read/write timeouts, protocol errors), so the SDK's and
:mod:`sopgym.agents.llm`'s retry and timeout handling see what they always saw, the socket's
own error (``ConnectionRefusedError``, say) kept as the cause.
"""

from __future__ import annotations

import select
import socket
import threading
import urllib.request
from urllib.parse import urlsplit

import httptools
import httpx


class KeepAliveTransport(httpx.BaseTransport):
    """HTTP/1.1 over one kept socket per thread and origin; replies parsed by httptools."""

    def __init__(self) -> None:
        self._connections: dict[tuple[int, str, int], socket.socket] = {}
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"only http:// is served here, not {request.url}")
        timeouts = request.extensions.get("timeout", {})
        key = (threading.get_ident(), request.url.host, request.url.port or 80)
        sock = self._connections.get(key)
        if sock is None or _spoken_to_while_idle(sock):
            sock = self._connect(key, timeouts.get("connect"), request)
        try:
            sock.settimeout(timeouts.get("read"))
            response, keep_alive = _exchange(sock, request)
        except BaseException:
            self._drop(key, sock)  # its state is unknown: the next request opens another
            raise
        if not keep_alive:
            self._drop(key, sock)
        return response

    def _connect(
        self, key: tuple[int, str, int], timeout: float | None, request: httpx.Request
    ) -> socket.socket:
        """A fresh connection for ``key``, replacing (and closing) the previous one."""
        try:
            sock = socket.create_connection((key[1], key[2]), timeout)
        except TimeoutError as error:
            message = str(error) or "connect timed out"
            raise httpx.ConnectTimeout(message, request=request) from error
        except OSError as error:
            raise httpx.ConnectError(str(error), request=request) from error
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a request is one write
        with self._lock:
            previous = self._connections.get(key)
            self._connections[key] = sock
        if previous is not None:
            previous.close()
        return sock

    def _drop(self, key: tuple[int, str, int], sock: socket.socket) -> None:
        with self._lock:
            if self._connections.get(key) is sock:
                del self._connections[key]
        sock.close()

    def close(self) -> None:
        with self._lock:
            connections, self._connections = list(self._connections.values()), {}
        for sock in connections:
            sock.close()


def _spoken_to_while_idle(sock: socket.socket) -> bool:
    """Whether the server sent anything (its close, mostly) to a connection between requests:
    then it cannot carry the next one."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def _exchange(sock: socket.socket, request: httpx.Request) -> tuple[httpx.Response, bool]:
    """Send ``request`` in one write and read its reply: the response, and whether the
    connection may carry another request."""
    lines = [b"%s %s HTTP/1.1" % (request.method.encode(), request.url.raw_path)]
    for name, value in request.headers.raw:
        if b"\r" in value or b"\n" in value:  # would end the header early: a request smuggled
            raise httpx.LocalProtocolError(f"line break in header {name!r}", request=request)
        lines.append(b"%s: %s" % (name, value))
    lines.extend((b"", request.read()))
    try:
        sock.sendall(b"\r\n".join(lines))
    except TimeoutError as error:
        raise httpx.WriteTimeout(str(error) or "write timed out", request=request) from error
    except OSError as error:
        raise httpx.WriteError(str(error), request=request) from error
    reply = _Reply()
    parser = reply.parser = httptools.HttpResponseParser(reply)
    try:
        while not reply.complete:
            data = sock.recv(65536)
            if not data:
                reply.end_of_stream(request)
                break
            parser.feed_data(data)
    except TimeoutError as error:
        raise httpx.ReadTimeout(str(error) or "read timed out", request=request) from error
    except httptools.HttpParserError as error:
        message = f"malformed reply: {error}"
        raise httpx.RemoteProtocolError(message, request=request) from error
    except OSError as error:
        raise httpx.ReadError(str(error), request=request) from error
    response = httpx.Response(
        parser.get_status_code(),
        headers=reply.headers,
        stream=httpx.ByteStream(b"".join(reply.body)),
        request=request,
    )
    return response, reply.complete and reply.keep_alive


class _Reply:
    """One response as httptools hands it over: headers, body chunks, whether it ended."""

    parser: httptools.HttpResponseParser

    def __init__(self) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.headers_done = self.complete = self.keep_alive = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.keep_alive = self.parser.should_keep_alive()  # llhttp forgets it once complete

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True

    def end_of_stream(self, request: httpx.Request) -> None:
        """The server closed the connection: the end of a reply that is delimited by the close
        (neither a length nor chunks), else an error."""
        framed = {name.lower() for name, _ in self.headers} & {b"content-length",
                                                                b"transfer-encoding"}  # fmt: skip
        if not self.headers_done:
            message = "the server closed the connection without a reply"
        elif framed:
            message = "the server closed the connection before its reply was complete"
        else:
            return
        # the cause says what happened, as http.client's RemoteDisconnected does: a transport
        # failure, which our retries treat as one
        raise httpx.RemoteProtocolError(message, request=request) from ConnectionResetError(message)


def keep_alive_mounts(base_url: str | None) -> dict[str, httpx.BaseTransport]:
    """httpx ``mounts`` that send requests to ``base_url``'s origin through
    :class:`KeepAliveTransport`: for a plain ``http://`` URL that no proxy is configured for;
    none otherwise (httpx's default transport serves everything)."""
    if not base_url:
        return {}
    parts = urlsplit(base_url)
    if parts.scheme != "http" or not parts.hostname:
        return {}
    if urllib.request.getproxies().get("http") and not urllib.request.proxy_bypass(parts.hostname):
        return {}
    return {f"http://{parts.netloc}": KeepAliveTransport()}

"""The bytes-on-the-wire layer under the model SDKs for plain-HTTP endpoints: an httpx transport
on the standard library's keep-alive ``http.client`` connections.

The OpenAI SDK and LangChain stay the path a model call takes (request building, auth headers,
typed errors, reply parsing); only what httpx hands to httpcore changes. Against the scripted
model server httpcore and h11 cost ~0.25 ms of client time per call on our 2-core machines
(``/v1/chat/completions``: ~0.48 ms through an httpx client against ~0.22 ms for the same bytes
over ``http.client``), and an agent step makes one such call.

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

import http.client
import threading
import urllib.request
from urllib.parse import urlsplit

import httpx

from sopgym.client.keepalive import _spoken_to_while_idle as spoken_to_while_idle


class KeepAliveTransport(httpx.BaseTransport):
    """HTTP/1.1 over one kept ``http.client`` connection per thread and origin."""

    def __init__(self) -> None:
        self._connections: dict[tuple[int, str, int], http.client.HTTPConnection] = {}
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"only http:// is served here, not {request.url}")
        timeouts = request.extensions.get("timeout", {})
        key = (threading.get_ident(), request.url.host, request.url.port or 80)
        connection = self._connections.get(key)
        if connection is None or connection.sock is None or spoken_to_while_idle(connection):
            connection = self._connect(key, timeouts.get("connect"), request)
        try:
            connection.sock.settimeout(timeouts.get("read"))
            return self._exchange(connection, request)
        except BaseException:
            self._drop(key, connection)  # its state is unknown: the next request opens another
            raise

    def _connect(
        self, key: tuple[int, str, int], timeout: float | None, request: httpx.Request
    ) -> http.client.HTTPConnection:
        """A fresh, connected connection for ``key``, replacing (and closing) the previous."""
        connection = http.client.HTTPConnection(key[1], key[2], timeout=timeout)
        try:
            connection.connect()
        except TimeoutError as error:
            raise httpx.ConnectTimeout(
                str(error) or "connect timed out", request=request
            ) from error
        except OSError as error:
            raise httpx.ConnectError(str(error), request=request) from error
        with self._lock:
            previous = self._connections.get(key)
            self._connections[key] = connection
        if previous is not None:
            previous.close()
        return connection

    @staticmethod
    def _exchange(connection: http.client.HTTPConnection, request: httpx.Request) -> httpx.Response:
        target = request.url.raw_path.decode("ascii")
        try:
            connection.putrequest(request.method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in request.headers.raw:
                connection.putheader(name, value)
            connection.endheaders(request.read() or None)
        except TimeoutError as error:
            raise httpx.WriteTimeout(str(error) or "write timed out", request=request) from error
        except OSError as error:
            raise httpx.WriteError(str(error), request=request) from error
        try:
            response = connection.getresponse()
            body = response.read()
        except TimeoutError as error:
            raise httpx.ReadTimeout(str(error) or "read timed out", request=request) from error
        except http.client.HTTPException as error:  # a close mid-reply, a malformed status line
            message = str(error) or type(error).__name__
            raise httpx.RemoteProtocolError(message, request=request) from error
        except OSError as error:
            raise httpx.ReadError(str(error), request=request) from error
        return httpx.Response(
            response.status,
            headers=response.getheaders(),
            stream=httpx.ByteStream(body),
            request=request,
        )

    def _drop(self, key: tuple[int, str, int], connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if self._connections.get(key) is connection:
                del self._connections[key]
        connection.close()

    def close(self) -> None:
        with self._lock:
            connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            connection.close()


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

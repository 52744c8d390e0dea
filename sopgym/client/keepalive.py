"""Keep-alive HTTP/1.1 from an agent to the gateway, on the standard library's http.client.

Agents call the gateway several times per step. Through httpx a call cost ~2.2 ms on our
2-core machines against ~0.4 ms for the round trip itself (bench/bench_grpc.py); http.client
does the same exchange for ~0.2 ms of client time. Each thread keeps its own connection (the
runner's scoring threads share one client). Before a kept connection is reused it is checked
for a close (or anything else) the server sent while it sat idle, and replaced if so; a request
is never sent twice here, since one that failed after sending may have run. A connection whose
exchange failed in any way (a timeout included) is closed: its state is unknown.
"""

from __future__ import annotations

import http.client
import select
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

# What a failed exchange raises: the socket's errors (timeouts included) and http.client's.
TransportError = (OSError, http.client.HTTPException)


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


class HttpTransport:
    """Requests to one base URL (``http://`` or ``https://``, optionally with a path prefix)."""

    def __init__(self, base_url: str, timeout: float) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._connection_class = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self._host, self._port, self._timeout = parts.hostname, parts.port, timeout
        self._prefix = parts.path.rstrip("/")
        self._connections: dict[int, http.client.HTTPConnection] = {}  # by thread
        self._lock = threading.Lock()

    def request(
        self, method: str, path: str, headers: dict[str, str], json: Any = None
    ) -> Reply:
        """One exchange; raises one of :data:`TransportError` when it fails."""
        body = None if json is None else orjson.dumps(json)
        if body is not None:
            headers = {**headers, "content-type": "application/json"}
        connection = self._connections.get(threading.get_ident())
        if connection is None or _spoken_to_while_idle(connection):
            connection = self._open()
        try:
            return self._exchange(connection, method, path, body, headers)
        except BaseException:
            connection.close()  # http.client reconnects on the next request
            raise

    def _exchange(
        self,
        connection: http.client.HTTPConnection,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str],
    ) -> Reply:
        connection.request(method, self._prefix + path, body, headers)
        response = connection.getresponse()
        return Reply(response.status, response.read())

    def _open(self) -> http.client.HTTPConnection:
        """A fresh connection for this thread, replacing (and closing) its previous one."""
        connection = self._connection_class(self._host, self._port, timeout=self._timeout)
        with self._lock:
            previous = self._connections.get(threading.get_ident())
            self._connections[threading.get_ident()] = connection
        if previous is not None:
            previous.close()
        return connection

    def release(self) -> None:
        """Close this thread's connection: its next request opens a new one, which a load
        balancer that spreads connections (a Kubernetes Service) may send elsewhere."""
        with self._lock:
            connection = self._connections.pop(threading.get_ident(), None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        with self._lock:
            connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            connection.close()


def _spoken_to_while_idle(connection: http.client.HTTPConnection) -> bool:
    """Whether the server sent anything (its close, mostly) to a connection between requests:
    then it cannot carry the next one."""
    sock = connection.sock
    if sock is None:  # not connected yet, or closed: http.client opens it on the next request
        return False
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)

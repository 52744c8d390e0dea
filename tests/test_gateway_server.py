"""The gateway's own HTTP/1.1 server (gateway/server.py), over real sockets on loopback."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httptools
import pytest
import uvloop

from sopgym.asgi import Receive, Scope, Send, read_body, respond
from sopgym.gateway.server import HttpServer, ServerError

EVENTS: list[str] = []
RAN: list[str] = []  # paths the app was run for


async def echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Echoes what it was asked; a few paths misbehave on purpose."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            EVENTS.append(message["type"])
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = await read_body(receive)
    path = scope["path"]
    RAN.append(path)
    if path == "/boom":
        raise RuntimeError("a defect")
    if path == "/half-sent":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("a defect after the response started")
    if path == "/headers":
        names = [name.decode() for name, _ in scope["headers"]]
        await respond(send, 200, json.dumps(names).encode())
        return
    if path == "/huge":
        await respond(send, 200, b"x" * (8 << 20))
        return
    if path == "/silent":
        return
    if path == "/slow":
        await asyncio.sleep(0.3)
    if path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for part in (b"one,", b"two,", b"three"):
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    echoed = {
        "method": scope["method"],
        "path": path,
        "query": scope["query_string"].decode(),
        "body": body.decode(),
        "http_version": scope["http_version"],
    }
    await respond(send, 200, json.dumps(echoed).encode())


@contextmanager
def running(app: Any = echo_app, **options: Any) -> Iterator[HttpServer]:
    loop = uvloop.new_event_loop()
    server = HttpServer(app, "127.0.0.1", 0, **options)
    started = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.start())
        except BaseException as error:
            failure.append(error)
            started.set()
            return
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(10)
    if failure:
        thread.join()
        raise failure[0]
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(grace_s=2.0), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


class Responses:
    """Reads HTTP responses off a raw socket with httptools."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.parser = httptools.HttpResponseParser(self)
        self.done: list[tuple[int, dict[bytes, bytes], bytes]] = []
        self._headers: dict[bytes, bytes] = {}
        self._body: list[bytes] = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.lower()] = value

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        self.done.append((self.parser.get_status_code(), self._headers, b"".join(self._body)))
        self._headers, self._body = {}, []

    def read(self, count: int = 1) -> list[tuple[int, dict[bytes, bytes], bytes]]:
        while len(self.done) < count:
            data = self.sock.recv(65536)
            if not data:
                break
            self.parser.feed_data(data)
        taken, self.done = self.done[:count], self.done[count:]
        return taken

    def closed(self) -> bool:
        self.sock.settimeout(5)
        return self.sock.recv(1) == b""


def connect(server: HttpServer) -> tuple[socket.socket, Responses]:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    return sock, Responses(sock)


def post(path: str, body: bytes = b"{}", extra: str = "") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


def test_keep_alive_answers_with_a_length_and_keeps_the_connection() -> None:
    with running() as server:
        sock, responses = connect(server)
        for i in range(3):
            payload = f'{{"n": {i}}}'
            sock.sendall(post(f"/v1/x{i}?a=1", payload.encode()))
            [(status, headers, body)] = responses.read()
            assert status == 200 and headers[b"content-length"] == str(len(body)).encode()
            assert json.loads(body) == {"method": "POST", "path": f"/v1/x{i}", "query": "a=1",
                                        "body": payload, "http_version": "1.1"}
        sock.close()


def test_pipelined_requests_are_answered_in_order() -> None:
    with running() as server:
        sock, responses = connect(server)
        sock.sendall(post("/slow") + post("/fast") + post("/third"))
        paths = [json.loads(body)["path"] for _, _, body in responses.read(3)]
        assert paths == ["/slow", "/fast", "/third"]


def test_connection_close_and_http_1_0_end_the_connection() -> None:
    with running() as server:
        sock, responses = connect(server)
        sock.sendall(post("/a", extra="Connection: close\r\n"))
        [(status, headers, _)] = responses.read()
        assert status == 200 and headers[b"connection"] == b"close" and responses.closed()
        sock, responses = connect(server)
        sock.sendall(b"GET /old HTTP/1.0\r\n\r\n")
        [(status, _, body)] = responses.read()
        assert json.loads(body)["http_version"] == "1.0" and responses.closed()


def test_a_half_closed_connection_still_gets_its_answers() -> None:
    with running() as server:
        sock, responses = connect(server)
        sock.sendall(post("/slow") + post("/second"))
        sock.shutdown(socket.SHUT_WR)  # the client has said all it will say
        paths = [json.loads(body)["path"] for _, _, body in responses.read(2)]
        assert paths == ["/slow", "/second"] and responses.closed()


def test_a_malformed_request_is_refused_after_the_answers_before_it() -> None:
    with running() as server:
        sock, responses = connect(server)
        sock.sendall(post("/slow") + b"GARBAGE\r\n\r\n")
        (first, _, body), (second, _, error) = responses.read(2)
        assert (first, json.loads(body)["path"]) == (200, "/slow")
        assert second == 400 and json.loads(error)["error"]["code"] == "invalid_request"
        assert responses.closed()


def test_after_a_response_broken_off_no_queued_request_runs() -> None:
    RAN.clear()
    with running() as server:
        sock, responses = connect(server)
        sock.sendall(post("/half-sent") + post("/second"))
        assert responses.read() == [] and responses.closed()
    assert RAN == ["/half-sent"]


def test_trailers_of_a_chunked_body_are_not_request_headers() -> None:
    with running() as server:
        sock, responses = connect(server)
        sock.sendall(b"POST /headers HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"2\r\n{}\r\n0\r\nAuthorization: Bearer sneaked\r\n\r\n")
        [(_, _, body)] = responses.read()
        assert json.loads(body) == ["host", "transfer-encoding"]


def test_chunked_request_bodies_are_decoded() -> None:
    with running() as server:
        sock, responses = connect(server)
        sock.sendall(b"POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        [(_, _, body)] = responses.read()
        assert json.loads(body)["body"] == "hello world"


def test_expect_continue_gets_a_100_before_the_body_is_sent() -> None:
    with running() as server:
        sock, _ = connect(server)
        sock.sendall(b"POST /e HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
                     b"Expect: 100-continue\r\n\r\n")
        assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(b"{}")
        responses = Responses(sock)
        [(status, _, _)] = responses.read()
        assert status == 200


def test_a_body_request_split_across_packets_is_read_whole() -> None:
    with running() as server:
        sock, responses = connect(server)
        request = post("/split", b'{"long": "' + b"x" * 100_000 + b'"}')
        for start in range(0, len(request), 7_000):
            sock.sendall(request[start:start + 7_000])
        [(_, _, body)] = responses.read()
        assert len(json.loads(body)["body"]) == 100_012


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"NOT HTTP AT ALL\r\n\r\n", 400),
        (b"GET /ws HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
         400),
        (post("/big", b"x" * 2048), 413),
        (b"GET /h HTTP/1.1\r\n" + b"X-Filler: " + b"y" * 70_000 + b"\r\n\r\n", 431),
    ],
)
def test_bad_requests_get_a_structured_error_and_a_closed_connection(
    raw: bytes, status: int
) -> None:
    with running(max_body=1024) as server:
        sock, responses = connect(server)
        sock.sendall(raw)
        [(got, headers, body)] = responses.read()
        assert got == status and headers[b"content-type"] == b"application/json"
        assert json.loads(body)["error"]["code"] == "invalid_request"
        assert responses.closed()


def test_an_app_that_fails_or_stays_silent_gets_a_500_and_the_server_lives_on() -> None:
    with running() as server:
        for path in ("/boom", "/silent"):
            sock, responses = connect(server)
            sock.sendall(post(path))
            [(status, _, body)] = responses.read()
            assert status == 500 and json.loads(body)["error"]["code"] == "internal_error"
            assert b"Traceback" not in body and responses.closed()
        sock, responses = connect(server)
        sock.sendall(post("/after"))
        assert responses.read()[0][0] == 200


def test_streamed_responses_are_chunked() -> None:
    with running() as server:
        sock, responses = connect(server)
        sock.sendall(post("/stream"))
        [(status, headers, body)] = responses.read()
        assert status == 200 and headers[b"transfer-encoding"] == b"chunked"
        assert body == b"one,two,three"
        sock.sendall(post("/next"))  # the connection stays usable after a stream
        assert responses.read()[0][0] == 200


def test_streams_to_head_requests_and_http_1_0_clients_are_framed_for_them() -> None:
    with running() as server:
        sock, _ = connect(server)
        sock.sendall(b"HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n" + post("/next"))
        sock.settimeout(5)
        raw = b""
        while raw.count(b"HTTP/1.1") < 2 or not raw.endswith(b"}"):
            raw += sock.recv(65536)
        head, _, rest = raw.partition(b"\r\n\r\n")
        assert b"chunked" not in head and rest.startswith(b"HTTP/1.1 200 OK")  # no body bytes
        sock, _ = connect(server)
        sock.sendall(b"GET /stream HTTP/1.0\r\n\r\n")
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
        head, _, body = raw.partition(b"\r\n\r\n")
        assert b"connection: close" in head and b"chunked" not in head
        assert body == b"one,two,three"  # delimited by the close


def test_idle_connections_are_closed_after_the_keep_alive_time() -> None:
    with running(keep_alive_s=0.2) as server:
        sock, responses = connect(server)
        sock.sendall(post("/a"))
        responses.read()
        assert responses.closed()  # the sweeper runs every keep_alive_s / 2


def test_a_client_that_stops_reading_is_dropped_after_the_keep_alive_time() -> None:
    with running(keep_alive_s=0.3) as server:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", server.port))
        sock.sendall(b"GET /huge HTTP/1.1\r\nHost: t\r\n\r\n" * 3)  # more than buffers hold

        def wait_for(condition: Any) -> bool:
            deadline = time.monotonic() + 5
            while not condition() and time.monotonic() < deadline:
                time.sleep(0.02)
            return condition()

        assert wait_for(lambda: any(c.stalled for c in list(server.connections)))
        assert wait_for(lambda: not server.connections), "a stalled writer holds its connection"


def test_an_app_without_lifespan_support_still_serves() -> None:
    async def plain(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await respond(send, 200, b"{}")

    with running(plain) as server:
        sock, responses = connect(server)
        sock.sendall(post("/p"))
        assert responses.read()[0][0] == 200


def test_lifespan_runs_around_serving_and_stop_lets_requests_in_flight_finish() -> None:
    EVENTS.clear()
    with running() as server:
        assert EVENTS == ["lifespan.startup"]
        sock, responses = connect(server)
        sock.sendall(post("/slow"))
        loop = server.loop
        stopping = asyncio.run_coroutine_threadsafe(server.stop(grace_s=5.0), loop)
        [(status, _, _)] = responses.read()
        assert status == 200
        stopping.result(10)
        assert EVENTS == ["lifespan.startup", "lifespan.shutdown"]
        server.stop = _already_stopped  # type: ignore[method-assign]


async def _already_stopped(grace_s: float = 0.0) -> None:
    return None


def test_a_failed_startup_or_a_taken_port_is_a_server_error() -> None:
    async def failing(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        raise RuntimeError("grpc port taken")

    with pytest.raises(ServerError, match="grpc port taken"), running(failing):
        pass
    with running() as server, pytest.raises(ServerError, match="cannot listen"):
        taken = HttpServer(echo_app, "127.0.0.1", server.port)
        asyncio.run(taken.start())

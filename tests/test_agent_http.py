"""The agents' HTTP transport to the gateway (sopgym/core/keepalive.py), against a real server."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest

from sopgym.asgi import Receive, Scope, Send, read_body, respond
from sopgym.client import Episode, GatewayClient, GatewayError
from sopgym.core.keepalive import KERNEL_TIMEOUTS, HttpTransport, TransportError
from sopgym.orchestration.processes import free_port
from tests.test_gateway_server import running

SEEN: list[dict[str, Any]] = []


async def recording_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers every request with what it saw, and keeps a log of them."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    seen = {
        "path": scope["path"],
        "client_port": scope["client"][1],
        "headers": {k.decode(): v.decode() for k, v in scope["headers"]},
        "body": (await read_body(receive)).decode(),
    }
    SEEN.append(seen)
    if scope["path"] == "/slow":
        await asyncio.sleep(1.0)
    await respond(send, 200, orjson.dumps(seen))


def test_requests_reuse_one_connection_per_thread_and_carry_json() -> None:
    SEEN.clear()
    with running(recording_app) as server:
        transport = HttpTransport(f"http://127.0.0.1:{server.port}/prefix", timeout=5)
        first = transport.request("POST", "/v1/a", {"authorization": "Bearer t"}, {"x": 1})
        second = transport.request("GET", "/v1/b", {})
        assert first.status == 200 and first.json()["path"] == "/prefix/v1/a"
        assert first.json()["headers"]["content-type"] == "application/json"
        assert first.json()["body"] == '{"x":1}' and second.json()["body"] == ""
        assert first.json()["client_port"] == second.json()["client_port"]
        ports = []
        worker = threading.Thread(
            target=lambda: ports.append(transport.request("GET", "/t", {}).json()["client_port"])
        )
        worker.start()
        worker.join()
        assert ports and ports[0] != first.json()["client_port"]  # its own connection
        transport.close()


def test_a_connection_the_server_closed_while_idle_is_reopened_and_the_call_sent_once() -> None:
    SEEN.clear()
    with running(recording_app, keep_alive_s=0.2) as server:
        transport = HttpTransport(f"http://127.0.0.1:{server.port}", timeout=5)
        before = transport.request("POST", "/once", {}, {}).json()["client_port"]
        time.sleep(0.6)  # the server's idle sweep closes the connection
        after = transport.request("POST", "/twice", {}, {})
        assert after.status == 200 and after.json()["client_port"] != before
        assert [s["path"] for s in SEEN] == ["/once", "/twice"]
        transport.close()


def test_a_timed_out_call_costs_its_connection_not_the_calls_after_it() -> None:
    SEEN.clear()
    with running(recording_app) as server:
        transport = HttpTransport(f"http://127.0.0.1:{server.port}", timeout=0.4)
        transport.request("POST", "/first", {}, {})
        with pytest.raises(TimeoutError):
            transport.request("POST", "/slow", {}, {})
        time.sleep(0.8)  # the late answer to /slow arrives on the abandoned connection
        for n in range(3):
            reply = transport.request("POST", f"/after{n}", {}, {})
            assert reply.status == 200 and reply.json()["path"] == f"/after{n}"
        assert [s["path"] for s in SEEN] == ["/first", "/slow", "/after0", "/after1", "/after2"]
        transport.close()


@pytest.mark.skipif(not KERNEL_TIMEOUTS, reason="the kernel keeps the limits on Linux only")
def test_a_plain_connection_blocks_with_its_limit_kept_by_the_kernel() -> None:
    """One system call per send or receive (no ``poll`` before each, as a Python timeout
    makes), the same limit: the kernel's receive and send timeouts hold the transport's."""
    with running(recording_app) as server:
        transport = HttpTransport(f"http://127.0.0.1:{server.port}", timeout=0.4)
        transport.request("GET", "/first", {})
        (connection,) = transport._connections._kept.values()
        assert connection.gettimeout() is None  # blocking: no poll before each call
        for option in (socket.SO_RCVTIMEO, socket.SO_SNDTIMEO):
            raw = connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("ll"))
            assert struct.unpack("ll", raw) == (0, 400_000)
        transport.close()


def test_an_unreachable_gateway_is_a_gateway_error_after_the_retries() -> None:
    client = GatewayClient(f"http://127.0.0.1:{free_port()}", timeout=1, retries=1, backoff=0)
    with pytest.raises(GatewayError, match="unreachable"):
        client.open("t", "patient_intake")
    client.close()


def test_only_http_urls_are_accepted() -> None:
    with pytest.raises(ValueError, match="not an http"):
        HttpTransport("grpc://127.0.0.1:1", timeout=1)


@contextmanager
def scripted_server(answers: list[bytes]) -> Iterator[tuple[str, list[int]]]:
    """A server that answers the n-th request it reads (on any connection) with
    ``answers[n]`` byte for byte, and closes the connection after an answer that asks to
    close or is not framed (no length, not chunked). Yields its URL and the connections it
    accepted (one entry each)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []
    pending = list(answers)

    def serve(connection: socket.socket) -> None:
        with connection:
            data = b""
            while pending:
                while b"\r\n\r\n" not in data:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                lines = head.lower().split(b"\r\n")
                length = sum(
                    int(x.split(b":")[1]) for x in lines if x.startswith(b"content-length:")
                )
                while len(data) < length:
                    data += connection.recv(65536)
                data = data[length:]
                answer = pending.pop(0)
                connection.sendall(answer)
                framed = b"content-length" in answer.lower() or b"chunked" in answer.lower()
                if b"connection: close" in answer.lower() or not framed:
                    return

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # the listener closed
                return
            accepted.append(1)
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        listener.close()


def test_chunked_close_delimited_and_closing_answers_are_read_whole() -> None:
    answers = [
        b'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\n{"a\r\n4\r\n":1}\r\n0\r\n\r\n',
        b'HTTP/1.1 201 Created\r\ncontent-length: 7\r\nconnection: close\r\n\r\n{"b":2}',
        b'HTTP/1.0 200 OK\r\n\r\n{"c":3}',  # no length: the body ends at the close
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}",
    ]
    with scripted_server(answers) as (url, accepted):
        transport = HttpTransport(url, timeout=5)
        first = transport.request("POST", "/a", {}, {"x": 1})
        second = transport.request("GET", "/b", {})
        third = transport.request("GET", "/c", {})
        fourth = transport.request("GET", "/d", {})
        assert (first.status, first.json()) == (200, {"a": 1})
        assert (second.status, second.json()) == (201, {"b": 2})
        assert (third.status, third.json()) == (200, {"c": 3})
        assert fourth.json() == {}
        assert len(accepted) == 3  # a new connection after each answer that closed its own
        transport.close()


def test_an_answer_cut_short_is_a_transport_error_and_costs_only_its_connection() -> None:
    answers = [
        b'HTTP/1.1 200 OK\r\ncontent-length: 50\r\nconnection: close\r\n\r\n{"partial',
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}",
    ]
    with scripted_server(answers) as (url, accepted):
        transport = HttpTransport(url, timeout=5)
        with pytest.raises(TransportError):
            transport.request("POST", "/cut", {}, {})
        assert transport.request("POST", "/next", {}, {}).json() == {}
        assert len(accepted) == 2
        transport.close()


def test_a_line_break_in_the_request_head_is_refused_before_anything_is_sent() -> None:
    with scripted_server([]) as (url, accepted):
        transport = HttpTransport(url, timeout=5)
        with pytest.raises(ValueError, match="line break"):
            transport.request("GET", "/x", {"x-note": "a\r\nx-injected: 1"})
        with pytest.raises(ValueError, match="line break"):
            transport.request("GET", "/a b", {})
        assert accepted == []
        transport.close()


def test_a_tool_name_reaches_the_gateway_as_the_model_wrote_it() -> None:
    SEEN.clear()
    with running(recording_app) as server:
        client = GatewayClient(f"http://127.0.0.1:{server.port}", timeout=5)
        episode = Episode(client, {"episode_id": "e1", "token": "t", "tools": []})
        result = episode.call("look up patient ü?", {"id": 1})
        assert result.ok and SEEN[-1]["path"] == "/v1/episodes/e1/tools/look up patient ü?"
        assert SEEN[-1]["headers"]["authorization"] == "Bearer t"
        client.close()

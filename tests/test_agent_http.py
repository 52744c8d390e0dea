"""The agents' HTTP transport to the gateway (sopgym/client/keepalive.py), against a real server."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import orjson
import pytest

from sopgym.asgi import Receive, Scope, Send, read_body, respond
from sopgym.client import GatewayClient, GatewayError
from sopgym.client.keepalive import HttpTransport
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


def test_an_unreachable_gateway_is_a_gateway_error_after_the_retries() -> None:
    client = GatewayClient(f"http://127.0.0.1:{free_port()}", timeout=1, retries=1, backoff=0)
    with pytest.raises(GatewayError, match="unreachable"):
        client.open("t", "patient_intake")
    client.close()


def test_only_http_urls_are_accepted() -> None:
    with pytest.raises(ValueError, match="not an http"):
        HttpTransport("grpc://127.0.0.1:1", timeout=1)

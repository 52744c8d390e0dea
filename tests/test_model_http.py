"""The model client's keep-alive transport (sopgym/agents/model_http.py), against real loopback
servers: what it sends, how it reuses and replaces connections, and that each failure reaches
our retry classification as the httpx error the default transport would raise."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import httpx
import pytest
from langchain_core.messages import HumanMessage
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from sopgym.agents.base import AgentContext
from sopgym.agents.llm import (
    LLM,
    ModelUnreachable,
    invoke_model,
    is_refused,
    is_retryable,
    is_timeout,
)
from sopgym.agents.model_http import KeepAliveTransport, keep_alive_mounts
from sopgym.agents.models import build_chat_model, parse_model_spec
from sopgym.observability.genai import traced_http_client
from sopgym.orchestration.processes import free_port
from tests.test_agent_http import SEEN, recording_app
from tests.test_gateway_server import running


def client_for(port: int, timeout: float = 5.0) -> httpx.Client:
    mounts = keep_alive_mounts(f"http://127.0.0.1:{port}/v1")
    assert isinstance(mounts.get(f"http://127.0.0.1:{port}"), KeepAliveTransport)
    return traced_http_client(timeout, mounts)


def test_calls_reuse_one_connection_and_carry_the_trace_context() -> None:
    SEEN.clear()
    with running(recording_app) as server, client_for(server.port) as client:
        span = TracerProvider().get_tracer("test").start_span("chat")
        with span, trace.use_span(span):
            first = client.post(f"http://127.0.0.1:{server.port}/v1/a?x=1", json={"k": "ü"})
        second = client.get(f"http://127.0.0.1:{server.port}/v1/b")
        assert first.status_code == 200 and first.headers["content-type"]
        seen = first.json()
        assert seen["path"] == "/v1/a" and seen["body"] == '{"k":"ü"}'
        trace_id = format(span.get_span_context().trace_id, "032x")
        assert seen["headers"]["traceparent"].split("-")[1] == trace_id
        assert seen["headers"]["host"] == f"127.0.0.1:{server.port}"
        assert second.json()["client_port"] == seen["client_port"]  # the same connection
        assert second.json()["body"] == ""


def test_a_connection_closed_by_the_server_while_idle_is_replaced_and_the_call_sent_once() -> None:
    SEEN.clear()
    with running(recording_app, keep_alive_s=0.2) as server, client_for(server.port) as client:
        before = client.post(f"http://127.0.0.1:{server.port}/once", json={}).json()
        time.sleep(0.6)  # the server's idle sweep closes the connection
        after = client.post(f"http://127.0.0.1:{server.port}/twice", json={})
        assert after.status_code == 200 and after.json()["client_port"] != before["client_port"]
        assert [s["path"] for s in SEEN] == ["/once", "/twice"]


def test_a_timeout_is_httpxs_and_costs_only_its_own_connection() -> None:
    SEEN.clear()
    with running(recording_app) as server, client_for(server.port, timeout=0.3) as client:
        with pytest.raises(httpx.ReadTimeout) as caught:
            client.post(f"http://127.0.0.1:{server.port}/slow", json={})
        assert is_timeout(caught.value) and is_retryable(caught.value)
        time.sleep(0.9)  # the late answer to /slow arrives on the abandoned connection
        reply = client.post(f"http://127.0.0.1:{server.port}/after", json={})
        assert reply.json()["path"] == "/after"
        # a per-request timeout (the task's deadline cut) overrides the client's
        late = client.post(f"http://127.0.0.1:{server.port}/slow", json={}, timeout=2.0)
        assert late.status_code == 200


def test_a_refused_connection_is_a_connect_error_caused_by_the_refusal() -> None:
    port = free_port()  # nothing listens there
    with client_for(port) as client, pytest.raises(httpx.ConnectError) as caught:
        client.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={})
    assert is_refused(caught.value) and is_retryable(caught.value)


def read_request(connection: socket.socket) -> None:
    """One whole request off ``connection``: its head, then as many body bytes as it says.
    (A server that closes with request bytes still unread makes the kernel reset the
    connection, and the client may see the reset before the answer sent ahead of it.)"""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
         if line.lower().startswith(b"content-length:")),
        0,
    )  # fmt: skip
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            return
        body += chunk


@contextmanager
def closing_server(answers: Sequence[bytes | None]) -> Iterator[int]:
    """A raw server that, per connection, reads one request and sends the next of ``answers``
    (None: closes the connection without a word)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        for answer in answers:
            connection, _ = listener.accept()
            with connection:
                read_request(connection)
                if answer is not None:
                    connection.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        listener.close()
        thread.join(5)


def test_a_server_closing_mid_exchange_is_a_clear_retryable_error_then_a_new_connection() -> None:
    ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
    truncated = b'HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n{"partial"'
    with closing_server([None, truncated, ok]) as port, client_for(port) as client:
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        with pytest.raises(
            httpx.RemoteProtocolError, match="closed the connection without answering"
        ) as caught:
            client.post(url, json={})
        assert is_retryable(caught.value) and not is_timeout(caught.value)
        with pytest.raises(httpx.RemoteProtocolError, match="closed the connection mid-answer"):
            client.post(url, json={})
        assert client.post(url, json={}).json() == {}


def test_only_plain_http_endpoints_without_a_proxy_get_the_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert keep_alive_mounts(None) == {}
    assert keep_alive_mounts("https://api.openai.com/v1") == {}
    assert list(keep_alive_mounts("http://model:8000/v1")) == ["http://model:8000"]
    monkeypatch.setenv("http_proxy", "http://proxy:3128")
    monkeypatch.setenv("no_proxy", "localhost")
    assert keep_alive_mounts("http://model:8000/v1") == {}
    assert list(keep_alive_mounts("http://localhost:8000/v1")) == ["http://localhost:8000"]
    with pytest.raises(httpx.UnsupportedProtocol):
        KeepAliveTransport().handle_request(httpx.Request("GET", "https://example.org/"))


def test_a_silent_model_endpoint_times_out_through_the_sdk_and_is_tried_once_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The whole model-call path (LangChain, the direct send, this transport) on a server that
    takes the connection (the kernel's backlog) and never answers."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        base_url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        spec = parse_model_spec("openai:m", base_url)
        chat = build_chat_model(spec, 0.0, timeout=0.2)
        llm = LLM(spec, chat, retries=3, backoff=0.01, request_timeout=0.2)
        context = AgentContext()
        with pytest.raises(ModelUnreachable, match="TimeoutError: Request timed out") as caught:
            invoke_model(llm, [HumanMessage("hi")], context)
        assert is_timeout(caught.value) and context.usage[-1]["attempts"] == 2


def test_replies_in_chunks_or_ended_by_the_close_are_read_whole_and_garbage_is_refused() -> None:
    chunked = (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
               b"5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n")  # fmt: skip
    close_delimited = b'HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n{"b": 2}'
    answers = [chunked, close_delimited, b"NOT HTTP AT ALL\r\n\r\n"]
    with closing_server(answers) as port, client_for(port) as client:
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        assert client.post(url, json={}).json() == {"a": 1}
        assert client.post(url, json={}).json() == {"b": 2}
        with pytest.raises(httpx.RemoteProtocolError, match="malformed reply"):
            client.post(url, json={})
        with pytest.raises(httpx.LocalProtocolError, match="line break"):
            client.post(url, json={}, headers={"x-bad": "a\r\nx-smuggled: 1"})


def test_a_kept_connection_the_server_closed_as_the_request_left_is_replaced_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server closes an idle kept connection (its keep-alive timeout) just as the next
    request goes out on it, before the client could see the close: the request goes once
    more on a new connection. (Seen as a rare reset in CI; forced here by handing out the
    closed connection.)"""
    import sopgym.core.keepalive as keepalive

    kept_ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
    fresh = b'HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\n{"n": 2}'
    with closing_server([kept_ok, fresh]) as port, client_for(port) as client:
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        assert client.post(url, json={}).json() == {}
        time.sleep(0.2)  # the server has closed the first connection by now
        monkeypatch.setattr(keepalive, "_spoken_to_while_idle", lambda connection: False)
        assert client.post(url, json={}).json() == {"n": 2}

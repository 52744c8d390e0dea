"""Hostile and malformed input over real sockets: the gateway's HTTP server (gateway/server.py),
the gateway app behind it, and the tool service's fast path (services/tools/app.py).

Whatever a client sends, it gets a structured 4xx (or, for HTTP that can't be parsed, a 400
and a closed connection), never a 5xx, a traceback, a hang or a dead server: every case ends
by checking that a fresh connection is still served, and that nothing was logged as an error.
"""

from __future__ import annotations

import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn

from sopgym.core.registry import load_domain
from sopgym.gateway.app import Gateway
from sopgym.gateway.catalog import discover
from sopgym.gateway.server import MAX_HEAD, HttpServer
from sopgym.services.tools import app as tools_app
from sopgym.serving import CoalescingHttpToolsProtocol, NotifyingServer
from tests.helpers import DATA_ROOT, domain_data, task_id
from tests.test_gateway_server import RAN, Responses, connect, post, running

MAX_BODY = 1024  # the echo server's cap, small so that passing it is cheap
TIMEOUT = 3.0  # every socket read is bounded by this
Response = tuple[int, dict[bytes, bytes], bytes]


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    """One echo server (tests/test_gateway_server.py's app) that every case below attacks:
    that it keeps serving after each one is part of what is tested."""
    with running(max_body=MAX_BODY) as serving:
        yield serving


def exchange(server: HttpServer, raw: bytes, count: int = 1) -> tuple[list[Response], bool]:
    """Send ``raw`` on a fresh connection: up to ``count`` answers, and whether the server
    then closed the connection (it must, within TIMEOUT, or the read fails)."""
    sock, responses = connect(server)
    with sock:
        sock.settimeout(TIMEOUT)
        sock.sendall(raw)
        answers = responses.read(count)
        return answers, responses.closed()


def assert_serving(server: HttpServer) -> None:
    """A normal request on a fresh connection is still answered."""
    [(status, _, body)] = exchange(server, post("/alive", extra="Connection: close\r\n"))[0]
    assert (status, json.loads(body)["path"]) == (200, "/alive")


def assert_refused(answer: Response, status: int, message: str = "") -> None:
    got, headers, body = answer
    assert got == status, body
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"connection"] == b"close"
    error = json.loads(body)["error"]
    assert error["code"] == "invalid_request" and message in error["message"]
    assert b"Traceback" not in body


def assert_quiet(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    """No error or traceback was logged (the servers run in threads of this process, so their
    logs reach caplog, and anything printed, capfd)."""
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not errors, [r.getMessage() for r in errors]
    assert "Traceback" not in capfd.readouterr().err


CL = "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: "
CHUNKED = b"POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
MALFORMED = {
    # not HTTP at all
    "garbage bytes": (b"\x00\x01\x02\xff\xfegarbage\r\n\r\n", 400, "malformed"),
    "unknown method": (b"FOO / HTTP/1.1\r\nHost: t\r\n\r\n", 400, "method"),
    "lower-case method": (b"get / HTTP/1.1\r\nHost: t\r\n\r\n", 400, "method"),
    "HTTP/2 preface": (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "malformed"),
    "unknown version": (b"GET / HTTP/3.0\r\nHost: t\r\n\r\n", 400, "version"),
    "HTTP/0.9": (b"GET /\r\n\r\n", 400, "HTTP/0.9"),
    "bare LF line ends": (b"GET / HTTP/1.1\nHost: t\n\n", 400, "malformed"),
    # Content-Length and Transfer-Encoding
    "negative length": ((CL + "-1\r\n\r\n").encode(), 400, "Content-Length"),
    "non-numeric length": ((CL + "abc\r\n\r\n").encode(), 400, "Content-Length"),
    "list length": ((CL + "2, 2\r\n\r\n{}").encode(), 400, "Content-Length"),
    "overflowing length": ((CL + "9" * 30 + "\r\n\r\n").encode(), 400, "Content-Length"),
    "duplicate length": ((CL + "2\r\nContent-Length: 2\r\n\r\n{}").encode(), 400, "Duplicate"),
    "conflicting lengths": ((CL + "2\r\nContent-Length: 3\r\n\r\n{}x").encode(), 400, "Duplicate"),
    "length and chunked": (
        (CL + "2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n").encode(),
        400,
        "Transfer-Encoding",
    ),
    "unknown transfer coding": (
        b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n{}",
        400,
        "Transfer-Encoding",
    ),
    "chunked not last": (
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n{}",
        400,
        "Transfer-Encoding",
    ),
    # chunked framing
    "chunk size not hex": (CHUNKED + b"zz\r\nab\r\n0\r\n\r\n", 400, "chunk size"),
    "chunk without CRLF": (CHUNKED + b"2\r\n{}0\r\n\r\n", 400, "malformed"),
    "chunk size overflow": (CHUNKED + b"f" * 20 + b"\r\nab", 400, "overflow"),
    # request targets
    "NUL in path": (b"GET /a\x00b HTTP/1.1\r\nHost: t\r\n\r\n", 400, "url"),
    "raw non-ASCII in path": (b"GET /\xc3\xa9\xff HTTP/1.1\r\nHost: t\r\n\r\n", 400, "url"),
    "raw byte in query": (b"GET /a?q=\xff HTTP/1.1\r\nHost: t\r\n\r\n", 400, "url"),
    "space in path": (b"GET /a b HTTP/1.1\r\nHost: t\r\n\r\n", 400, "malformed"),
    "authority form without CONNECT": (b"GET evil:443 HTTP/1.1\r\n\r\n", 400, "malformed"),
    "path over the head limit": (
        b"GET /" + b"a" * (MAX_HEAD + 10) + b" HTTP/1.1\r\n\r\n",
        431,
        "request head",
    ),
    # headers
    "NUL in a header value": (b"GET / HTTP/1.1\r\nX-A: a\x00b\r\n\r\n", 400, "header"),
    "control byte in a header name": (b"GET / HTTP/1.1\r\nX\x01A: a\r\n\r\n", 400, "header"),
    "space before the colon": (b"GET / HTTP/1.1\r\nHost : t\r\n\r\n", 400, "header"),
    "header without a colon": (b"GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400, "header"),
    "obsolete line folding": (b"GET / HTTP/1.1\r\nX-A: a\r\n  b\r\n\r\n", 400, "whitespace"),
    "a flood of empty headers": (
        b"GET / HTTP/1.1\r\n" + b"a:\r\n" * (MAX_HEAD // 4 + 1) + b"\r\n",
        431,
        "request head",
    ),
    # other protocols
    "websocket upgrade": (
        b"GET /ws HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        400,
        "upgrades",
    ),
    "h2c upgrade with a body": (
        b"POST /u HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 2\r\n\r\n{}",
        400,
        "upgrades",
    ),
    "CONNECT": (b"CONNECT evil:443 HTTP/1.1\r\nHost: evil:443\r\n\r\n", 400, "upgrades"),
    # bodies over the cap: refused as soon as that is known, before the body ends
    "declared length over the cap": (
        (CL + "999999999999\r\n\r\nabc").encode(),
        413,
        f"over {MAX_BODY} bytes",
    ),
    "chunked body passing the cap": (
        CHUNKED + b"400\r\n" + b"x" * 1024 + b"\r\n1\r\nx\r\n",  # no last chunk sent
        413,
        f"over {MAX_BODY} bytes",
    ),
}


@pytest.mark.parametrize(("raw", "status", "message"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_requests_get_one_structured_refusal_and_a_closed_connection(
    server: HttpServer,
    raw: bytes,
    status: int,
    message: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    RAN.clear()
    answers, closed = exchange(server, raw, count=2)  # a second answer would be a defect
    assert len(answers) == 1 and closed
    assert_refused(answers[0], status, message)
    assert RAN == []  # the app never saw it (a CONNECT used to be answered, then refused)
    assert_serving(server)
    assert_quiet(caplog, capfd)


@pytest.mark.parametrize(
    "bad",
    [b"BAD\r\n\r\n", b"POST /2 HTTP/1.1\r\nContent-Length: x\r\n\r\n", post("/big", b"x" * 2048)],
    ids=["garbage", "bad length", "body over the cap"],
)
def test_a_bad_request_amid_pipelined_ones_is_refused_in_its_turn(
    server: HttpServer, bad: bytes
) -> None:
    RAN.clear()
    answers, closed = exchange(server, post("/1") + post("/2") + bad + post("/3"), count=4)
    assert [status for status, _, _ in answers] == [200, 200, 400 if b"big" not in bad else 413]
    assert [json.loads(body)["path"] for _, _, body in answers[:2]] == ["/1", "/2"]
    assert closed and RAN == ["/1", "/2"]  # nothing after the bad one runs
    assert_serving(server)


def test_a_long_pipeline_then_garbage_is_answered_in_full_then_refused(
    server: HttpServer,
) -> None:
    count = 100  # more than MAX_PIPELINED: reading pauses and resumes on the way
    answers, closed = exchange(
        server, b"".join(post(f"/p{i}") for i in range(count)) + b"\x00junk\r\n\r\n", count + 1
    )
    assert [json.loads(body)["path"] for _, _, body in answers[:count]] == [
        f"/p{i}" for i in range(count)
    ]
    assert_refused(answers[count], 400, "malformed")
    assert closed


def test_expect_continue_over_the_cap_gets_a_413_not_a_100(server: HttpServer) -> None:
    answers, closed = exchange(server, (CL + "5000\r\nExpect: 100-continue\r\n\r\n").encode())
    assert_refused(answers[0], 413, "request body over")
    assert closed


def test_a_413_reaches_a_client_still_uploading_without_a_reset(server: HttpServer) -> None:
    """The 413 comes at the headers; the body that follows is read and dropped, so the upload
    ends normally and the connection closes cleanly (closing with unread input would reset
    it: the client's send fails, and the answer may be lost)."""
    sock, responses = connect(server)
    with sock:
        sock.settimeout(TIMEOUT)
        sock.sendall((CL + f"{4 << 20}\r\n\r\n").encode())
        sock.sendall(b"x" * (4 << 20))  # raises if the server reset the connection
        [answer] = responses.read()
        assert_refused(answer, 413, "request body over")
        assert responses.closed()
    assert_serving(server)


@pytest.mark.parametrize(
    "head",
    [
        b"GET / HTTP/1.1\r\nX-Endless: ",  # a header value that never ends
        b"GET / HTTP/1.1\r\nX-Endless",  # a header name that never ends
        CHUNKED + b"0\r\nX-Trailer: ",  # a trailer that never ends
        CHUNKED + b"1;ext=",  # a chunk extension that never ends
    ],
    ids=["header value", "header name", "trailer", "chunk extension"],
)
def test_a_line_that_never_ends_is_refused_without_buffering_it(
    server: HttpServer, head: bytes
) -> None:
    """httptools buffers a header line until it ends, calling back only then: the server
    bounds what may arrive without progress (this used to grow without bound, stalling the
    server's loop for seconds while it copied the buffer)."""
    sock, responses = connect(server)
    with sock:
        sock.settimeout(TIMEOUT)
        sock.sendall(head)
        try:
            for _ in range(64):  # 4 MiB in all, in pieces
                sock.sendall(b"a" * 65536)
        except OSError:
            pass  # the server answered and closed before all of it was sent
        [(status, _, body)] = responses.read()
        assert status in (400, 431), body
        assert json.loads(body)["error"]["code"] == "invalid_request"
    assert_serving(server)


def test_trailer_floods_count_against_the_head_limit(server: HttpServer) -> None:
    answers, closed = exchange(
        server, CHUNKED + b"2\r\n{}\r\n0\r\n" + b"X-T: a\r\n" * (MAX_HEAD // 4) + b"\r\n"
    )
    assert_refused(answers[0], 431, "request head")
    assert closed


@pytest.mark.parametrize(
    "start",
    [b"GET / HTTP/1.1\r\nX-Slow: ", b"POST / HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"],
    ids=["head", "body"],
)
def test_a_request_trickled_a_byte_at_a_time_gets_a_408(start: bytes) -> None:
    """A client that never goes idle but never finishes its request (slowloris) is refused
    after keep_alive_s; the idle timeout alone never fired for it."""
    with running(keep_alive_s=0.3) as server:
        sock, responses = connect(server)
        with sock:
            sock.sendall(start)
            sock.settimeout(0.05)
            deadline = time.monotonic() + TIMEOUT
            reply = b""
            while not reply and time.monotonic() < deadline:
                try:
                    sock.sendall(b"a")
                    reply = sock.recv(65536)
                except TimeoutError:
                    continue
            sock.settimeout(TIMEOUT)
            responses.parser.feed_data(reply)
            [answer] = responses.read()
            assert_refused(answer, 408, "not received in time")
            assert responses.closed()


def test_an_absolute_form_target_is_routed_by_its_path(server: HttpServer) -> None:
    [(status, _, body)], _ = exchange(
        server, b"GET http://gateway:8000/v1/x?a=1 HTTP/1.1\r\nConnection: close\r\n\r\n"
    )
    assert status == 200
    assert {k: json.loads(body)[k] for k in ("path", "query")} == {"path": "/v1/x", "query": "a=1"}


def test_odd_but_valid_targets_and_headers_are_served(server: HttpServer) -> None:
    sock, responses = connect(server)
    with sock:
        sock.settimeout(TIMEOUT)
        sock.sendall(
            b"GET /a%00b/%ff/..%2f../%E2%82%AC?q=%ff HTTP/1.1\r\nX-Bytes: \xff\xfe\x80\r\n\r\n"
            b"\r\n\r\nGET /after-blank-lines HTTP/1.1\r\n\r\n"
        )
        first, second = responses.read(2)
    assert first[0] == 200
    assert json.loads(first[2])["path"] == "/a\x00b/\ufffd/../../\u20ac"  # decoded, not resolved
    assert json.loads(first[2])["query"] == "q=%ff"
    assert (second[0], json.loads(second[2])["path"]) == (200, "/after-blank-lines")


def test_http_1_0_and_1_1_requests_mixed_on_one_connection(server: HttpServer) -> None:
    answers, closed = exchange(
        server,
        b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
        + b"GET /b HTTP/1.1\r\n\r\n"
        + b"GET /c HTTP/1.0\r\n\r\n"  # no keep-alive: the last answer, then the close
        + b"GET /d HTTP/1.1\r\n\r\n",
        count=4,
    )
    assert [json.loads(body)["path"] for _, _, body in answers] == ["/a", "/b", "/c"]
    # an HTTP/1.0 client keeps the connection only when the answer says keep-alive
    assert [headers.get(b"connection") for _, headers, _ in answers] == [
        b"keep-alive",
        None,
        b"close",
    ]
    assert closed


@pytest.mark.parametrize(
    "partial",
    [
        b'POST /x HTTP/1.1\r\nContent-Length: 100\r\n\r\n{"half": ',
        CHUNKED + b"10\r\nabc",
        b"GET /x HTTP/1.1\r\nHost: t",
    ],
    ids=["mid body", "mid chunk", "mid head"],
)
@pytest.mark.parametrize("how", ["close", "reset", "half-close"])
def test_a_client_leaving_mid_request_leaves_the_server_well(
    server: HttpServer,
    partial: bytes,
    how: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    RAN.clear()
    sock, responses = connect(server)
    with sock:
        sock.settimeout(TIMEOUT)
        sock.sendall(partial)
        if how == "half-close":  # nothing can complete the request: closed, unanswered
            sock.shutdown(socket.SHUT_WR)
            assert responses.read() == [] and responses.closed()
        elif how == "reset":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    deadline = time.monotonic() + TIMEOUT
    while server.connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not server.connections and RAN == []
    assert_serving(server)
    assert_quiet(caplog, capfd)


# ---- the gateway app and the tool service's fast path, on their production servers ----


@contextmanager
def uvicorn_serving(app: Any, on_shutdown: Callable[[], None] | None = None) -> Iterator[str]:
    """``app`` under uvicorn as ``sopgym serve-tools`` runs it (sopgym/serving.py), in a thread;
    uvicorn's own logging is left unconfigured so that its errors reach caplog. Leaving the
    block shuts the server down, calling ``on_shutdown`` first, as :func:`serve` does."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app,
        loop="uvloop",
        http=CoalescingHttpToolsProtocol,
        lifespan="off",
        log_config=None,
        access_log=False,
    )
    uvicorn_server = NotifyingServer(config, on_shutdown)
    thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uvicorn_server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert uvicorn_server.started, "the tool service did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        uvicorn_server.should_exit = True
        thread.join(10)
        sock.close()


DOMAIN = "patient_intake"
TOOL = "score_lifestyle"
ARGS = {
    "patient_id": "P100000000",
    "smoking_status": "Current",
    "alcohol_consumption": "Heavy",
    "exercise_frequency": "None",
}


class Services:
    """The tool service (under uvicorn) and the gateway in front of it (on its own server)."""

    def __init__(self, tools_url: str, gateway: HttpServer) -> None:
        self.tools_port = int(tools_url.rsplit(":", 1)[1])
        self.gateway = gateway


@pytest.fixture(scope="module")
def stack() -> Iterator[Services]:
    domain_data(DOMAIN)
    with uvicorn_serving(tools_app.create_app(load_domain(DOMAIN), DATA_ROOT)) as tools_url:
        gateway = Gateway(discover({DOMAIN: tools_url}), admin_token="admin-token")
        with running(gateway) as serving:
            yield Services(tools_url, serving)


def call(port: int, raw: bytes) -> Response:
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    with sock:
        sock.sendall(raw)
        [answer] = Responses(sock).read()
    return answer


def request(method: str, path: str, body: bytes = b"", headers: str = "") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n{headers}"
        "Connection: close\r\n\r\n"
    ).encode() + body


def open_episode(stack: Services) -> tuple[str, str]:
    body = json.dumps({"task_id": task_id(DOMAIN, 0), "domain": DOMAIN}).encode()
    status, _, reply = call(stack.gateway.port, request("POST", "/v1/episodes", body))
    assert status == 201, reply
    opened = json.loads(reply)
    return opened["episode_id"], f"Authorization: Bearer {opened['token']}\r\n"


def nested(levels: int) -> list:
    """A list ``levels`` deep: ``[[[]]]`` is 3."""
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


BAD_ARGUMENTS = {
    "invalid JSON": (b"{oops", 400, "invalid_json"),
    "not UTF-8": (b'{"patient_id": "\xff\xfe"}', 400, "invalid_json"),
    "UTF-8 BOM": (b"\xef\xbb\xbf{}", 400, "invalid_json"),
    "whitespace only": (b"   ", 400, "invalid_json"),
    "two documents": (b"{} {}", 400, "invalid_json"),
    "NaN": (b'{"patient_id": NaN}', 400, "invalid_json"),
    "lone surrogate": (b'{"patient_id": "\\ud800"}', 400, "invalid_json"),
    "number past a double": (b'{"patient_id": 1' + b"0" * 400 + b"}", 400, "invalid_json"),
    "arrays 100k deep": (b"[" * 100_000 + b"]" * 100_000, 400, "invalid_json"),
    "objects 100k deep": (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, 400, "invalid_json"),
    "arrays 300 deep": (b'{"patient_id": ' + b"[" * 300 + b"]" * 300 + b"}", 400,
                        "invalid_request"),
    "65 levels": (json.dumps({**ARGS, "patient_id": nested(64)}).encode(), 400,
                  "invalid_request"),
    "64 levels (the limit)": (json.dumps({**ARGS, "patient_id": nested(63)}).encode(), 422,
                              "type_mismatch"),
    "brackets in strings only": (json.dumps({**ARGS, "patient_id": "[{" * 100}).encode(), 422,
                                 "invalid_value"),
    "a list": (b"[1, 2]", 400, "invalid_request"),
    "a string": (b'"x"', 400, "invalid_request"),
    "a number": (b"7", 400, "invalid_request"),
    "null": (b"null", 400, "invalid_request"),
    "empty object": (b"{}", 422, "missing_argument"),
    "a huge string": (
        json.dumps({**ARGS, "patient_id": "P" * 1_000_000}).encode(),
        422,
        "invalid_value",
    ),
}


@pytest.mark.parametrize(
    ("body", "status", "code"), BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys()
)
@pytest.mark.parametrize("via", ["gateway", "tool service"])
def test_bad_tool_arguments_get_a_structured_4xx(
    stack: Services,
    via: str,
    body: bytes,
    status: int,
    code: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    if via == "gateway":
        episode, auth = open_episode(stack)
        port, path = stack.gateway.port, f"/v1/episodes/{episode}/tools/{TOOL}"
    else:
        port, path, auth = stack.tools_port, f"/v1/tools/{TOOL}", ""
    got, _, reply = call(port, request("POST", path, body, auth))
    error = json.loads(reply)["error"]
    assert got == status and set(error) == {"code", "message", "field"}, reply
    assert error["code"] == code
    ok, _, result = call(port, request("POST", path, json.dumps(ARGS).encode(), auth))
    assert (ok, json.loads(result)["result"]["total_points"]) == (200, 8)
    assert_quiet(caplog, capfd)


def test_the_tool_service_caps_request_bodies(
    stack: Services, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """uvicorn buffers a body of any size; the fast path refuses one past its cap with a 413
    (it used to read it all into memory first)."""
    monkeypatch.setattr(tools_app, "MAX_API_BODY", 4096)
    body = json.dumps({**ARGS, "patient_id": "P" * 8192}).encode()
    status, _, reply = call(stack.tools_port, request("POST", f"/v1/tools/{TOOL}", body))
    assert status == 413, reply
    assert json.loads(reply)["error"] == {
        "code": "invalid_request",
        "message": "request body over 4096 bytes",
        "field": None,
    }
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_odd_gateway_paths_get_a_404_not_a_5xx(stack: Services) -> None:
    episode, auth = open_episode(stack)
    for path in (
        "/v1/episodes/%00%2F..",
        "/v1/../v1/catalog",
        f"/v1/episodes/{episode}/tools/{TOOL}%2F..%2F",
        f"/v1/episodes/{episode}/tools/",
        "/" + "a/" * 20_000,
    ):
        status, _, reply = call(stack.gateway.port, request("POST", path, b"{}", auth))
        code = json.loads(reply)["error"]["code"]
        assert status == 404 and code in {"not_found", "unknown_episode"}, (path, reply)


NESTED_300 = b"[" * 300 + b"]" * 300  # deeper than orjson writes (255)

# Bad input that once got a 500 from the gateway's core or the argument validator.
ONCE_500S = {
    "non-ASCII bearer token": (
        ("GET", "/v1/episodes/{episode}", b"", "Authorization: Bearer \xe9\r\n"),
        (403, "forbidden", None),
    ),
    "unhashable sop_variant": (
        (
            "POST",
            "/v1/episodes",
            json.dumps({"task_id": "t", "domain": DOMAIN, "sop_variant": [1]}).encode(),
            "",
        ),
        (422, "invalid_value", "sop_variant"),
    ),
    "arguments nested 300 deep": (
        ("POST", "/v1/episodes/{episode}/tools/" + TOOL, b'{"patient_id": ' + NESTED_300 + b"}",
         "{auth}"),
        (400, "invalid_request", None),
    ),
    "finish outputs nested 300 deep": (
        ("POST", "/v1/episodes/{episode}/finish", b'{"outputs": {"a": ' + NESTED_300 + b"}}",
         "{auth}"),
        (400, "invalid_request", None),
    ),
}  # fmt: skip


@pytest.mark.parametrize(("sent", "expected"), ONCE_500S.values(), ids=ONCE_500S.keys())
def test_bad_input_that_once_got_a_500_gets_a_structured_4xx(
    stack: Services,
    caplog: pytest.LogCaptureFixture,
    sent: tuple[str, str, bytes, str],
    expected: tuple[int, str, str | None],
) -> None:
    method, path, body, headers = sent
    episode, auth = open_episode(stack)
    raw = request(method, path.format(episode=episode), body, headers.format(auth=auth))
    status, _, reply = call(stack.gateway.port, raw)
    error = json.loads(reply)["error"]
    assert (status, error["code"], error["field"]) == expected, reply
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_refused_deep_call_leaves_the_record_readable(stack: Services) -> None:
    """The refused call is recorded (as text) and the record is still served: a value nested
    past what orjson writes would have made it unreadable for good."""
    episode, auth = open_episode(stack)
    nested = b'{"patient_id": ' + NESTED_300 + b"}"
    call(stack.gateway.port, request("POST", f"/v1/episodes/{episode}/tools/{TOOL}", nested, auth))
    status, _, reply = call(
        stack.gateway.port,
        request("GET", f"/v1/episodes/{episode}", headers="Authorization: Bearer admin-token\r\n"),
    )
    assert status == 200, reply
    [recorded] = json.loads(reply)["calls"]
    assert recorded["error_code"] == "invalid_request", recorded

"""Hostile and malformed input over real sockets: the scripted model server
(services/model/app.py, ``sopgym model-server``) and the OTLP/HTTP trace receiver
(observability/collector.py, ``sopgym collector``).

Whatever a client sends, it gets a structured 4xx (the model server: OpenAI's ``{"error":
{"message", "type", "param", "code"}}``; the collector: ``{"message": ...}``), never a 5xx, a
traceback, a hang or a dead server: every case ends by checking that the server still serves
a normal request and that nothing was logged as an error.
"""

from __future__ import annotations

import gzip
import os
import socket
import time
import zlib
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import httpx
import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from sopgym.core import jsontext
from sopgym.core.answers import REACT_MARKER
from sopgym.observability import collector as collector_module
from sopgym.observability import otlp
from sopgym.observability.asgi import traced
from sopgym.observability.collector import Collector
from sopgym.services.model import app as model_app
from sopgym.services.model import conversation
from sopgym.services.model.app import create_app
from sopgym.services.model.engine import BadRequest, ScriptedModel
from sopgym.types import JSON
from tests.helpers import DATA_ROOT, domain_data
from tests.test_gateway_server_hostile import assert_quiet, uvicorn_serving
from tests.test_import_scripted import _opening as imported_opening
from tests.test_import_scripted import model  # noqa: F401 - the fixture, used by name below
from tests.test_model_server import DOMAIN, _call_of, _message, _opening, _result, _tools

TIMEOUT = 5.0  # every request and socket read is bounded by this
Opening = tuple[list[JSON], list[JSON]]


@cache
def client() -> httpx.Client:
    """One client for every request, keeping no connection alive: each request has a fresh
    one (a refused request must not spoil the next), without building a client each time."""
    return httpx.Client(timeout=TIMEOUT, limits=httpx.Limits(max_keepalive_connections=0))


@pytest.fixture(scope="module", autouse=True)
def _close_client() -> Iterator[None]:
    yield
    client().close()
    client.cache_clear()


def request(url: str, method: str, path: str, body: Any = b"", **headers: str) -> httpx.Response:
    return client().request(method, url + path, content=body, headers=headers)


def raw_exchange(url: str, raw: bytes) -> bytes:
    """Send ``raw`` on a fresh socket; what comes back before the server closes (or TIMEOUT)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(raw)
        return sock.recv(65536)


def leave_mid_body(url: str, path: str, head: str, part: bytes, length: int) -> None:
    """Start a request announcing ``length`` body bytes, send ``part`` of them, and leave."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: t\r\n{head}".encode())
        sock.sendall(f"Content-Length: {length}\r\n\r\n".encode() + part)
        time.sleep(0.1)  # the server has started reading the body
    time.sleep(0.2)  # and has seen the disconnect


WEBSOCKET = (
    "GET {path} HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


# ---- the scripted model server ----
@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    """The model server as ``sopgym model-server`` builds it, under uvicorn in a thread."""
    with uvicorn_serving(traced(create_app([DOMAIN], DATA_ROOT), "sopgym.model")) as url:
        yield url


@pytest.fixture(scope="module")
def opening() -> Opening:
    """The opening messages of the first task's episode, and the domain's tool specs."""
    data = domain_data(DOMAIN)
    return _opening(data, data.tasks[0]), _tools(data)


def gold_calls() -> list[Any]:
    data = domain_data(DOMAIN)
    return data.gold[data.tasks[0].id].calls


def chat(url: str, body: JSON | bytes, **headers: str) -> httpx.Response:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    return request(url, "POST", "/v1/chat/completions", raw, **headers)


def assert_openai_error(response: httpx.Response, status: int, fragment: str, param: Any) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert "Traceback" not in response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and fragment in error["message"], error
    assert error["param"] == param, error


def assert_model_serves(url: str, opening: Opening) -> None:
    """A normal request is still answered, with the SOP's first step."""
    messages, tools = opening
    reply = chat(url, {"model": "scripted", "messages": messages, "tools": tools})
    assert reply.status_code == 200, reply.text
    assert _call_of(_message(reply.json())) == gold_calls()[0]


def _assistant(calls: Any) -> JSON:
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _fn_call(function: Any, call_id: Any = "c1") -> JSON:
    return {"id": call_id, "type": "function", "function": function}


def _deep(levels: int, leaf: str = "1") -> str:
    return '{"a":' * levels + leaf + "}" * levels


Make = Callable[[list[JSON], list[JSON]], JSON | bytes]


def raw(data: bytes) -> Make:
    return lambda m, t: data


def body(**fields: Any) -> Make:
    """The opening messages and the tools, with ``fields`` set (``None``: left out)."""
    return lambda m, t: {
        k: v for k, v in {"messages": m, "tools": t, **fields}.items() if v is not None
    }


def after(*messages: Any) -> Make:
    """The opening messages, then ``messages``."""
    return lambda m, t: {"messages": [*m, *messages], "tools": t}


def alone(*messages: Any) -> Make:
    return lambda m, t: {"messages": list(messages)}


def tool(**function: Any) -> Make:
    return body(tools=[{"type": "function", "function": function}])


def tool_call(function: Any, call_id: Any = "c1") -> Make:
    return after(_assistant([_fn_call(function, call_id)]))


def case(name: str, make: Make, fragment: str, param: str | None = "messages") -> Any:
    return pytest.param(make, fragment, param, id=name)


USER = {"role": "user", "content": "x"}
MCT = "max_completion_tokens"
# a malformed request, a fragment of the error message, and the param the error names
MALFORMED_CHAT = [
    # the body itself
    case("invalid JSON", raw(b'{"messages": ['), "not valid JSON", None),
    case("empty body", raw(b""), "not valid JSON", None),
    case("a JSON array", raw(b"[1, 2]"), "must be a JSON object", None),
    case("JSON null", raw(b"null"), "must be a JSON object", None),
    case("not UTF-8", raw(b'{"messages": [{"content": "\xff"}]}'), "not valid JSON", None),
    case(
        "a lone surrogate", raw(b'{"messages": [{"content": "\\ud800"}]}'), "not valid JSON", None
    ),
    case("NaN", raw(b'{"messages": [], "temperature": NaN}'), "not valid JSON", None),
    case("nested 2000 deep", raw(b'{"x": ' + b"[" * 2000 + b"]" * 2000 + b"}"), "JSON", None),
    # messages
    case("no messages", body(messages=None), "messages must be a non-empty array"),
    case("messages empty", body(messages=[]), "non-empty array"),
    case("messages a string", body(messages="hi"), "non-empty array"),
    case("a message a number", after(1), "messages[2] must be an object"),
    case("a message null", alone(None), "messages[0] must be an object"),
    case("a message a string", alone("hi"), "messages[0] must be an object"),
    case("no role", alone({"content": "x"}), "messages[0].role must be one of"),
    case("role a number", alone({"role": 5}), ".role must be one of"),
    case("role a list", alone({"role": ["user"]}), ".role must be one of"),
    case("unknown role", alone({"role": "wizard", "content": "x"}), ".role must be one of"),
    case("content a number", alone({"role": "user", "content": 7}), ".content must be a string"),
    case("content an object", alone({"role": "user", "content": {}}), "an array of content parts"),
    case("a content part null", alone({"role": "user", "content": [None]}), ".content must be"),
    case("a part's text a number", alone({"role": "user", "content": [{"text": 5}]}), ".content"),
    case("a deep list as content", alone({"role": "user", "content": [[[[]]]]}), ".content"),
    # tool calls and results
    case("tool_calls a string", after(_assistant("x")), "messages[2].tool_calls must be an array"),
    case("tool_calls an object", after(_assistant({"id": "c1"})), "tool_calls must be an array"),
    case("a tool call a string", after(_assistant(["x"])), "tool_calls[0] must be an object"),
    case("function a string", tool_call("f"), "a function object with a string name"),
    case("function name a number", tool_call({"name": 5}), "with a string name"),
    case("function name a list", tool_call({"name": ["f"]}), "with a string name"),
    case("tool call id a list", tool_call({"name": "f"}, ["c1"]), "with a string id"),
    case("tool call id an object", tool_call({"name": "f"}, {}), "with a string id"),
    case("tool_call_id a list", after({"role": "tool", "tool_call_id": ["c1"]}), "tool_call_id"),
    case("tool_call_id an object", after({"role": "tool", "tool_call_id": {}}), "must be a string"),
    # tools
    case("tools a string", body(tools="all"), "tools must be an array", "tools"),
    case("tools an object", body(tools={"a": 1}), "tools must be an array", "tools"),
    case("tools a number", body(tools=5), "tools must be an array", "tools"),
    case("a tool a string", body(tools=["f"]), "tools[0] must be a function spec", "tools"),
    case("a tool a number", body(tools=[1]), "tools[0] must be a function spec", "tools"),
    case("a tool without a name", tool(), "a function spec with a name", "tools"),
    case("a tool's function a string", body(tools=[{"function": "f"}]), "with a name", "tools"),
    case("a tool's name a list", tool(name=["f"]), "with a name", "tools"),
    case("a tool's name empty", body(tools=[{"name": ""}]), "with a name", "tools"),
    case("parameters a string", tool(name="f", parameters="s"), "parameters must be", "tools"),
    case(
        "properties a list", tool(name="f", parameters={"properties": [1]}), "JSON Schema", "tools"
    ),
    case("required a number", tool(name="f", parameters={"required": 5}), "JSON Schema", "tools"),
    case("required null", tool(name="f", parameters={"required": None}), "JSON Schema", "tools"),
    case("required of numbers", tool(name="f", parameters={"required": [1]}), "required", "tools"),
    # the other parameters
    case("model a number", body(model=5), "model must be a string", "model"),
    case("model a list", body(model=["scripted"]), "model must be a string", "model"),
    case("unknown profile", body(model="scripted:loud"), "unknown profile 'loud'", "model"),
    case("bad profile seed", body(model="scripted:seed=x"), "seed must be an integer", "model"),
    case("stream", body(stream=True), "streaming is not supported", "stream"),
    case("stream a string", body(stream="yes"), "streaming is not supported", "stream"),
    case("n 2", body(n=2), "exactly one choice", "n"),
    case("n a string", body(n="1"), "exactly one choice", "n"),
    case("n true", body(n=True), "exactly one choice", "n"),
    case("temperature a string", body(temperature="hot"), "from 0 to 2", "temperature"),
    case("temperature 1e308", body(temperature=1e308), "from 0 to 2", "temperature"),
    case("temperature negative", body(temperature=-0.5), "from 0 to 2", "temperature"),
    case("top_p 2", body(top_p=2), "top_p must be a number from 0 to 1", "top_p"),
    case("max_tokens 0", body(max_tokens=0), "must be a positive integer", "max_tokens"),
    case("max_tokens negative", body(max_tokens=-5), "positive integer", "max_tokens"),
    case("max_tokens a string", body(max_tokens="many"), "positive integer", "max_tokens"),
    case("max_tokens a fraction", body(max_tokens=1.5), "positive integer", "max_tokens"),
    case("max_completion_tokens true", body(max_completion_tokens=True), "positive", MCT),
    case("stop a number", body(stop=5), "stop must be a string or an array of strings", "stop"),
    case("stop of numbers", body(stop=[5, None]), "an array of strings", "stop"),
    case("stop of numbers, no case", body(messages=[USER], stop=[5]), "stop must be", "stop"),
]


@pytest.mark.parametrize(("make", "fragment", "param"), MALFORMED_CHAT)
def test_malformed_chat_requests_get_an_openai_400(
    model_url: str,
    opening: Opening,
    make: Make,
    fragment: str,
    param: str | None,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    response = chat(model_url, make(*opening), **{"content-type": "application/json"})
    assert_openai_error(response, 400, fragment, param)
    assert_model_serves(model_url, opening)
    assert_quiet(caplog, capfd)


def test_odd_but_readable_requests_are_answered_by_the_script(
    model_url: str,
    opening: Opening,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    messages, tools = opening
    first, second = gold_calls()[:2]

    def next_call(body: JSON) -> Any:
        response = chat(model_url, body)
        assert response.status_code == 200, response.text
        return _call_of(_message(response.json()))

    # the case in content parts; null and in-range settings (no model named: the default)
    parts = [{"type": "text", "text": messages[1]["content"]}, {"type": "image_url"}]
    as_parts = [messages[0], {"role": "user", "content": parts}]
    assert next_call({"messages": as_parts, "tools": tools}) == first
    settings = {"n": None, "temperature": 2, "top_p": 0, "max_tokens": 2**62, "stop": None}
    named = {"model": "scripted", "messages": messages, "tools": tools, **settings}
    assert next_call(named) == first
    arguments = orjson.dumps(first.arguments).decode()
    data = domain_data(DOMAIN)  # the tool's real answer: the model reads it
    done = orjson.dumps(_result(data, data.tasks[0], first)).decode()
    # a call without an id pairs with a result without one; a result for an id never made is
    # not a result of anything
    no_ids = [
        *messages,
        _assistant(
            [{"type": "function", "function": {"name": first.name, "arguments": arguments}}]
        ),
        {"role": "tool", "content": done},
    ]
    assert next_call({"messages": no_ids, "tools": tools}) == second
    stray = [*messages, {"role": "tool", "tool_call_id": "never-made", "content": done}]
    assert next_call({"messages": stray, "tools": tools}) == first
    # arguments that are not JSON text, or nested past what orjson writes back (254 levels),
    # match no SOP step: the step is still due
    for raw in ("{", _deep(300)):
        call = {"name": first.name, "arguments": raw}
        unreadable = [
            *messages,
            _assistant([_fn_call(call)]),
            {"role": "tool", "tool_call_id": "c1", "content": done},
        ]
        assert next_call({"messages": unreadable, "tools": tools}) == first
    # an object nested 300 deep next to the case is no case, and does not hide it
    deep_user = {"role": "user", "content": _deep(300) + "\n" + messages[1]["content"]}
    assert next_call({"messages": [messages[0], deep_user], "tools": tools}) == first
    assert_quiet(caplog, capfd)


def test_a_conversation_of_no_known_case_gets_a_plain_answer_saying_so(
    model_url: str, opening: Opening
) -> None:
    _, tools = opening
    for user in ('{"patient_id": "nobody"}', "hello", "<plan>", _deep(300)):
        response = chat(
            model_url, {"messages": [{"role": "user", "content": user}], "tools": tools}
        )
        assert response.status_code == 200, response.text
        message = _message(response.json())
        assert "tool_calls" not in message and "cannot find a case" in message["content"]


def test_unknown_paths_and_methods_get_the_openai_error_shape(model_url: str) -> None:
    for method, path, status in (
        ("GET", "/v1/nope", 404),
        ("GET", "/v1/chat/completions", 405),
        ("PUT", "/v1/chat/completions", 405),
        ("POST", "/v1/models", 405),
    ):
        response = request(model_url, method, path)
        assert_openai_error(response, status, "", None)


def test_a_body_over_the_cap_gets_a_413(
    model_url: str,
    opening: Opening,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(model_app, "MAX_BODY", 1024)
    body = orjson.dumps({"messages": [{"role": "user", "content": "x" * 2048}]})
    assert_openai_error(chat(model_url, body), 413, "over 1024 bytes", None)
    chunked = iter([body[:1000], body[1000:]])  # no length declared: counted as it comes
    response = request(model_url, "POST", "/v1/chat/completions", chunked)
    assert_openai_error(response, 413, "over 1024 bytes", None)
    monkeypatch.undo()
    assert_model_serves(model_url, opening)
    assert_quiet(caplog, capfd)


def test_a_client_leaving_mid_body_leaves_no_traceback(
    model_url: str,
    opening: Opening,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    head = "Content-Type: application/json\r\n"
    leave_mid_body(model_url, "/v1/chat/completions", head, b'{"messages": [', 1000)
    assert_model_serves(model_url, opening)
    assert_quiet(caplog, capfd)


def test_lenient_json_reading_is_bounded_per_request(
    model_url: str,
    opening: Opening,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Reading Python-style literals (ast.literal_eval) costs seconds and hundreds of MB per
    MB, so texts in a request are read leniently only within a per-request budget."""
    read: list[int] = []
    loads_loose = jsontext.loads_loose

    def counted(text: str) -> Any:
        read.append(len(text))
        return loads_loose(text)

    monkeypatch.setattr(jsontext, "loads_loose", counted)
    monkeypatch.setattr(conversation, "loads_loose", counted)
    messages, tools = opening
    first = gold_calls()[0]
    literal = "{'rows': [" + "1, " * 130_000 + "]}"  # ~390 KB, over the budget
    assert len(literal) > conversation.LENIENT_CHARS
    call = _fn_call({"name": first.name, "arguments": orjson.dumps(first.arguments).decode()})
    native = [
        *messages,
        _assistant([call]),
        {"role": "tool", "tool_call_id": "c1", "content": literal},
    ]
    react = [
        {"role": "system", "content": f"ReAct. {REACT_MARKER} ..."},
        messages[1],
        {"role": "assistant", "content": f"Action: {first.name}\n{REACT_MARKER} {literal}"},
        {"role": "user", "content": f"Observation: {literal}"},
    ]
    no_case = [{"role": "user", "content": "{a}" * 200_000}, {"role": "user", "content": literal}]
    started = time.monotonic()
    for body in ({"messages": native, "tools": tools}, {"messages": react}, {"messages": no_case}):
        response = chat(model_url, body)
        assert response.status_code == 200, response.text
    elapsed = time.monotonic() - started
    assert max(read) <= conversation.LENIENT_CHARS
    assert sum(read) <= 3 * 3 * conversation.LENIENT_CHARS  # three requests, a few reads each
    assert elapsed < 3.0, elapsed
    assert_quiet(caplog, capfd)


def test_tool_results_nested_too_deep_to_write_back_are_a_400_not_a_500(
    model: ScriptedModel,  # noqa: F811 - the imported fixture
) -> None:
    """The generic policy (imported benchmarks) answers with values from tool results; one
    orjson cannot write (over 254 levels) is the client's 400."""
    messages, tools = imported_opening(model, "sopbench/clean", False)
    reply = model.respond({"messages": messages, "tools": tools})["choices"][0]["message"]
    (call,) = reply["tool_calls"]
    result = f'{{"days since purchase": {_deep(300)}}}'
    messages += [reply, {"role": "tool", "tool_call_id": call["id"], "content": result}]
    with pytest.raises(BadRequest, match="cannot be written back"):
        model.respond({"messages": messages, "tools": tools})


# ---- the OTLP/HTTP trace receiver ----
PROTOBUF = {"content-type": "application/x-protobuf"}
JSON_TYPE = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Collector, str]]:
    app = Collector(tmp_path_factory.mktemp("otlp"))
    with uvicorn_serving(app) as url:
        yield app, url
    os.close(app._fd)  # uvicorn_serving runs no lifespan, whose shutdown closes it


def export(name: str = "s", **span: Any) -> ExportTraceServiceRequest:
    """An export request of one span (valid ids unless ``span`` says otherwise)."""
    request = ExportTraceServiceRequest()
    scope_spans = request.resource_spans.add().scope_spans.add()
    scope_spans.scope.name = "sopgym.test"
    fields = {"trace_id": b"\x01" * 16, "span_id": b"\x02" * 8, "start_time_unix_nano": 1}
    scope_spans.spans.add(name=name, **{**fields, "end_time_unix_nano": 2, **span})
    return request


def post_traces(url: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return request(url, "POST", "/v1/traces", body, **headers)


def stored(app: Collector) -> bytes:
    return app.path.read_bytes()


def assert_collector_refused(response: httpx.Response, status: int, fragment: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert "Traceback" not in response.text
    assert fragment in response.json()["message"], response.text


def assert_collector_serves(app: Collector, url: str) -> None:
    """A normal export is still stored, and the store still reads back whole."""
    before = otlp.read_batch(stored(app)).total
    response = post_traces(url, export("alive").SerializeToString(), PROTOBUF)
    assert response.status_code == 200, response.text
    assert otlp.read_batch(stored(app)).total == before + 1


def _json_spans(spans: str) -> bytes:
    return b'{"resourceSpans": [{"scopeSpans": [{"spans": ' + spans.encode() + b"}]}]}"


def _nested_value(levels: int) -> bytes:
    value = '{"arrayValue": {"values": [' * levels + '{"stringValue": "x"}' + "]}}" * levels
    return _json_spans('[{"name": "d", "attributes": [{"key": "k", "value": ' + value + "}]}]")


LINK = '[{"name": "l", "links": [{"traceId": "' + "01" * 16 + '", "spanId": "%s"}]}]'


def _deep_protobuf(levels: int) -> bytes:
    request = export("deep")
    attribute = request.resource_spans[0].scope_spans[0].spans[0].attributes.add(key="k")
    value = attribute.value
    for _ in range(levels):
        value = value.array_value.values.add()
    value.string_value = "x"
    return request.SerializeToString()


VALID = export().SerializeToString()
GZIPPED = {**PROTOBUF, "content-encoding": "gzip"}
DEFLATED = {**PROTOBUF, "content-encoding": "deflate"}


def bad(name: str, body: bytes, headers: dict[str, str], status: int, fragment: str) -> Any:
    return pytest.param(body, headers, status, fragment, id=name)


def spans_json(name: str, spans: str, fragment: str = "invalid OTLP JSON") -> Any:
    return bad(name, _json_spans(spans), JSON_TYPE, 400, fragment)


def as_json(name: str, document: bytes, fragment: str = "invalid OTLP JSON") -> Any:
    return bad(name, document, JSON_TYPE, 400, fragment)


def as_protobuf(name: str, document: bytes, fragment: str) -> Any:
    return bad(name, document, PROTOBUF, 400, fragment)


NOT_PROTOBUF = "invalid ExportTraceServiceRequest"
# a malformed export: body, headers, the status and a fragment of the error message
MALFORMED_EXPORTS = [
    bad("text/plain", VALID, {"content-type": "text/plain"}, 415, "unsupported content-type"),
    as_protobuf("garbage protobuf", b"\x00garbage\xff\xff", NOT_PROTOBUF),
    as_protobuf("truncated protobuf", VALID[:-5], NOT_PROTOBUF),
    as_protobuf("protobuf nested 150 deep", _deep_protobuf(150), NOT_PROTOBUF),
    as_json("invalid JSON", b"{"),
    as_json("JSON an array", b"[1]", "expected an object, got list"),
    as_json("JSON null", b"null", "expected an object"),
    as_json("JSON a string", b'"x"', "expected an object"),
    as_json("JSON not UTF-8", _json_spans('[{"name": "?"}]').replace(b"?", b"\xff")),
    as_json("resourceSpans a string", b'{"resourceSpans": "x"}'),
    as_json("resourceSpans of strings", b'{"resourceSpans": ["x"]}'),
    as_json("scopeSpans a number", b'{"resourceSpans": [{"scopeSpans": 5}]}'),
    as_json("JSON nested 2000 deep", b'{"x":' + b"[" * 2000 + b"]" * 2000 + b"}"),
    as_json("a value nested 300 deep", _nested_value(300)),
    spans_json("spans a string", '"x"'),
    spans_json("spans of numbers", "[1]"),
    spans_json("traceId a number", '[{"traceId": 5}]'),
    spans_json("traceId not hex", '[{"traceId": "zz"}]'),
    spans_json("links a string", '[{"links": "x"}]'),
    spans_json("links of numbers", '[{"links": [3]}]'),
    spans_json("an unknown field", '[{"bogus": 1}]'),
    spans_json("a time past 64 bits", '[{"startTimeUnixNano": "99999999999999999999999"}]'),
    # ids the trace store's reader cannot read back
    spans_json("a 1-byte trace id", '[{"traceId": "01", "name": "s"}]', "span 's': trace_id is 1"),
    spans_json("a 9-byte link span id", LINK % ("01" * 9), "a link's span_id is 9 bytes, not 8"),
    as_protobuf("a 3-byte span id", export(span_id=b"abc").SerializeToString(), "span_id is 3"),
    as_protobuf("a 4-byte parent", export(parent_span_id=b"abcd").SerializeToString(), "4 bytes"),
    as_protobuf("an 8-byte trace id", export(trace_id=b"\x01" * 8).SerializeToString(), "8 bytes"),
    # encodings
    bad("gzip not gzip", b"notgzip", GZIPPED, 400, "cannot decompress body"),
    bad("gzip truncated", gzip.compress(VALID)[:-8], GZIPPED, 400, "data is truncated"),
    bad("gzip cut in half", gzip.compress(VALID)[:20], GZIPPED, 400, "truncated"),
    bad("gzip then garbage", gzip.compress(VALID) + b"xx", GZIPPED, 400, "cannot decompress"),
    bad("gzip empty", b"", GZIPPED, 400, "truncated"),
    bad("deflate not zlib", b"notzlib", DEFLATED, 400, "cannot decompress body"),
    bad("deflate truncated", zlib.compress(VALID)[:-3], DEFLATED, 400, "truncated"),
    bad("brotli", VALID, {**PROTOBUF, "content-encoding": "br"}, 415, "content-encoding br"),
]


@pytest.mark.parametrize(("body", "headers", "status", "fragment"), MALFORMED_EXPORTS)
def test_malformed_exports_get_a_structured_4xx_and_store_nothing(
    collector: tuple[Collector, str],
    body: bytes,
    headers: dict[str, str],
    status: int,
    fragment: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    app, url = collector
    before = stored(app)
    assert_collector_refused(post_traces(url, body, headers), status, fragment)
    assert stored(app) == before
    assert_collector_serves(app, url)
    assert_quiet(caplog, capfd)


def test_odd_but_valid_exports_are_stored_and_read_back(
    collector: tuple[Collector, str],
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    app, url = collector
    before = otlp.read_batch(stored(app)).total
    empty_resource = ExportTraceServiceRequest()
    empty_resource.resource_spans.add()
    no_ids = export("no ids", trace_id=b"", span_id=b"")
    big = export("big")
    big.resource_spans[0].scope_spans[0].spans[0].attributes.add(key="k").value.string_value = (
        "v" * 1_000_000
    )
    half = len(VALID) // 2
    nan = '{"key": "n", "value": {"doubleValue": "NaN"}}'
    odd_kind_nan_value = '[{"name": "k", "kind": 7, "attributes": [' + nan + "]}]"
    cases = [  # (body, headers, spans it holds)
        (b"", PROTOBUF, 0),
        (empty_resource.SerializeToString(), PROTOBUF, 0),
        (VALID, {}, 1),  # no content-type: protobuf
        (VALID, {"content-type": "Application/X-Protobuf; charset=binary"}, 1),
        (gzip.compress(VALID), {**PROTOBUF, "content-encoding": "GZIP"}, 1),
        (gzip.compress(VALID[:half]) + gzip.compress(VALID[half:]), GZIPPED, 1),  # two members
        (no_ids.SerializeToString(), PROTOBUF, 1),
        (big.SerializeToString(), PROTOBUF, 1),
        (
            orjson.dumps(otlp.request_to_json(export("json"))),
            {"content-type": "APPLICATION/JSON"},
            1,
        ),
        (_json_spans(odd_kind_nan_value), JSON_TYPE, 1),
    ]
    for body, headers, _ in cases:
        response = post_traces(url, body, headers)
        assert response.status_code == 200, (headers, response.text)
    batch = otlp.read_batch(stored(app))
    assert batch.total == before + sum(count for *_, count in cases)
    assert any(len(s.attributes.get("k", "")) == 1_000_000 for s in batch.spans)
    assert_collector_serves(app, url)
    assert_quiet(caplog, capfd)


def test_bodies_over_the_cap_before_or_after_decompression_get_a_413(
    collector: tuple[Collector, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    app, url = collector
    monkeypatch.setattr(collector_module, "MAX_BODY", 64 * 1024)
    before = stored(app)
    over = post_traces(url, b"\x00" * (64 * 1024 + 1), PROTOBUF)
    assert_collector_refused(over, 413, "over 65536 bytes")
    bomb = gzip.compress(b"\x00" * (1024 * 1024))  # ~1 KB that inflates to 1 MiB
    assert len(bomb) < 64 * 1024
    assert_collector_refused(post_traces(url, bomb, GZIPPED), 413, "decompresses to over 65536")
    deflated = zlib.compress(b"\x00" * (1024 * 1024))
    headers = {**PROTOBUF, "content-encoding": "deflate"}
    assert_collector_refused(post_traces(url, deflated, headers), 413, "decompresses")
    assert stored(app) == before
    monkeypatch.undo()
    assert_collector_serves(app, url)
    assert_quiet(caplog, capfd)


def test_an_export_broken_off_mid_body_is_not_stored(
    collector: tuple[Collector, str],
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The first of two ResourceSpans is a valid request on its own: storing that prefix
    stored spans the exporter, which saw no 200, sends again."""
    app, url = collector
    whole = export("one")
    whole.resource_spans.add().CopyFrom(export("two").resource_spans[0])
    first = ExportTraceServiceRequest()
    first.resource_spans.add().CopyFrom(whole.resource_spans[0])
    prefix, body = first.SerializeToString(), whole.SerializeToString()
    assert body.startswith(prefix)
    before = stored(app)
    leave_mid_body(url, "/v1/traces", "Content-Type: application/x-protobuf\r\n", prefix, len(body))
    assert stored(app) == before
    assert_collector_serves(app, url)
    assert_quiet(caplog, capfd)


def test_other_methods_paths_and_a_websocket_upgrade_are_refused(
    collector: tuple[Collector, str],
    model_url: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    app, url = collector
    assert_collector_refused(request(url, "GET", "/v1/traces"), 405, "use POST")
    assert_collector_refused(request(url, "POST", "/v1/logs"), 404, "no route /v1/logs")
    for server in (url, model_url):
        answer = raw_exchange(server, WEBSOCKET.format(path="/v1/traces").encode())
        assert answer.startswith(b"HTTP/1.1 403 "), answer
    assert_collector_serves(app, url)
    assert_quiet(caplog, capfd)

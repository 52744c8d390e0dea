"""The OpenAI-compatible model client: LangChain's request goes out untransformed, yet exactly
as the SDK would send it, and replies and refusals come back as LangChain and our retries
expect them. The server here is a real loopback HTTP server scripted per test."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain_core.caches import InMemoryCache
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.globals import set_llm_cache
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_openai import ChatOpenAI
from openai import RateLimitError
from openai._utils._transform import maybe_transform
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from sopgym.agents import chat_completions as chat_completions_module
from sopgym.agents.base import AgentContext
from sopgym.agents.chat_completions import ChatCompletionsModel
from sopgym.agents.llm import (
    LLM,
    REFUSED_RETRIES,
    ModelCallError,
    ModelUnreachable,
    generate,
    invoke_model,
)
from sopgym.agents.models import (
    AnswerHeaders,
    PlainChatCompletions,
    build_chat_model,
    parse_model_spec,
)

TOOLS = [
    {
        "name": "validate_insurance",
        "description": "Check a patient's insurance.",
        "input_schema": {
            "type": "object",
            "properties": {
                "insurance_id": {"type": "string", "description": "The card's id."},
                "tier": {"type": "integer", "enum": [1, 2, 3]},
                "flags": {"type": "array", "items": {"type": "boolean"}},
            },
            "required": ["insurance_id"],
            "additionalProperties": False,
        },
    }
]
MESSAGES = [
    SystemMessage("Follow the SOP."),
    HumanMessage("Register patient P-1."),
    AIMessage(
        "",
        tool_calls=[{"id": "c1", "name": "validate_insurance", "args": {"insurance_id": "I-9"}}],
    ),
    ToolMessage('{"valid": true, "note": "ünïcode ✓"}', tool_call_id="c1"),
]
REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "validate_insurance", "arguments": '{"tier": 2}'},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 40, "completion_tokens": 7, "total_tokens": 47},
}


def openai_tools() -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t["description"],
                "parameters": t["input_schema"],
            },
        }
        for t in TOOLS
    ]


class ScriptedEndpoint:
    """Answers POST /v1/chat/completions with the next (status, body) of ``replies`` and keeps
    what it received."""

    def __init__(self, replies: list[tuple[int, Any]]) -> None:
        self.replies = list(replies)
        self.received: list[tuple[str, dict[str, str], Any]] = []  # path, headers, JSON body
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                endpoint.received.append((self.path, headers, json.loads(body)))
                status, reply = endpoint.replies.pop(0)
                data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def endpoint(request: pytest.FixtureRequest) -> Iterator[ScriptedEndpoint]:
    scripted = ScriptedEndpoint(request.param)
    thread = threading.Thread(target=scripted.server.serve_forever, daemon=True)
    thread.start()
    yield scripted
    scripted.server.shutdown()
    scripted.server.server_close()


def llm_for(endpoint: ScriptedEndpoint, monkeypatch: pytest.MonkeyPatch) -> LLM:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    spec = parse_model_spec("openai:some-model", endpoint.base_url)
    return LLM(spec, build_chat_model(spec, 0.0, timeout=10.0), retries=2, backoff=0.01)


def test_the_sdk_transform_leaves_langchains_request_unchanged() -> None:
    """What makes skipping the SDK's transform safe: on the requests our agents build (tool
    schemas, tool calls and results, stop words, non-ASCII text) it is the identity."""
    chat = build_chat_model(parse_model_spec("scripted", "http://127.0.0.1:9/v1"))
    assert isinstance(chat.client, PlainChatCompletions)
    bound = chat.bind_tools(openai_tools())
    payload = chat._get_request_payload(MESSAGES, stop=["Observation:"], **bound.kwargs)
    assert payload["tools"] and payload["stop"] == ["Observation:"]
    transformed = maybe_transform(payload, CompletionCreateParamsNonStreaming)
    assert json.dumps(transformed, sort_keys=True) == json.dumps(payload, sort_keys=True)


@pytest.mark.parametrize("endpoint", [[(429, {"error": {"message": "slow down"}}), (200, REPLY)]],
                         indirect=True)  # fmt: skip
def test_a_throttled_call_is_retried_and_the_reply_parsed(
    endpoint: ScriptedEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = AgentContext()
    message = invoke_model(llm_for(endpoint, monkeypatch), MESSAGES, context, tools=openai_tools())
    assert message.tool_calls == [
        {"name": "validate_insurance", "args": {"tier": 2}, "id": "c2", "type": "tool_call"}
    ]
    assert context.usage[0]["attempts"] == 2 and context.usage[0]["input_tokens"] == 40
    path, headers, body = endpoint.received[-1]
    assert path == "/v1/chat/completions" and headers["authorization"] == "Bearer sk-test"
    assert body["model"] == "some-model" and body["stream"] is False
    assert body["tools"] == openai_tools() and body["temperature"] == 0.0
    assert body["messages"][2]["tool_calls"][0]["function"]["name"] == "validate_insurance"
    assert body["messages"][3] == {
        "role": "tool", "tool_call_id": "c1", "content": '{"valid": true, "note": "ünïcode ✓"}'
    }  # fmt: skip


@pytest.mark.parametrize("endpoint", [[(400, {"error": {"message": "no such model"}})]],
                         indirect=True)  # fmt: skip
def test_a_refused_call_is_not_retried_and_says_why(
    endpoint: ScriptedEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ModelCallError, match=r"400 - no such model"):
        invoke_model(llm_for(endpoint, monkeypatch), MESSAGES, AgentContext())
    assert len(endpoint.received) == 1


@pytest.mark.parametrize("endpoint", [[(200, b"<html>not json</html>")]], indirect=True)
def test_a_reply_that_is_not_json_is_a_clear_model_error(
    endpoint: ScriptedEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ModelCallError, match="not json"):
        invoke_model(llm_for(endpoint, monkeypatch), MESSAGES, AgentContext())


def test_an_endpoint_refusing_connections_is_unreachable_after_one_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing listens there (the model server died): one quick retry, not the whole backoff
    budget, then an infrastructure error."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens on the port now
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    spec = parse_model_spec("openai:some-model", f"http://127.0.0.1:{port}/v1")
    llm = LLM(spec, build_chat_model(spec, 0.0, timeout=10.0), retries=8, backoff=0.05)
    context = AgentContext()
    with pytest.raises(ModelUnreachable, match="Connection"):
        invoke_model(llm, MESSAGES, context)
    assert context.usage[-1]["attempts"] == 1 + REFUSED_RETRIES < 1 + llm.retries


@pytest.mark.parametrize("endpoint", [[(200, REPLY), (200, REPLY), (429, {"error": {"message":
                         "slow down"}}), (429, {"error": {"message": "slow down"}})]],
                         indirect=True)  # fmt: skip
def test_the_direct_send_is_the_sdks_request_and_raises_its_errors(
    endpoint: ScriptedEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What makes skipping the SDK's ``post`` safe on plain-HTTP endpoints: the request on the
    wire is the one ``post`` sends (URL, every header, the body), and a refusal is the same
    typed error."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    chat = build_chat_model(parse_model_spec("openai:m", endpoint.base_url), timeout=7.0)
    direct = chat.client
    through_post = PlainChatCompletions(chat.root_client)
    assert isinstance(direct, PlainChatCompletions) and direct._transport is not None
    payload = chat._get_request_payload(MESSAGES, stop=["Observation:"], tools=openai_tools())
    span = TracerProvider().get_tracer("test").start_span("chat")
    with span, trace.use_span(span):
        assert through_post.create(**payload, timeout=3.0).parse() == REPLY
        assert direct.create(**payload, timeout=3.0).parse() == REPLY
    (sdk_path, sdk_headers, sdk_body), (path, headers, body) = endpoint.received
    assert (path, body) == (sdk_path, sdk_body) == ("/v1/chat/completions", payload)
    assert headers == sdk_headers and headers["x-stainless-read-timeout"] == "3.0"
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert headers["traceparent"].split("-")[1] == trace_id
    assert headers["authorization"] == "Bearer sk-test"
    errors = []
    for client in (through_post, direct):
        with pytest.raises(RateLimitError) as caught:
            client.create(**payload)
        errors.append((caught.value.status_code, str(caught.value), caught.value.body))
    assert errors[0] == errors[1] == (429, "Error code: 429 - slow down", {"message": "slow down"})


@pytest.mark.parametrize("endpoint", [[(200, REPLY)] * 3], indirect=True)
def test_without_callback_handlers_the_direct_generation_gives_invokes_message(
    endpoint: ScriptedEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Skipping ``invoke``'s callback machinery changes nothing in the reply; a configured
    handler (LangSmith tracing, a caller's callbacks) still sees every call."""
    llm = llm_for(endpoint, monkeypatch)
    runnable = llm.runnable(openai_tools())
    invoked = runnable.invoke(MESSAGES, stop=["Observation:"])
    direct = generate(runnable, MESSAGES, {"stop": ["Observation:"]})
    assert invoked.id and direct.id is None  # invoke names a reply by its callback run
    assert direct.model_dump(exclude={"id"}) == invoked.model_dump(exclude={"id"})
    assert direct.tool_calls[0]["args"] == {"tier": 2} and direct.usage_metadata
    assert direct.response_metadata["model_name"] == "m"
    assert endpoint.received[0][2] == endpoint.received[1][2]  # the same request

    class Seen(BaseCallbackHandler):
        starts = 0

        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            Seen.starts += 1

    with_handler = generate(runnable.with_config(callbacks=[Seen()]), MESSAGES, {})
    assert Seen.starts == 1 and with_handler.tool_calls == direct.tool_calls


def test_each_message_is_converted_once_and_the_request_stays_langchains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The memo behind :class:`ChatCompletionsModel`: the request is LangChain's own, message
    for message, while only messages new since the last call are converted; a message given
    new content, or rebuilt, is converted again."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    ours = build_chat_model(parse_model_spec("openai:m", "http://127.0.0.1:9/v1"))
    assert isinstance(ours, ChatCompletionsModel)
    langchains = ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", temperature=0.0,
                            use_responses_api=False, max_retries=0)  # fmt: skip
    conversions: list[BaseMessage] = []
    original = chat_completions_module._convert_message_to_dict

    def counted(message: BaseMessage) -> dict[str, Any]:
        conversions.append(message)
        return original(message)

    monkeypatch.setattr(chat_completions_module, "_convert_message_to_dict", counted)
    fresh = [m.model_copy() for m in MESSAGES]  # new objects: none converted yet
    conversation = [*fresh, AIMessage("Thought: done. ✓", tool_calls=[])]
    for step in range(2, len(conversation) + 1):
        assert ours._get_request_payload(conversation[:step], stop=["Observation:"]) == (
            langchains._get_request_payload(conversation[:step], stop=["Observation:"]))
    assert len(conversions) == len(conversation)  # each once, though sent 2 + 3 + 4 + 5 times
    edited = conversation[-1]
    edited.content = "Thought: changed my mind."
    rebuilt = conversation[1].model_copy()
    again = [conversation[0], rebuilt, *conversation[2:]]
    payload = ours._get_request_payload(again)
    assert payload["messages"][-1]["content"] == "Thought: changed my mind."
    assert payload == langchains._get_request_payload(again)
    assert conversions[-2:] == [rebuilt, edited]


@pytest.mark.parametrize("endpoint", [[(200, REPLY)] * 2], indirect=True)
def test_a_configured_langchain_cache_takes_langchains_own_path(
    endpoint: ScriptedEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The direct reply skips only what has nothing to do: with a LangChain cache set, the
    model's own ``_generate_with_cache`` runs (and caches), as before."""
    llm = llm_for(endpoint, monkeypatch)
    assert isinstance(llm.chat, ChatCompletionsModel)
    assert llm.chat.reply(MESSAGES) is not None
    set_llm_cache(InMemoryCache())
    try:
        assert llm.chat.reply(MESSAGES) is None
        first = generate(llm.chat, MESSAGES, {})
        second = generate(llm.chat, MESSAGES, {})  # from the cache: no request
    finally:
        set_llm_cache(None)
    assert first.content == second.content and len(endpoint.received) == 2


def test_reply_headers_are_read_whatever_their_case() -> None:
    """LangChain reads a reply's headers by their canonical names (``X-LangSmith-Gateway-
    Metadata``); servers write them in any case."""
    headers = AnswerHeaders([(b"x-langsmith-gateway-metadata", b'{"a": 1}'),
                             (b"Content-Type", b"application/json")])  # fmt: skip
    assert headers.get("X-LangSmith-Gateway-Metadata") == '{"a": 1}'
    assert headers["content-type"] == "application/json" and "CONTENT-TYPE" in headers
    assert headers.get("missing") is None

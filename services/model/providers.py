"""The scripted model behind two more providers' APIs: Anthropic's Messages API and Amazon
Bedrock's Converse API, so ``anthropic:<model>`` and ``bedrock:<model-id>`` agents run through
their own client libraries (``langchain-anthropic``, ``langchain-aws`` over boto3) offline.

Each door translates its request into a Chat Completions body for the one engine and the
engine's reply back into its own shape: Anthropic's ``text`` / ``tool_use`` content blocks with
``tool_result`` blocks coming back, ``stop_reason`` and ``usage``; Converse's ``text`` /
``toolUse`` / ``toolResult`` blocks, ``stopReason``, ``usage`` and ``metrics``. Requests are
checked as the real APIs check them and refused in each API's error shape (Anthropic:
``{"type": "error", "error": {...}}``; Bedrock: ``{"message"}`` with the error type in the
``x-amzn-ErrorType`` header, which botocore reads), never with a 500.

The model named in the request (the Messages body's ``model``, the Converse path's model id)
picks the error profile (and latency) as on the Chat Completions door: ``scripted:noisy``
plays the noisy profile, any other name the server's default (these doors keep taking any
model id, as the provider clients' tests name theirs freely).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

import orjson
from fastapi import FastAPI, Request
from starlette.responses import Response

from sopgym.asgi import MAX_API_BODY, BodyTooLarge, ClientDisconnected, read_body
from sopgym.core.exceptions import MalformedRequest
from sopgym.core.jsonio import MAX_DEPTH, json_depth
from sopgym.services.model.engine import BadRequest
from sopgym.types import JSON

# a Chat Completions body (and its size) → its reply, after the profile's simulated latency
Answer = Callable[[JSON, int], Awaitable[JSON]]


class ProtocolError(MalformedRequest, ValueError):
    """A request its API would refuse with 400."""


def add_provider_routes(app: FastAPI, answer: Answer) -> None:
    @app.post("/v1/messages")
    async def anthropic_messages(request: Request) -> Response:
        body, size, refusal = await _read(request, _anthropic_error)
        if refusal is not None:
            return refusal
        try:
            chat = anthropic_to_chat(body)
            return _json(chat_to_anthropic(await answer(chat, size), chat["model"]))
        except (ProtocolError, BadRequest) as error:
            return _anthropic_error(str(error))

    @app.post("/model/{model_id:path}/converse")
    async def bedrock_converse(model_id: str, request: Request) -> Response:
        body, size, refusal = await _read(request, _bedrock_error)
        if refusal is not None:
            return refusal
        started = time.perf_counter()
        try:
            chat = converse_to_chat(body, unquote(model_id))
            reply = await answer(chat, size)
        except (ProtocolError, BadRequest) as error:
            return _bedrock_error(str(error))
        return _json(chat_to_converse(reply, time.perf_counter() - started))


async def _read(
    request: Request, refuse: Callable[[str, int], Response]
) -> tuple[JSON, int, Response | None]:
    try:
        raw = await read_body(request.receive, MAX_API_BODY)
    except ClientDisconnected:
        return {}, 0, refuse("the client disconnected before sending the whole body", 400)
    except BodyTooLarge as error:
        return {}, 0, refuse(str(error), 413)
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}, 0, refuse("request body is not valid JSON", 400)
    if not isinstance(body, dict):
        return {}, 0, refuse("request body must be a JSON object", 400)
    # a value nested past what orjson writes back (a tool input 300 levels deep) would fail
    # on the way through the engine: refuse it here, as the Chat Completions door does
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and json_depth(body) > MAX_DEPTH:
        return {}, 0, refuse(f"request body nests deeper than {MAX_DEPTH} levels", 400)
    return body, len(raw), None


def _json(body: object, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        orjson.dumps(body), status_code=status, media_type="application/json", headers=headers
    )


# ---- Anthropic Messages ----


def _anthropic_error(message: str, status: int = 400) -> Response:
    kind = "request_too_large" if status == 413 else "invalid_request_error"
    return _json({"type": "error", "error": {"type": kind, "message": message}}, status)


def anthropic_to_chat(body: JSON) -> JSON:
    """A Messages request as the Chat Completions body the engine reads."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ProtocolError("model: Field required")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ProtocolError("max_tokens: Field required (a positive integer)")
    if body.get("stream"):
        raise ProtocolError("stream: streaming is not supported by the scripted model")
    messages: list[JSON] = []
    system = body.get("system")
    if system is not None:
        messages.append({"role": "system", "content": _anthropic_text(system, "system")})
    turns = body.get("messages")
    if not isinstance(turns, list) or not turns:
        raise ProtocolError("messages: at least one message is required")
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or turn.get("role") not in ("user", "assistant"):
            raise ProtocolError(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        messages += _anthropic_turn(turn, i)
    chat: JSON = {"model": model, "messages": messages, "max_tokens": max_tokens}
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise ProtocolError("tools: Input should be a valid list")
        chat["tools"] = [_anthropic_tool(t, i) for i, t in enumerate(tools)]
    stop = body.get("stop_sequences")
    if stop is not None:
        if not isinstance(stop, list) or not all(isinstance(s, str) and s.strip() for s in stop):
            raise ProtocolError("stop_sequences: each must be a string with non-whitespace")
        chat["stop"] = stop
    for name in ("temperature", "top_p"):
        if body.get(name) is not None:
            chat[name] = body[name]
    return chat


def _anthropic_text(content: Any, at: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        for b in content
    ):
        return "".join(b["text"] for b in content)
    raise ProtocolError(f"{at}: a string or a list of text blocks")


def _anthropic_turn(turn: JSON, i: int) -> list[JSON]:
    """One Messages turn → Chat Completions messages: an assistant's ``tool_use`` blocks are
    its tool calls; a user's ``tool_result`` blocks are tool messages (before its text)."""
    content = turn.get("content")
    if isinstance(content, str):
        return [{"role": turn["role"], "content": content}]
    if not isinstance(content, list):
        raise ProtocolError(f"messages.{i}.content: a string or a list of content blocks")
    texts: list[str] = []
    calls: list[JSON] = []
    results: list[JSON] = []
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        at = f"messages.{i}.content.{j}"
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use" and turn["role"] == "assistant":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise ProtocolError(f"{at}: tool_use needs a string id and name")
            arguments = orjson.dumps(block.get("input", {})).decode()
            calls.append(
                {
                    "id": block["id"],
                    "type": "function",
                    "function": {"name": block["name"], "arguments": arguments},
                }
            )
        elif kind == "tool_result" and turn["role"] == "user":
            if not isinstance(block.get("tool_use_id"), str):
                raise ProtocolError(f"{at}: tool_result needs a string tool_use_id")
            result = block.get("content", "")
            text = _anthropic_text(result, f"{at}.content")
            results.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": text})
        else:
            raise ProtocolError(
                f"{at}: unsupported content block {kind!r} in a {turn['role']} turn"
            )
    if turn["role"] == "assistant":
        message: JSON = {"role": "assistant", "content": "".join(texts) or None}
        if calls:
            message["tool_calls"] = calls
        return [message]
    return [*results, *([{"role": "user", "content": "".join(texts)}] if texts else [])]


def _function_tool(name: str, description: str, schema: JSON) -> JSON:
    """A tool as Chat Completions declares it, whichever API's shape it came in."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    }


def _anthropic_tool(tool: Any, i: int) -> JSON:
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
        raise ProtocolError(f"tools.{i}: a tool needs a name")
    schema = tool.get("input_schema")
    if not isinstance(schema, dict):
        raise ProtocolError(f"tools.{i}.input_schema: Field required")
    return _function_tool(tool["name"], tool.get("description", ""), schema)


def chat_to_anthropic(reply: JSON, model: str) -> JSON:
    message = reply["choices"][0]["message"]
    content: list[JSON] = []
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    calls = message.get("tool_calls") or []
    for call in calls:
        content.append(
            {
                "type": "tool_use",
                "id": "toolu_" + call["id"].removeprefix("call_"),
                "name": call["function"]["name"],
                "input": orjson.loads(call["function"]["arguments"]),
            }
        )
    usage = reply.get("usage", {})
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "output_tokens": usage.get("completion_tokens", 0),
        },
    }


# ---- Bedrock Converse ----


def _bedrock_error(message: str, status: int = 400) -> Response:
    return _json({"message": message}, status, {"x-amzn-ErrorType": "ValidationException"})


def converse_to_chat(body: JSON, model_id: str) -> JSON:
    """A Converse request (model id from its path) as a Chat Completions body."""
    messages: list[JSON] = []
    system = body.get("system")
    if system is not None:
        if not isinstance(system, list):
            raise ProtocolError("system: a list of system content blocks")
        messages.append({"role": "system", "content": _converse_text(system, "system")})
    turns = body.get("messages")
    if not isinstance(turns, list) or not turns:
        raise ProtocolError("messages: at least one message is required")
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or turn.get("role") not in ("user", "assistant"):
            raise ProtocolError(f"messages.{i}.role: must be user or assistant")
        messages += _converse_turn(turn, i)
    chat: JSON = {"model": model_id, "messages": messages}
    config = body.get("inferenceConfig") or {}
    if not isinstance(config, dict):
        raise ProtocolError("inferenceConfig: an object")
    for ours, theirs in (
        ("max_tokens", "maxTokens"),
        ("temperature", "temperature"),
        ("top_p", "topP"),
        ("stop", "stopSequences"),
    ):
        if config.get(theirs) is not None:
            chat[ours] = config[theirs]
    tool_config = body.get("toolConfig") or {}
    if not isinstance(tool_config, dict):
        raise ProtocolError("toolConfig: an object")
    tools = tool_config.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise ProtocolError("toolConfig.tools: a list of tools")
        chat["tools"] = [_converse_tool(t, i) for i, t in enumerate(tools)]
    return chat


def _converse_text(blocks: list[Any], at: str) -> str:
    texts = []
    for j, block in enumerate(blocks):
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block, dict) and "json" in block:
            texts.append(orjson.dumps(block["json"]).decode())
        else:
            raise ProtocolError(f"{at}.{j}: a text (or json) block")
    return "".join(texts)


def _converse_turn(turn: JSON, i: int) -> list[JSON]:
    content = turn.get("content")
    if not isinstance(content, list):
        raise ProtocolError(f"messages.{i}.content: a list of content blocks")
    texts: list[str] = []
    calls: list[JSON] = []
    results: list[JSON] = []
    for j, block in enumerate(content):
        at = f"messages.{i}.content.{j}"
        if not isinstance(block, dict):
            raise ProtocolError(f"{at}: a content block")
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block.get("toolUse"), dict) and turn["role"] == "assistant":
            use = block["toolUse"]
            if not isinstance(use.get("toolUseId"), str) or not isinstance(use.get("name"), str):
                raise ProtocolError(f"{at}.toolUse: needs a toolUseId and a name")
            arguments = orjson.dumps(use.get("input", {})).decode()
            calls.append(
                {
                    "id": use["toolUseId"],
                    "type": "function",
                    "function": {"name": use["name"], "arguments": arguments},
                }
            )
        elif isinstance(block.get("toolResult"), dict) and turn["role"] == "user":
            result = block["toolResult"]
            if not isinstance(result.get("toolUseId"), str):
                raise ProtocolError(f"{at}.toolResult: needs a toolUseId")
            blocks = result.get("content") or []
            if not isinstance(blocks, list):
                raise ProtocolError(f"{at}.toolResult.content: a list of content blocks")
            text = _converse_text(blocks, f"{at}.toolResult.content")
            results.append({"role": "tool", "tool_call_id": result["toolUseId"], "content": text})
        else:
            raise ProtocolError(f"{at}: unsupported content block in a {turn['role']} turn")
    if turn["role"] == "assistant":
        message: JSON = {"role": "assistant", "content": "".join(texts) or None}
        if calls:
            message["tool_calls"] = calls
        return [message]
    return [*results, *([{"role": "user", "content": "".join(texts)}] if texts else [])]


def _converse_tool(tool: Any, i: int) -> JSON:
    spec = tool.get("toolSpec") if isinstance(tool, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise ProtocolError(f"toolConfig.tools.{i}: a toolSpec with a name")
    input_schema = spec.get("inputSchema")
    schema = input_schema.get("json") if isinstance(input_schema, dict) else None
    if not isinstance(schema, dict):
        raise ProtocolError(f"toolConfig.tools.{i}.toolSpec.inputSchema.json: a JSON Schema")
    return _function_tool(spec["name"], spec.get("description", ""), schema)


def chat_to_converse(reply: JSON, seconds: float) -> JSON:
    message = reply["choices"][0]["message"]
    content: list[JSON] = []
    if message.get("content"):
        content.append({"text": message["content"]})
    calls = message.get("tool_calls") or []
    for call in calls:
        content.append(
            {
                "toolUse": {
                    "toolUseId": "tooluse_" + call["id"].removeprefix("call_"),
                    "name": call["function"]["name"],
                    "input": orjson.loads(call["function"]["arguments"]),
                }
            }
        )
    usage = reply.get("usage", {})
    tokens_in, tokens_out = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if calls else "end_turn",
        "usage": {
            "inputTokens": tokens_in,
            "outputTokens": tokens_out,
            "totalTokens": tokens_in + tokens_out,
        },
        "metrics": {"latencyMs": max(1, round(seconds * 1000))},
    }

"""How the scripted model writes: native tool calls, ReAct text, plans and final answers, as
OpenAI Chat Completions response bodies.

With ``messy_format`` the same content is sometimes written the way real models write it
(code fences, single quotes, prose after the JSON), so agents' parsers are exercised; the
meaning never changes.
"""

from __future__ import annotations

import random
import time
import uuid
from typing import Any

import orjson

from sopgym.core.answers import FINAL_TAG, PLAN_TAG
from sopgym.core.tasks import ToolCall
from sopgym.types import JSON


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _single_quoted(value: JSON) -> str:
    return repr(value)  # Python literal: single quotes, True/False/None


def write_arguments(arguments: Any, style: int) -> str:
    if style == 1:
        return f"```json\n{_json(arguments)}\n```"
    if style == 2 and isinstance(arguments, dict):
        return _single_quoted(arguments)
    if style == 3:
        return f"{_json(arguments)}\nI will wait for the result."
    return _json(arguments)


def react_action(call: ToolCall, thought: str, style: int) -> str:
    return (
        f"Thought: {thought}\n"
        f"Action: {call.name}\n"
        f"Action Input: {write_arguments(call.arguments, style)}"
    )


def final_text(answer: JSON, react: bool, style: int) -> str:
    # messy or not, the answer stays in its declared form (the tags agents ask for)
    body = (
        f"<{FINAL_TAG}>\n{write_arguments(answer, style)}\n</{FINAL_TAG}>\nThat completes the case."
        if style
        else f"<{FINAL_TAG}>{_json(answer)}</{FINAL_TAG}>"
    )
    if react:
        return f"Thought: every step the SOP requires is done.\nFinal Answer: {body}"
    return f"All SOP steps for this case are complete.\n{body}"


def gave_up_text(reason: str, react: bool) -> str:
    """A reply that stops without an answer, saying why (no final answer to read)."""
    text = f"I cannot complete the procedure for this case: {reason}. I have no answer to give."
    return f"Thought: the procedure cannot go on.\nFinal Answer: {text}" if react else text


def plan_text(steps: list[JSON]) -> str:
    return f"Here is the plan.\n<{PLAN_TAG}>{_json(steps)}</{PLAN_TAG}>"


def style_for(seed: str, rate: float) -> int:
    """0 for the plain form; otherwise one of the messy forms, chosen reproducibly."""
    rng = random.Random(seed)
    return rng.randint(1, 3) if rng.random() < rate else 0


def completion(
    model: str,
    content: str | None,
    tool_calls: list[ToolCall] | None,
    prompt_tokens: int,
    stop: list[str] | None = None,
) -> JSON:
    if content and stop:
        content = cut_at_stop(content, stop)
    message: JSON = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": c.name, "arguments": _json(c.arguments)},
            }
            for c in tool_calls
        ]
    completion_tokens = estimate_tokens(content or "") + sum(
        estimate_tokens(c.name + _json(c.arguments)) for c in tool_calls or []
    )
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "sopgym-scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def cut_at_stop(content: str, stop: list[str]) -> str:
    """``content`` up to the first of the stop sequences in it, as a server ends generation."""
    for marker in stop:
        if marker and marker in content:
            content = content[: content.index(marker)]
    return content


def estimate_tokens(text: str) -> int:
    """About four characters a token: what usage accounting needs, without a tokenizer."""
    return max(1, (len(text) + 3) // 4) if text else 0

"""Token ids and logprobs for the scripted model's replies, as vLLM's OpenAI server returns them.

Asked with vLLM's request fields, a reply carries what an RL trainer reads (docs/tokens.md):

* ``logprobs: true`` (OpenAI's field): ``choices[0].logprobs.content``, one
  ``{"token", "logprob", "bytes", "top_logprobs": []}`` per completion token; with
  ``return_tokens_as_token_ids: true`` each ``token`` is written ``"token_id:<id>"``.
* ``return_token_ids: true`` (vLLM's extension): the top-level ``prompt_token_ids`` and
  ``choices[0].token_ids``.

There is no real tokenizer here: a deterministic stand-in renders the conversation through a
ChatML-style chat template (``<|im_start|>{role}\\n{content}<|im_end|>\\n`` per message, then the
generation prompt ``<|im_start|>assistant\\n``) and splits it into words, single punctuation
marks and whitespace runs, each mapped to a stable id by hashing. The prompt ids therefore end
with the generation prompt, and the completion ids end with ``<|im_end|>`` (the EOS a server
stops on), as vLLM's do. Logprobs are drawn from the token and its position, so a repeated
request gets the same numbers. Usage counts become the ids' lengths, as a real server's are.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson

from sopgym.services.model.engine import BadRequest
from sopgym.types import JSON

SPECIAL_TOKENS = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2}
VOCAB_SIZE = 151_936  # Qwen-sized, so ids look like a real model's
GENERATION_PROMPT = "<|im_start|>assistant\n"
END_OF_TURN = "<|im_end|>"
_PIECES = re.compile(r"<\|[a-z_]+\|>|\w+|\s+|[^\w\s]")
_ASKING_FIELDS = ("logprobs", "return_token_ids", "return_tokens_as_token_ids")


def wants_tokens(body: JSON) -> bool:
    """Whether the request asks for token ids or logprobs (vLLM's fields; refused when not
    booleans, as a real server refuses them)."""
    asked = False
    for name in _ASKING_FIELDS:
        value = body.get(name)
        if value is not None and not isinstance(value, bool):
            raise BadRequest(f"{name} must be a boolean", name)
        asked = asked or (value is True and name != "return_tokens_as_token_ids")
    return asked


def token_id(piece: str) -> int:
    special = SPECIAL_TOKENS.get(piece)
    if special is not None:
        return special
    digest = hashlib.blake2b(piece.encode(), digest_size=8).digest()
    return len(SPECIAL_TOKENS) + int.from_bytes(digest, "big") % (VOCAB_SIZE - len(SPECIAL_TOKENS))


def tokenize(text: str) -> list[str]:
    return _PIECES.findall(text)


def render_prompt(messages: list[Any]) -> str:
    """The stand-in chat template over the request's messages, generation prompt included."""
    turns = [f"<|im_start|>{m.get('role')}\n{_content_text(m)}{END_OF_TURN}\n" for m in messages]
    return "".join(turns) + GENERATION_PROMPT


def render_completion(message: JSON) -> str:
    """The reply as the model generated it: its text, each tool call as a ``<tool_call>``
    block (Hermes-style, as Qwen's template writes them), then the end-of-turn token."""
    calls = "".join(_tool_call_text(c.get("function")) for c in message.get("tool_calls") or [])
    return f"{message.get('content') or ''}{calls}{END_OF_TURN}"


def _tool_call_text(function: Any) -> str:
    return f"<tool_call>\n{orjson.dumps(function).decode()}\n</tool_call>"


def _content_text(message: Any) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts: their text, in order
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    text = content if isinstance(content, str) else ""
    for call in message.get("tool_calls") or []:
        text += _tool_call_text(call.get("function") if isinstance(call, dict) else None)
    return text


def _logprob(piece: str, position: int) -> float:
    digest = hashlib.blake2b(f"{position}|{piece}".encode(), digest_size=4).digest()
    return -round(int.from_bytes(digest, "big") / 2**32 * 2.5, 6)  # in (-2.5, 0]


def with_tokens(body: JSON, reply: JSON) -> JSON:
    """``reply`` with the token fields ``body`` asks for (``reply`` itself when none)."""
    if not wants_tokens(body):
        return reply
    choice = reply["choices"][0]
    prompt = tokenize(render_prompt(body["messages"]))
    completion = tokenize(render_completion(choice["message"]))
    completion_ids = [token_id(p) for p in completion]
    if body.get("logprobs") is True:
        as_ids = body.get("return_tokens_as_token_ids") is True
        choice["logprobs"] = {
            "content": [
                {
                    "token": f"token_id:{i}" if as_ids else piece,
                    "logprob": _logprob(piece, n),
                    "bytes": list(piece.encode()),
                    "top_logprobs": [],
                }
                for n, (piece, i) in enumerate(zip(completion, completion_ids, strict=True))
            ]
        }
    if body.get("return_token_ids") is True:
        reply["prompt_token_ids"] = [token_id(p) for p in prompt]
        choice["token_ids"] = completion_ids
    reply["usage"] = {
        "prompt_tokens": len(prompt),
        "completion_tokens": len(completion),
        "total_tokens": len(prompt) + len(completion),
    }
    return reply

"""Behaviours of small real models, played over the scripted model's replies.

The engine decides what a model that knows the SOP would do next; a behaviour of the profile
(:data:`sopgym.services.model.profiles.BEHAVIOUR_KINDS`) then rewrites that reply the way the
small instruction-tuned models seen on llama.cpp do: answer at once with a guessed JSON object
in a code fence, repeat a refused call unchanged, or write a plan in another shape. Each is
drawn per case (its rate, the profile's seed and the case's text), so an episode behaves the
same way on every turn, and agents have a reproducible model to prove they cope.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

import orjson

from sopgym.core.answers import PLAN_TAG
from sopgym.core.jsontext import LooseJSONError, parse_array
from sopgym.core.tasks import ToolCall
from sopgym.services.model import replies
from sopgym.services.model.conversation import read_conversation
from sopgym.services.model.profiles import BEHAVIOUR_KINDS, ErrorProfile
from sopgym.types import JSON

_PLAN = re.compile(rf"<{PLAN_TAG}>(.*?)</{PLAN_TAG}>", re.DOTALL)

Guess = Callable[[JSON], JSON | None]  # a Chat Completions body in, a guessed answer out


def behaves(profile: ErrorProfile) -> bool:
    return any(profile.rate(kind) for kind in BEHAVIOUR_KINDS)


def apply(profile: ErrorProfile, body: JSON, reply: JSON, guess: Guess) -> JSON:
    """``reply`` (the engine's answer to ``body``) as the profile's behaviours rewrite it;
    ``guess`` gives the answer a guessing model blurts out (never read from the gold)."""
    convo = read_conversation(body["messages"], body.get("tools"))
    case = convo.user_texts[0] if convo.user_texts else ""

    def drawn(kind: str) -> bool:
        rate = profile.rate(kind)
        digest = hashlib.blake2b(f"{profile.seed}|{kind}|{case}".encode(), digest_size=8)
        return rate > 0 and int.from_bytes(digest.digest(), "big") / 2**64 < rate

    model = body.get("model") or "scripted"
    acting = convo.native_tools or convo.react
    if convo.wants_plan:
        for kind in ("plan_xml", "plan_list", "plan_prose"):
            if drawn(kind):
                return _replan(reply, kind)
        return reply
    if acting and drawn("tools_late") and not _has_assistant_turn(body):
        return _guess(body, guess, model, reply)
    last = convo.calls[-1] if convo.calls else None
    if acting and last is not None and last.ok is False and drawn("repeat_failing"):
        call = ToolCall(last.name, last.arguments)
        if convo.react:
            text = replies.react_action(call, "I will try that call again.", 0)
            return replies.completion(model, text, None, _prompt_tokens(reply))
        return replies.completion(model, None, [call], _prompt_tokens(reply))
    return reply


def _has_assistant_turn(body: JSON) -> bool:
    return any(m.get("role") == "assistant" for m in body["messages"])


def _guess(body: JSON, guess: Guess, model: str, reply: JSON) -> JSON:
    """A guessed answer in a code fence, untagged: not the answer's declared form."""
    answer = orjson.dumps(guess(body) or {}, option=orjson.OPT_INDENT_2).decode()
    text = f"Based on the case, the result is:\n```json\n{answer}\n```"
    return replies.completion(model, text, None, _prompt_tokens(reply))


def _replan(reply: JSON, kind: str) -> JSON:
    message = _message(reply)
    match = _PLAN.search(message.get("content") or "")
    try:
        steps = parse_array(match.group(1)) if match else []
    except LooseJSONError:
        steps = []
    if kind == "plan_xml":
        body = "\n".join(
            f'<step n="{s.get("step")}"><tool>{s.get("tool")}</tool><goal>{s.get("goal")}</goal>'
            "</step>"
            for s in steps
        )
        text = f"<plan>\n{body}\n</plan>"
    elif kind == "plan_list":
        text = "Plan:\n" + "\n".join(
            f"{s.get('step')}. Call {s.get('tool')} to {s.get('goal')}" for s in steps
        )
    else:
        text = "I will go through the procedure carefully and handle each part of the case."
    return {**reply, "choices": [{**reply["choices"][0], "message": {**message, "content": text}}]}


def _message(reply: JSON) -> JSON:
    return reply["choices"][0]["message"]


def _prompt_tokens(reply: JSON) -> int:
    return int(reply.get("usage", {}).get("prompt_tokens") or 1)

"""Behaviours of small real models, played over the scripted model's replies.

The engine decides what a model that knows the SOP would do next; a behaviour of the profile
(:data:`sopgym.services.model.profiles.BEHAVIOUR_KINDS`) then rewrites that reply the way the
small instruction-tuned models seen on llama.cpp do: answer at once with a guessed JSON object
in a code fence, answer in tags when the prompt's first example is the answer's, write the
answer without its tags, repeat a refused call unchanged, or write a plan in another shape. Each is
drawn per case (its rate, the profile's seed and the case's text), so an episode behaves the
same way on every turn, and agents have a reproducible model to prove they cope.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from sopgym.core.answers import FINAL_TAG, PLAN_TAG, REACT_MARKER
from sopgym.core.jsontext import LooseJSONError, parse_array
from sopgym.core.tasks import ToolCall
from sopgym.services.model import replies
from sopgym.services.model.conversation import read_conversation
from sopgym.services.model.profiles import BEHAVIOUR_KINDS, ErrorProfile, profile_for_model
from sopgym.types import JSON

_PLAN = re.compile(rf"<{PLAN_TAG}>(.*?)</{PLAN_TAG}>", re.DOTALL)
_FINAL = re.compile(rf"<{FINAL_TAG}>(.*?)</{FINAL_TAG}>", re.DOTALL)
# the first Thought / Action / Action Input lines of a prompt: the example round it shows
_FORMAT_ROUND = re.compile(
    rf"^Thought:[^\n]*\nAction:[^\n]*\n{re.escape(REACT_MARKER)}[^\n]*$", re.MULTILINE
)
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_ANSWER_EXAMPLE = re.compile(rf"<{FINAL_TAG}>\s*\{{")
_CALL_EXAMPLE = re.compile(r"<tool_call>|^Action:", re.MULTILINE)

if TYPE_CHECKING:
    from sopgym.services.model.engine import ScriptedModel

Guess = Callable[[JSON], JSON | None]  # a Chat Completions body in, a guessed answer out


def behaves(profile: ErrorProfile) -> bool:
    return any(profile.rate(kind) for kind in BEHAVIOUR_KINDS)


def play(model: ScriptedModel, body: JSON, size: int = 0) -> JSON:
    """A Chat Completions body's reply: the engine's, as the profile the body names plays it
    (every API door of the server answers through here, and the tests in-process)."""
    reply = model.respond(body, size)
    played = profile_for_model(body.get("model"), model.default_profile)
    rewritten = apply(played, body, reply, model.guess) if behaves(played) else reply
    return obeying_tool_choice(body, rewritten, reply)


def obeying_tool_choice(body: JSON, played: JSON, engine: JSON) -> JSON:
    """``played`` as a server that constrains replies to the body's ``tool_choice`` gives it
    (llama-server ``--jinja`` and vLLM hold ``"required"`` or a named function to a grammar):
    a reply without a native call becomes the engine's own call, or, where the engine would
    answer, a call to the first offered tool (the named one) with no arguments, since a
    grammar lets the model write nothing else. A habit's calls written as text are native
    calls there."""
    choice = body.get("tool_choice")
    named = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if not body.get("tools") or (choice != "required" and not named):
        return played
    if _message(played).get("tool_calls") and not named:
        return played
    if _message(engine).get("tool_calls") and not named:
        return engine
    first = named or body["tools"][0].get("function", {}).get("name", "")
    call = ToolCall(first, {})
    return replies.completion(str(body.get("model") or "scripted"), None, [call],
                              _prompt_tokens(engine))  # fmt: skip


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
    first = not _has_assistant_turn(body)
    if convo.wants_plan:
        for kind in ("plan_xml", "plan_list", "plan_prose"):
            if drawn(kind):
                return _replan(reply, kind)
        return reply
    if acting and drawn("tools_late") and first:
        return _guess(body, guess, model, reply)
    answers_now = drawn("answers_unforced") or (
        drawn("answers_first") and _leads_with_answer(convo.system)
    )
    if acting and not convo.calls and answers_now:
        answer = guess(body)
        if answer is not None:
            text = f"<{FINAL_TAG}>{orjson.dumps(answer).decode()}</{FINAL_TAG}>"
            return replies.completion(model, text, None, _prompt_tokens(reply))
    if convo.react and first and drawn("copies_format"):
        copied = _FORMAT_ROUND.search(convo.system)
        if copied is not None:
            return replies.completion(model, copied.group(0), None, _prompt_tokens(reply))
    last = convo.calls[-1] if convo.calls else None
    repeat = acting and last is not None and (
        (last.ok is False and drawn("repeat_failing"))
        or (last.ok is True and drawn("repeats_success") and _just_returned(body))
    )
    if repeat and last is not None:
        call = ToolCall(last.name, last.arguments)
        if convo.react:
            text = replies.react_action(call, "I will make that call again.", 0)
            return replies.completion(model, text, None, _prompt_tokens(reply))
        return replies.completion(model, None, [call], _prompt_tokens(reply))
    if drawn("bare_enums"):
        reply = _bare_enums(reply, convo.system)
    if convo.native_tools and (drawn("fenced_calls") or drawn("hermes_calls")):
        reply = _calls_as_text(reply, hermes=not drawn("fenced_calls"))
    if convo.react and drawn("echoes_format") and _message(reply).get("tool_calls") is None:
        reply = _echo_format(reply, convo.system, body.get("stop"))
    if drawn("untagged_answers"):
        reply = _untagged(reply)
    if first and drawn("truncates"):
        reply = _truncated(reply)
    return reply


def _leads_with_answer(system: str) -> bool:
    """Whether the first example the system prompt shows is an answer (its tags around an
    object), with no example of a call (a ``<tool_call>`` or a ReAct round) before it: what a
    small model copies first is what it does first."""
    answer = _ANSWER_EXAMPLE.search(system)
    call = _CALL_EXAMPLE.search(system)
    return answer is not None and (call is None or answer.start() < call.start())


def _untagged(reply: JSON) -> JSON:
    """A final answer written as its object alone in a JSON code fence, without the tags
    (what Qwen2.5-Coder-1.5B did once told to call tools first, issue 48)."""
    match = _FINAL.search(_message(reply).get("content") or "")
    if match is None:
        return reply
    return _with_content(reply, f"```json\n{match.group(1).strip()}\n```")


def _just_returned(body: JSON) -> bool:
    """Whether the agent's last word is a call's result (a tool message, a ReAct observation):
    the turn where a model with the habit makes a successful call again. Told it is repeating
    itself, or asked anything else, it goes on with the procedure."""
    last = body["messages"][-1]
    if last.get("role") == "tool":
        return True
    return last.get("role") == "user" and _text(last).lstrip().startswith("Observation:")


def _text(message: JSON) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _with_content(reply: JSON, text: str | None, finish: str | None = None) -> JSON:
    choice = reply["choices"][0]
    message = {k: v for k, v in choice["message"].items() if k != "tool_calls"}
    message["content"] = text
    usage = reply.get("usage") or {}
    out = replies.estimate_tokens(text or "")
    prompt = int(usage.get("prompt_tokens") or 0)
    tokens = {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}
    reason = finish or ("tool_calls" if "tool_calls" in message else "stop")
    return {**reply, "choices": [{**choice, "message": message, "finish_reason": reason}],
            "usage": tokens}  # fmt: skip


def _bare_enums(reply: JSON, system: str) -> JSON:
    """A final answer whose number-like string values are written as numbers, unless the
    prompt's line for that field shows the value quoted (a model writes what it was shown)."""
    text = _message(reply).get("content") or ""
    match = _FINAL.search(text)
    if match is None:
        return reply
    try:
        answer = orjson.loads(match.group(1))
    except orjson.JSONDecodeError:
        return reply
    if not isinstance(answer, dict):
        return reply
    changed = False
    for field, value in answer.items():
        if not (isinstance(value, str) and _NUMBER.match(value)):
            continue
        shown = re.search(rf"^[ \t-]*{re.escape(field)}\s*:(.*)$", system, re.MULTILINE)
        if shown is not None and orjson.dumps(value).decode() in shown.group(1):
            continue  # the prompt showed it as a string: written as one
        answer[field] = float(value) if "." in value else int(value)
        changed = True
    if not changed:
        return reply
    written = f"<{FINAL_TAG}>{orjson.dumps(answer).decode()}</{FINAL_TAG}>"
    return _with_content(reply, text[: match.start()] + written + text[match.end() :])


def _calls_as_text(reply: JSON, hermes: bool) -> JSON:
    """Native tool calls written as text: fenced ``{"name", "arguments"}`` JSON (what
    Qwen2.5-Coder wrote on llama-server) or Hermes ``<tool_call>`` tags."""
    calls = _message(reply).get("tool_calls")
    if not calls:
        return reply
    blocks = []
    for call in calls:
        function = call["function"]
        written = orjson.dumps(
            {"name": function["name"], "arguments": orjson.loads(function["arguments"])}
        ).decode()
        blocks.append(
            f"<tool_call>\n{written}\n</tool_call>" if hermes else f"```json\n{written}\n```"
        )
    return _with_content(reply, "\n".join(blocks))


def _echo_format(reply: JSON, system: str, stop: object) -> JSON:
    """After its action, the model goes on with the prompt's own words from after the
    example round, as far as the request's stop sequences let it."""
    text = _message(reply).get("content") or ""
    copied = _FORMAT_ROUND.search(system)
    if REACT_MARKER not in text or copied is None:
        return reply
    echo = text + "\n" + system[copied.end() :].lstrip("\n")[:600]
    markers = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    return _with_content(reply, replies.cut_at_stop(echo, markers))


def _truncated(reply: JSON) -> JSON:
    """The reply cut halfway, as a server does at ``max_tokens``."""
    text = _message(reply).get("content")
    if not text:
        return reply
    return _with_content(reply, text[: len(text) // 2], "length")


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

"""Reading a Chat Completions request back: which case it is about, which tool calls the model
already made and how each one went, and what kind of reply is being asked for.

Tool calls are read from native ``tool_calls`` with their ``tool`` results, or, for ReAct
transcripts, from ``Action`` / ``Action Input`` text followed by an ``Observation``; both end
up as the same list of :class:`MadeCall`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from sopgym.agents.answers import ReactAction, parse_react
from sopgym.agents.jsontext import LooseJSONError, loads_loose
from sopgym.agents.prompts import PLAN_TAG, REACT_MARKER

JSON = dict[str, Any]


@dataclass
class MadeCall:
    name: str
    arguments: Any
    ok: bool | None = None  # None: no result in the conversation yet
    # the tool's answer as the agent showed it (parsed JSON, else the raw text): the generic
    # policy of imported benchmarks reads its arguments and answers from earlier results
    result: Any = None


@dataclass
class Conversation:
    system: str = ""
    user_texts: list[str] = field(default_factory=list)
    last_user: str = ""  # the final message's text when it is a user turn
    calls: list[MadeCall] = field(default_factory=list)
    native_tools: bool = False  # the request offers tools

    @property
    def react(self) -> bool:
        return not self.native_tools and REACT_MARKER in self.system

    @property
    def wants_plan(self) -> bool:
        return f"<{PLAN_TAG}>" in self.last_user


def text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def read_conversation(messages: list[JSON], tools: list[JSON] | None) -> Conversation:
    convo = Conversation(native_tools=bool(tools))
    systems = [
        text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    ]
    convo.system = "\n".join(systems)
    by_id: dict[str, MadeCall] = {}
    awaiting: MadeCall | None = None  # a ReAct action waiting for its observation
    for message in messages:
        role, text = message.get("role"), text_of(message.get("content"))
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                made = MadeCall(function.get("name", ""), _arguments(function.get("arguments")))
                convo.calls.append(made)
                by_id[call.get("id", "")] = made
            if convo.react and text:
                step = parse_react(text)
                if isinstance(step, ReactAction):
                    awaiting = MadeCall(step.tool, step.arguments)
                    convo.calls.append(awaiting)
        elif role == "tool":
            made = by_id.get(message.get("tool_call_id", ""))
            if made is not None:
                made.ok, made.result = not is_error(text), parse_result(text)
        elif role == "user":
            convo.user_texts.append(text)
            if awaiting is not None and text.lstrip().lower().startswith("observation"):
                observed = text.split(":", 1)[1] if ":" in text else ""
                awaiting.ok, awaiting.result = not is_error(observed), parse_result(observed)
                awaiting = None
    if messages and messages[-1].get("role") == "user":
        convo.last_user = text_of(messages[-1].get("content"))
    return convo


def is_error(result_text: str) -> bool:
    """A tool result is an error when it is the gateway's ``{"error": {...}}`` shape, or not
    a JSON object at all (the agent could not even make the call)."""
    try:
        value = loads_loose(result_text)
    except LooseJSONError:
        return True
    return not isinstance(value, dict) or isinstance(value.get("error"), dict)


def parse_result(result_text: str) -> Any:
    """A tool result's value, read as leniently as :func:`is_error` reads it; text that is
    not JSON is kept as it is (an agent may show a refusal as prose)."""
    try:
        return loads_loose(result_text)
    except LooseJSONError:
        return result_text


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw

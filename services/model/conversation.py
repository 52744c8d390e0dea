"""Reading a Chat Completions request back: which case it is about, which tool calls the model
already made and how each one went, and what kind of reply is being asked for.

Tool calls are read from native ``tool_calls`` with their ``tool`` results, or, for ReAct
transcripts, from ``Action`` / ``Action Input`` text followed by an ``Observation``; both end
up as the same list of :class:`MadeCall`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from sopgym.core.answers import PLAN_TAG, REACT_MARKER, ReactAction, parse_react
from sopgym.core.jsontext import LooseJSONError, balanced_spans, loads_loose
from sopgym.types import JSON

# Reading model-style JSON leniently (jsontext.loads_loose: Python-style literals go through
# ast.literal_eval) costs about 2 s and 500 MB per MB of text, and every text here is the
# client's: one request could stall the server for minutes and exhaust its memory. So strict
# JSON is read at any size, and lenient reading gets this many characters per request: far
# more than a real conversation needs (tool results arrive as strict JSON; ReAct steps, prose
# errors and the braces in an SOP are short).
LENIENT_CHARS = 256 * 1024
# Likewise the ``{...}`` spans looked at per request when searching texts for JSON objects
# (a case message holds one or a few): each is a parse attempt, and a body of ``{a}{a}...``
# holds millions of them.
MAX_SPANS = 10_000


class Reader:
    """One request's JSON reading: strict at any size, lenient within its budget."""

    def __init__(self, budget: int = LENIENT_CHARS, spans: int = MAX_SPANS) -> None:
        self.left, self.spans_left = budget, spans
        self.refused = 0  # texts not read (leniently, or at all) for want of budget

    def lenient(self, text: str) -> bool:
        """Whether ``text`` may be read leniently; if so, it is charged to the budget."""
        if len(text) > self.left:
            self.refused += 1
            return False
        self.left -= len(text)
        return True

    def loads(self, text: str) -> Any:
        """``text`` as JSON (:func:`loads_loose` within the budget), else LooseJSONError."""
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            if not self.lenient(text):
                raise LooseJSONError("not valid JSON") from None
        return loads_loose(text)

    def objects(self, text: str) -> Iterator[JSON]:
        """Every readable top-level object in ``text`` (jsontext.iter_objects, budgeted)."""
        for start, end in balanced_spans(text):
            if not self.spans_left:
                self.refused += 1
                return
            self.spans_left -= 1
            try:
                value = self.loads(text[start:end])
            except LooseJSONError:
                continue
            if isinstance(value, dict):
                yield value


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
    reader: Reader = field(default_factory=Reader)  # the request's JSON reading budget

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
            if convo.react and text and convo.reader.lenient(text):
                step = parse_react(text)
                if isinstance(step, ReactAction):
                    awaiting = MadeCall(step.tool, step.arguments)
                    convo.calls.append(awaiting)
        elif role == "tool":
            answered = by_id.get(message.get("tool_call_id", ""))
            if answered is not None:
                answered.ok, answered.result = read_result(text, convo.reader)
        elif role == "user":
            convo.user_texts.append(text)
            if awaiting is not None and text.lstrip().lower().startswith("observation"):
                observed = text.split(":", 1)[1] if ":" in text else ""
                awaiting.ok, awaiting.result = read_result(observed, convo.reader)
                awaiting = None
    if messages and messages[-1].get("role") == "user":
        convo.last_user = text_of(messages[-1].get("content"))
    return convo


def read_result(result_text: str, reader: Reader) -> tuple[bool, Any]:
    """Whether a tool result went through, and its value (read once, leniently).

    A result is an error when it is the gateway's ``{"error": {...}}`` shape, or not a JSON
    object at all (the agent could not even make the call); text that is not JSON is kept as
    it is (an agent may show a refusal as prose).
    """
    try:
        value = reader.loads(result_text)
    except LooseJSONError:
        return False, result_text
    return isinstance(value, dict) and not isinstance(value.get("error"), dict), value


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw

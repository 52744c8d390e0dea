"""Tool calls that a model wrote as text instead of returning them as OpenAI ``tool_calls``.

Small open models served without a tool-call parser (or whose chat template the server does
not parse) write their calls into the reply's text. The ``fc`` agent reads these as calls
(``text_tool_calls``, on by default), never as the final answer. A text call counts only when
it names a tool that was offered, so a JSON answer that happens to have a ``name`` field is
not mistaken for one. The forms read, and the model families that write them:

=====================================================  ==========================================
form                                                   written by
=====================================================  ==========================================
```` ```json {"name": T, "arguments": {...}} ``` ````  Qwen2.5-Coder on llama.cpp (issue 37), many
                                                       instruction-tuned models without a template
``<tool_call>{"name": T, "arguments": {...}}</tool_call>``  Hermes 2/3, Qwen2/2.5/3 (Hermes format)
``[TOOL_CALLS] [{"name": T, "arguments": {...}}]``      Mistral 7B v0.3, Mixtral, Mistral Nemo/Small
``<|python_tag|>{"name": T, "parameters": {...}}``      Llama 3.1 / 3.2 (JSON tool calling)
``{"name": T, "parameters": {...}}`` (bare)             Llama 3.2 1B/3B, Gemma as prompted
``<function=T>{...}</function>``                         Llama 3.1 custom tool format, Functionary
``functools[{"name": T, "arguments": {...}}]``          Phi-4-mini
``{"type": "function", "function": {...}}``            models imitating the OpenAI wire format
=====================================================  ==========================================

Arguments given as a JSON string (as the OpenAI wire format has them) are read too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sopgym.core.answers import FINAL_TAG
from sopgym.core.jsontext import LooseJSONError, balanced_spans, loads_loose

_FUNCTION_TAG = re.compile(r"<function=([\w.-]+)>\s*(\{.*?\})\s*</function>", re.DOTALL)
_FINAL = re.compile(rf"<{FINAL_TAG}>.*?(?:</{FINAL_TAG}>|$)", re.DOTALL | re.IGNORECASE)
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


@dataclass(frozen=True)
class TextCall:
    name: str
    arguments: Any  # an object, or the raw text of arguments that were not valid JSON


def read_text_calls(text: str, offered: list[str] | set[str]) -> list[TextCall]:
    """The tool calls written in ``text`` that name a tool of ``offered``, in order."""
    if not text or not offered:
        return []
    names = set(offered)
    text = _FINAL.sub("", text)  # what is inside the answer's tags is the answer
    found: list[tuple[int, TextCall]] = []
    for match in _FUNCTION_TAG.finditer(text):
        if match.group(1) in names:
            found.append((match.start(), TextCall(match.group(1), _arguments(match.group(2)))))
    tagged = {m.start(2) for m in _FUNCTION_TAG.finditer(text)}
    for start, end in balanced_spans(text):
        if start in tagged:
            continue
        try:
            value = loads_loose(text[start:end])
        except LooseJSONError:
            continue
        call = _call_of(value)
        if call is not None and call.name in names:
            found.append((start, call))
    return [call for _, call in sorted(found, key=lambda item: item[0])]


def _call_of(value: Any) -> TextCall | None:
    """The call an object spells, if it is shaped as one: ``{"name", "arguments"}`` (or
    ``parameters``), possibly wrapped as ``{"function": {...}}``."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict) and set(value) <= {"type", "id", "function"}:
        value = value["function"]
    name = value.get("name")
    keys = [k for k in _ARGUMENT_KEYS if k in value]
    if not isinstance(name, str) or len(keys) != 1 or set(value) - {"name", keys[0], "id"}:
        return None
    return TextCall(name, _arguments(value[keys[0]]))


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            parsed = loads_loose(raw)
        except LooseJSONError:
            return raw
        return parsed if isinstance(parsed, dict) else raw
    return raw

"""The reply protocol agents and the scripted model share: the tags, and the readers of a final
answer and of ReAct's Thought/Action/Action Input.

The final answer may arrive in the tag we asked for, after a ``Final Answer:`` marker, in a
code fence or as a bare object between sentences; all three agents (and the scripted model
server, when it reads a ReAct transcript back) use these readers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sopgym.core.jsontext import (
    LooseJSONError,
    iter_objects,
    loads_loose,
    parse_object,
    strip_fences,
)
from sopgym.types import JSON

# The reply protocol that agents' prompts ask for and the scripted model follows.
FINAL_TAG = "final_answer"
PLAN_TAG = "plan"
REACT_MARKER = "Action Input:"  # present in the ReAct system prompt, and nowhere else
# The built-in action of dialogue episodes: its call goes to the simulated user (the gateway's
# messages endpoint), never to a tool, so it is neither recorded nor scored as a tool call.
MESSAGE_ACTION = "send_message_to_user"

_TAGGED = re.compile(rf"<{FINAL_TAG}>(.*?)(?:</{FINAL_TAG}>|$)", re.DOTALL | re.IGNORECASE)
_FINAL_MARK = re.compile(r"final\s*answer\s*:", re.IGNORECASE)
_ACTION = re.compile(r"^[ \t*]*action[ \t*]*:[ \t*]*(.*)$", re.IGNORECASE | re.MULTILINE)
_ACTION_INPUT = re.compile(r"^[ \t*]*action[ \t]*input[ \t*]*:", re.IGNORECASE | re.MULTILINE)
_OBSERVATION = re.compile(r"^[ \t*]*observation[ \t*]*:", re.IGNORECASE | re.MULTILINE)


def extract_final_answer(text: str, fields: list[str] | None = None) -> JSON | None:
    """The answer object in ``text``, or ``None``.

    Preference: the final-answer tag, then text after ``Final Answer:``, then any object in
    the reply (the last one that names an expected field, else the last one). An object that
    only wraps the answer (``{"final_answer": {...}}``) is unwrapped.
    """
    found = declared_final_answer(text, fields)
    if found is not None or not text:
        return found
    whole = _best_object(text, fields or [])
    return None if whole is None else _unwrap(whole, fields or [])


def declared_final_answer(text: str, fields: list[str] | None = None) -> JSON | None:
    """The answer object in its declared form only: inside the final-answer tag, or after
    ``Final Answer:``. Unlike :func:`extract_final_answer`, a JSON object elsewhere in the
    reply (a guessed result, a tool's arguments in a code fence) is no answer."""
    if not text:
        return None
    sections = [m.group(1) for m in _TAGGED.finditer(text)]
    marks = list(_FINAL_MARK.finditer(text))
    if marks:
        sections.append(text[marks[-1].end() :])
    for section in sections:
        found = _best_object(section, fields or [])
        if found is not None:
            return _unwrap(found, fields or [])
    return None


# a whole reply wrapped in one tag of whatever spelling a model chose: <answer>, <final-answer>,
# <FinalAnswer>, <final answer>, <output>, <result>, <json> ... (the closing tag may be missing)
_WRAPPING_TAG = re.compile(r"^<\s*([A-Za-z][\w\- ]{0,40}?)\s*>(.*?)(?:<\s*/\s*\1\s*>)?$", re.DOTALL)
# a whole reply that is one code fence, with or without a language name
_WHOLE_FENCE = re.compile(r"^```[\w+-]*[ \t]*\n?(.*?)\n?[ \t]*```$", re.DOTALL)


def untagged_final_answer(text: str, fields: list[str]) -> JSON | None:
    """The answer of a reply whose only content is a JSON object with exactly the answer's
    ``fields``, bare, in a code fence or in a tag of another spelling than ours (``<answer>``,
    ``<final-answer>`` ...); ``None`` for anything else. Small models write their answer so
    (Qwen2.5-Coder-1.5B, issue 48: a fenced object, no tags): the object is the answer, only
    its form is off. An object with other keys, or beside prose, stays no answer, so a tool's
    arguments or a guessed result is never taken for one."""
    if not fields:
        return None
    body = text.strip()
    for _ in range(3):  # a fence inside a tag, or a tag inside a fence
        unwrapped = _WHOLE_FENCE.match(body) or _WRAPPING_TAG.match(body)
        if unwrapped is None:
            break
        body = unwrapped.groups()[-1].strip()
    if not body.startswith("{"):
        return None
    try:
        value = loads_loose(body)
    except LooseJSONError:
        return None
    if not isinstance(value, dict):
        return None
    value = _unwrap(value, fields)  # {"final_answer": {...}}
    return value if set(value) == set(fields) else None


def _best_object(text: str, fields: list[str]) -> JSON | None:
    try:
        candidates = [parse_object(text)]
    except LooseJSONError:
        candidates = []
    candidates += list(iter_objects(text))
    if not candidates:
        return None
    wanted = set(fields)
    named = [c for c in candidates if wanted & set(c) or _unwrap(c, fields) is not c]
    return (named or candidates)[-1] if wanted else candidates[-1]


def _unwrap(obj: JSON, fields: list[str]) -> JSON:
    if len(obj) == 1:
        inner = next(iter(obj.values()))
        if isinstance(inner, dict) and (not fields or set(fields) & set(inner)):
            return inner
    return obj


# ---- ReAct ----
@dataclass
class ReactAction:
    thought: str
    tool: str
    arguments: JSON


@dataclass
class ReactFinal:
    thought: str
    answer: JSON | None  # None: a final answer was announced but holds no readable object
    text: str


@dataclass
class ReactParseError:
    message: str  # shown to the model as its observation


ReactStep = ReactAction | ReactFinal | ReactParseError


def without_invented_observation(text: str) -> str:
    """The turn up to any ``Observation:`` the model wrote itself (it invented it)."""
    cut = _OBSERVATION.search(text)
    return text[: cut.start()].rstrip() if cut else text


def parse_react(text: str, fields: list[str] | None = None) -> ReactStep:
    """One ReAct turn, ignoring an invented observation; the earlier of an action and a
    final answer wins."""
    text = without_invented_observation(text)
    action = _ACTION.search(text)
    final = _FINAL_MARK.search(text) or re.search(f"<{FINAL_TAG}>", text, re.IGNORECASE)
    thought = _thought(text)
    if final and (action is None or final.start() < action.start()):
        return ReactFinal(thought, extract_final_answer(text[final.start() :], fields), text)
    if action is None:
        return ReactParseError(
            "Your reply had neither an 'Action:' line nor a 'Final Answer:'. Reply with "
            "Thought / Action / Action Input, or with the Final Answer."
        )
    tool = action.group(1).strip().strip("`'\"*").strip()
    tool = re.split(r"[\s(\[]", tool, maxsplit=1)[0].rstrip(".,;:") if tool else ""
    if not tool:
        return ReactParseError("The 'Action:' line must name one tool.")
    marker = _ACTION_INPUT.search(text, action.end())
    if marker is None:
        return ReactParseError(
            f"Missing 'Action Input:' for {tool}: give the arguments as one JSON object."
        )
    raw = strip_fences(text[marker.end() :])
    if not raw:
        return ReactAction(thought, tool, {})
    try:
        arguments = parse_object(raw)
    except LooseJSONError as error:
        return ReactParseError(
            f"Could not read the Action Input for {tool} ({error}). Give the arguments as one "
            "JSON object with double-quoted keys."
        )
    return ReactAction(thought, tool, arguments)


def _thought(text: str) -> str:
    match = re.search(r"thought\s*:\s*(.*?)(?:\n\s*(?:action|final)|$)", text, re.I | re.S)
    return match.group(1).strip() if match else ""


def message_action_spec() -> JSON:
    """The built-in action of dialogue episodes, offered like a tool (by the agents and the
    gateway's MCP door alike)."""
    return {
        "name": MESSAGE_ACTION,
        "description": (
            "Send a message to the user you are serving and wait for the reply. Use it to ask "
            "for information only the user has and to tell the user the outcome. The result "
            'is {"reply": <what the user said>, "done": <true once the user ended the '
            "conversation>}."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"content": {"type": "string", "description": "your message"}},
            "required": ["content"],
            "additionalProperties": False,
        },
    }

"""Every word the agents say to a model, built only from what the episode carries.

The three agents share the same framing (role, SOP, case input, answer contract); they differ
only in how tools are offered (native function calling vs. a ReAct text catalog) and in the
plan agent's planning turns. The reply protocol (tag names, the ReAct marker) lives in
:mod:`sopgym.core.answers`, which reads answers and plans back; the scripted model server
recognises the same cues, the way a real model follows the instructions it is given.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from sopgym.core.answers import FINAL_TAG, MESSAGE_ACTION, PLAN_TAG, REACT_MARKER
from sopgym.core.jsontext import iter_objects
from sopgym.types import JSON

try:  # the regular expression parser, for patterns' example values
    import re._parser as _re_parser  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.11 keeps it as sre_parse
    import sre_parse as _re_parser

_ROLE = (
    "You are an operations agent who carries out a Standard Operating Procedure (SOP) for one "
    "case at a time. You act only through the tools you are given. Work through the SOP in "
    "order, do every step it requires for this case and nothing it does not, and take each "
    "value you pass to a tool from the case input or from an earlier tool result - never make "
    "one up. If a tool answers with an error, read the error, fix the call and try again."
)


def pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


# how a string format reads to a model, and a value of it for the example answer
_FORMATS = {
    "date": ("a date (YYYY-MM-DD)", "2026-01-31"),
    "date-time": ("a date and time (ISO 8601)", "2026-01-31T09:30:00Z"),
    "time": ("a time (HH:MM:SS)", "09:30:00"),
    "email": ("an e-mail address", "name@example.com"),
    "uri": ("a URI", "https://example.com/"),
    "uuid": ("a UUID", "00000000-0000-4000-8000-000000000000"),
}


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def value_shape(schema: Any) -> str:
    """One schema as the scorer will check it, in a line: enums and constants as the JSON
    values they must be (``"1" | "9.2"``, never ``1 | 9.2``), types, formats, bounds and
    patterns, array items and nested fields."""
    if not isinstance(schema, dict):
        return "value"
    if "const" in schema:
        return _json(schema["const"])
    if "enum" in schema:
        return " | ".join(_json(v) for v in schema["enum"])
    for combinator in ("anyOf", "oneOf"):
        if isinstance(schema.get(combinator), list):
            return " | ".join(value_shape(s) for s in schema[combinator])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(value_shape({**schema, "type": k}) for k in kind)
    if kind == "array":
        items = value_shape(schema.get("items"))
        bounds = _bounds(schema, "minItems", "maxItems", "items")
        return f"array of ({items}){bounds}"
    if kind == "object" and isinstance(schema.get("properties"), dict):
        fields = ", ".join(f"{k}: {value_shape(v)}" for k, v in schema["properties"].items())
        return "{" + fields + "}"
    text = kind if isinstance(kind, str) else "value"
    if kind in ("integer", "number"):
        text += _bounds(schema, "minimum", "maximum", "")
    if kind == "string":
        if schema.get("format") in _FORMATS:
            text += f", {_FORMATS[schema['format']][0]}"
        if "pattern" in schema:
            text += f" matching {schema['pattern']}"
        text += _bounds(schema, "minLength", "maxLength", "characters")
    return text


def _bounds(schema: JSON, low: str, high: str, unit: str) -> str:
    unit = f" {unit}" if unit else ""
    if low in schema and high in schema:
        return f" from {schema[low]} to {schema[high]}{unit}"
    if low in schema:
        return f" of at least {schema[low]}{unit}"
    if high in schema:
        return f" of at most {schema[high]}{unit}"
    return ""


def example_value(schema: Any) -> Any:
    """A value valid against ``schema`` where the schema says enough (the first enum value,
    the constant, a value of the format, the lower bound), to show the answer's form."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf"):
        if schema.get(combinator):
            return example_value(schema[combinator][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: example_value(sub) for name, sub in properties.items()}
    if kind == "array":
        count = max(1, int(schema.get("minItems") or 0))
        return [example_value(schema.get("items")) for _ in range(count)][
            : schema.get("maxItems", count)
        ]
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return schema.get("minimum", 0.0)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "string":
        if schema.get("format") in _FORMATS:
            return _FORMATS[schema["format"]][1]
        if "pattern" in schema:
            return matching_string(str(schema["pattern"]))
        return "x" * max(1, int(schema.get("minLength") or 1))
    return None


def matching_string(pattern: str) -> str | None:
    """A short string the regular expression ``pattern`` matches (None when the pattern uses
    what this simple walk of its parse does not cover): a pattern's example value."""
    try:
        tokens = _re_parser.parse(pattern)
        text = _sample(tokens)
    except (re.error, ValueError, TypeError, IndexError, RecursionError):
        return None
    return text if text is not None and re.search(pattern, text) else None


_CATEGORY_SAMPLES = {"CATEGORY_DIGIT": "0", "CATEGORY_WORD": "a", "CATEGORY_SPACE": " "}


def _sample(tokens: Any) -> str | None:
    out = []
    for op, arg in tokens:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            first_op, first = arg[0]
            if str(first_op) == "NEGATE":
                return None
            if str(first_op) == "RANGE":
                out.append(chr(first[0]))
            elif str(first_op) == "LITERAL":
                out.append(chr(first))
            elif str(first_op) == "CATEGORY" and str(first) in _CATEGORY_SAMPLES:
                out.append(_CATEGORY_SAMPLES[str(first)])
            else:
                return None
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _, sub = arg
            part = _sample(sub)
            if part is None:
                return None
            out.append(part * max(low, 0))
        elif name == "SUBPATTERN":
            part = _sample(arg[-1])
            if part is None:
                return None
            out.append(part)
        elif name == "BRANCH":
            part = _sample(arg[1][0])
            if part is None:
                return None
            out.append(part)
        elif name == "AT":
            continue
        elif name == "CATEGORY" and str(arg) in _CATEGORY_SAMPLES:
            out.append(_CATEGORY_SAMPLES[str(arg)])
        else:
            return None
    return "".join(out)


def example_answer(output_schema: JSON) -> JSON | None:
    """One answer object in the schema's form (its values only show the form)."""
    value = example_value({**output_schema, "type": "object"})
    return value if isinstance(value, dict) else None


def answer_contract(output_schema: JSON) -> str:
    """How the final answer must look: one object with the domain's output fields, each
    shown as the scorer will check it, and one example of the form."""
    properties = output_schema.get("properties", {})
    lines = []
    for name, schema in properties.items():
        description = schema.get("description") if isinstance(schema, dict) else None
        note = f" - {description}" if description else ""
        lines.append(f"  {name}: {value_shape(schema)}{note}")
    example = example_answer(output_schema)
    shown = (
        f"\nThe form, for example (these values only show the form): "
        f"<{FINAL_TAG}>{_json(example)}</{FINAL_TAG}>"
        if example
        else ""
    )
    return (
        "When the procedure is complete, give the case summary as a single JSON object inside "
        f"<{FINAL_TAG}></{FINAL_TAG}> tags, with exactly these fields (a value in quotes is a "
        "JSON string and must be written in quotes):\n" + "\n".join(lines) + shown
    )


def system_prompt(
    output_schema: JSON,
    tools_text: str | None = None,
    tools: list[JSON] | None = None,
    *,
    opens_with_call: bool = True,
) -> str:
    """The system message. ``tools_text`` is given for ReAct, whose model has no native tools
    (``tools``: the catalog it describes, whose first tool the example round uses); a
    native-tools agent gives ``tools`` alone, whose first tool its example call uses. Either
    way the example of a step comes before the answer's form (``opens_with_call``: the model's
    first reply is to be a call; False for the plan agent, whose first reply is its plan). It
    holds nothing of the task, so every task of a domain shares it as its prompt's prefix."""
    parts = [_ROLE]
    if tools_text is not None:
        parts += [f"Tools you can use:\n{tools_text}", _react_format(tools or [])]
    else:
        parts.append(_calling_format(tools or [], opens_with_call))
    parts.append(answer_contract(output_schema))
    return "\n\n".join(parts)


def _example_arguments(tool: JSON) -> JSON:
    """A call's arguments as an example shows them: the tool's required argument names (its
    first one when none is required), each with a placeholder saying where its value comes
    from, never a value a model could copy as if it were the case's."""
    schema: JSON = tool.get("input_schema") or {}
    names = list(schema.get("properties") or {})
    required = [n for n in schema.get("required") or names if n in names] or names[:1]
    return {n: f"<{n} from the case or an earlier result>" for n in required}


def _calling_format(tools: list[JSON], opens_with_call: bool) -> str:
    """How a native-tools agent's model works, as an example call with the catalog's first
    tool in the Hermes ``<tool_call>`` form that Qwen and Hermes chat templates use (the form
    a server with ``--jinja`` parses into ``tool_calls``; the agents read it as text too), and
    that the answer comes after the tool steps. A prompt that only showed the answer's example
    had Qwen2.5-Coder-1.5B answer first, guessing, on every task (issue 48)."""
    first = "Your first reply is a tool call, never" if opens_with_call else "Call tools before"
    intro = (
        "Call tools through the function-calling interface, one step at a time, and wait for "
        f"each result before deciding the next step. {first} the final answer: the answer's "
        "values come from the tools' results."
    )
    if not tools:
        return intro
    call = {"name": tools[0]["name"], "arguments": _example_arguments(tools[0])}
    return (
        f"{intro} A call, for example (the values are placeholders: take the real ones from "
        f"the case input or an earlier result):\n<tool_call>\n{_json(call)}\n</tool_call>\n"
        "Make one call per SOP step, read its result, then make the next. Only when no step "
        "is left, give the final answer."
    )


def tool_free_prompt(output_schema: JSON) -> str:
    """The system message of a task with no tools (answer-only, one-shot): the SOP and the
    case are all there is, and the reply is the answer."""
    return (
        "You carry out a Standard Operating Procedure (SOP) for one case. This task has no "
        "tools: everything you need is in the SOP and the case input. Apply the SOP to the "
        "case and answer at once.\n\n" + answer_contract(output_schema)
    )


def _react_format(tools: list[JSON]) -> str:
    """The round format, shown as a concrete example round with the catalog's first tool and
    its argument names (small models copy a format block word for word: placeholder text
    there became "Action: the"), and where generation should stop."""
    tool: JSON = tools[0] if tools else {"name": "tool_name", "input_schema": {}}
    arguments = _example_arguments(tool)
    return (
        "Work in rounds. A round is a Thought line, an Action line with the exact name of one "
        f"tool from the list above, and an {REACT_MARKER} line with the tool's arguments as "
        "one JSON object on one line. For example (the values are placeholders: take the "
        "real ones from the case input or an earlier result):\n"
        f"Thought: The SOP's next step needs {tool['name']}.\n"
        f"Action: {tool['name']}\n"
        f"{REACT_MARKER} {_json(arguments)}\n"
        "Observation: <the tool's result, sent back to you>\n"
        "End your reply right after the Action Input's JSON object: the Observation is "
        "written for you, never by you. Then the next round follows.\n"
        "When no SOP step is left, reply with a Thought line, then a line starting "
        f"'Final Answer:' followed by the answer inside <{FINAL_TAG}></{FINAL_TAG}> tags, in "
        "the form described below."
    )


def tools_catalog_text(tools: list[JSON]) -> str:
    """The ReAct model's view of the catalog: name, purpose and argument schema per tool."""
    blocks = []
    for spec in tools:
        schema = orjson.dumps(spec.get("input_schema", {})).decode()
        blocks.append(f"- {spec['name']}: {spec.get('description', '')}\n  arguments: {schema}")
    return "\n".join(blocks)


def case_message(sop: str, inputs: JSON, conversation: list[JSON] | None = None) -> str:
    """The user turn that opens every episode: the SOP, then the case (and, in a dialogue,
    what the user has said so far)."""
    said = ""
    if conversation:
        turns = "\n".join(f"{t['role']}: {t['content']}" for t in conversation)
        said = f"<conversation>\n{turns}\n</conversation>\n\n"
    return (
        f"<sop>\n{sop.strip()}\n</sop>\n\n"
        f"<case_input>\n{pretty(inputs)}\n</case_input>\n\n"
        f"{said}Handle this case according to the SOP."
    )


DIALOGUE_GUIDE = (
    f"You are in a conversation with a user. Talk to them only through {MESSAGE_ACTION}: ask "
    "them for what the SOP needs that only they know, and tell them the outcome before you "
    "give the final answer. Never invent what the user would say."
)


def plan_request(failure: str | None = None, previous: list[JSON] | None = None) -> str:
    """Ask for a plan (or, after ``failure``, a revised plan for the remaining steps)."""
    shape = '{"step": 1, "tool": "<tool name, or null>", "goal": "<what the step decides>"}'
    head = (
        "Before calling any tool, plan the work: list the SOP steps this case needs, in order."
        if failure is None
        else (
            "A step of your plan failed:\n"
            f"{failure}\n"
            f"Your plan was:\n{render_plan(previous or [], set())}\n"
            "Revise the plan: list only the steps that remain, starting with the one that failed."
        )
    )
    return (
        f"{head}\nReply with the plan as a JSON array inside <{PLAN_TAG}></{PLAN_TAG}> tags, one "
        f"item per step, each shaped like {shape}. Do not call tools in this reply."
    )


def render_plan(plan: list[JSON], done: set[int]) -> str:
    if not plan:
        return "(no plan: follow the SOP directly)"
    lines = []
    for index, step in enumerate(plan):
        mark = "done" if index in done else "todo"
        tool = step.get("tool") or "no tool"
        lines.append(f"{index + 1}. [{mark}] {tool}: {step.get('goal', '')}".rstrip(": "))
    return "\n".join(lines)


def execute_request(plan: list[JSON], done: set[int]) -> str:
    """The plan agent's executor turn: do the next open step, or answer when none is left."""
    return (
        f"Your plan:\n{render_plan(plan, done)}\n"
        "Carry out the next open step now by calling its tool. Steps the case turns out not to "
        "need are skipped. If every step is done, give the final answer instead."
    )


def final_request(output_schema: JSON) -> str:
    return "Give the final answer now. Only an answer inside the tags counts.\n" + answer_contract(
        output_schema
    )


CUT_NOTE = (
    "Your reply was cut off at the length limit (max tokens) before it was complete."
)


def cut_request(output_schema: JSON) -> str:
    """After a reply cut at the length limit: the same request, asking for a short reply."""
    return (
        f"{CUT_NOTE} Reply again, shorter: no explanation, only the answer inside "
        f"<{FINAL_TAG}></{FINAL_TAG}> tags.\n" + answer_contract(output_schema)
    )


def use_tools_request(output_schema: JSON) -> str:
    """After an answer given before any tool call: the SOP's steps are tool calls."""
    return (
        "You answered without calling any tool, so the answer rests on guesses. The SOP's "
        "steps are carried out through the tools: call the tool of the first step now, and "
        f"give the answer in <{FINAL_TAG}></{FINAL_TAG}> tags only when the steps are done."
    )


def repeats_example(answer: Any, output_schema: JSON) -> bool:
    """Whether ``answer`` is the prompt's example answer (:func:`example_answer`) value for
    value, in a form of two fields or more: a small model copies the example, whose values
    only show the form (seen with a 1.5B model), and where a task's gold happens to hold the
    same values (the first enum values are often the plain case) the copy would score as the
    agent's success. One field is left alone: its example is just the first allowed value."""
    example = example_answer(output_schema)
    return example is not None and len(example) >= 2 and answer == example


def example_copied_request() -> str:
    """After a final answer equal to the example answer, once: decide the values."""
    return (
        "Every value of that answer is the example's from the instructions, which only shows "
        "the form. Decide each field from this case's input and the tool results, then give "
        f"the final answer again in <{FINAL_TAG}></{FINAL_TAG}> tags (the same values stand "
        "if this case's results really give them)."
    )


def still_no_tool_request() -> str:
    """A reply with neither a call nor an answer, after being told to use the tools: asking
    for the final answer now would contradict that."""
    return (
        "You have not called any tool yet. Call the tool of the SOP's first step now, with "
        "arguments taken from the case input."
    )


_CALL_KEYS = ("name", "tool", "function", "action", "tool_name")


def unusable_reply_note(text: str, fields: list[str], offered: list[str]) -> str:
    """What a reply that was neither a tool call nor a final answer lacks, in a sentence: the
    answer's tags (an object with exactly the answer's fields, beside other text), a field of
    the answer (or keys that are none of its fields), a call's form (an object that names a
    tool but is not written as a call, or names no offered tool), or both (prose only)."""
    wanted = set(fields)
    for obj in reversed(list(iter_objects(text))):
        named = next((obj[k] for k in _CALL_KEYS if isinstance(obj.get(k), str)), None)
        if named is not None and named not in wanted and not wanted & set(obj):
            if named not in offered:
                return f"Your reply was no tool call: {not_a_tool_note(named, offered)}"
            return (
                f"Your reply named the tool {named} but was not written as a call: call it "
                'through the function-calling interface, or write {"name": "'
                f'{named}", "arguments": {{...}}}} inside <tool_call></tool_call> tags.'
            )
        if wanted & set(obj):
            missing = [f for f in fields if f not in obj]
            extra = [k for k in obj if k not in wanted]
            if missing or extra:
                lacks = f" It lacks the field(s): {', '.join(missing)}." if missing else ""
                others = f" Not fields of the answer: {', '.join(extra)}." if extra else ""
                shape = "Your reply held an answer object that is not the answer's form."
                return f"{shape}{lacks}{others}"
            return (
                "Your reply held the answer's object, but not inside "
                f"<{FINAL_TAG}></{FINAL_TAG}> tags with nothing else around it: only an answer "
                "in the tags counts."
            )
    return NEITHER_NOTE


NEITHER_NOTE = (
    "Your reply was neither a tool call nor a final answer: make a tool call, or give the "
    f"final answer inside <{FINAL_TAG}></{FINAL_TAG}> tags."
)


# what the model repeated -> (how the warning says it, what to do instead)
_REPEATS = {
    "failing": (
        "made the same failing call to {tool} {times} times in a row, and it was refused the "
        "same way each time",
        "Read the error, then change the arguments it names, call a different tool, or give "
        "the final answer if the procedure is done.",
    ),
    "success": (
        "made the same call to {tool} {times} times in a row, and it returned the same result "
        "each time",
        "Calling it again will not change the result: use it and go on with the next SOP "
        "step, or give the final answer if the procedure is done.",
    ),
    "reply": (
        "written the same reply {times} times in a row, and it was neither a tool call nor an "
        "answer in the required form",
        "Write something else: a tool call, or the final answer in its tags.",
    ),
}


def repeat_warning(kind: str, times: int, tool: str = "", why: str = "") -> str:
    """After the model repeated itself (``kind``: failing, success or reply): what it did,
    why it did not count (``why``, for a reply: :func:`unusable_reply_note`), and what to do
    instead, worded for that case."""
    did, instead = _REPEATS[kind]
    why = f" {why}" if why else ""
    return f"Warning: you have {did.format(tool=tool, times=times)}.{why} {instead}"


def not_a_tool_note(name: str, names: list[str]) -> str:
    """An action naming no offered tool: the names it may use."""
    return f"'{name}' is not one of your tools. The tools are: {', '.join(names)}."


def observation(content: Any) -> str:
    """A tool result (or error) as the ReAct model sees it."""
    text = content if isinstance(content, str) else orjson.dumps(content).decode()
    return f"Observation: {text}"

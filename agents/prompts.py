"""Every word the agents say to a model, built only from what the episode carries.

The three agents share the same framing (role, SOP, case input, answer contract); they differ
only in how tools are offered (native function calling vs. a ReAct text catalog) and in the
plan agent's planning turns. The reply protocol (tag names, the ReAct marker) lives in
:mod:`sopgym.core.answers`, which reads answers and plans back; the scripted model server
recognises the same cues, the way a real model follows the instructions it is given.
"""

from __future__ import annotations

from typing import Any

import orjson

from sopgym.core.answers import FINAL_TAG, MESSAGE_ACTION, PLAN_TAG, REACT_MARKER
from sopgym.types import JSON

_ROLE = (
    "You are an operations agent who carries out a Standard Operating Procedure (SOP) for one "
    "case at a time. You act only through the tools you are given. Work through the SOP in "
    "order, do every step it requires for this case and nothing it does not, and take each "
    "value you pass to a tool from the case input or from an earlier tool result - never make "
    "one up. If a tool answers with an error, read the error, fix the call and try again."
)


def pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def answer_contract(output_schema: JSON) -> str:
    """How the final answer must look: one object with the domain's output fields."""
    properties = output_schema.get("properties", {})
    lines = []
    for name, schema in properties.items():
        allowed = schema.get("enum")
        kind = " | ".join(map(str, allowed)) if allowed else schema.get("type", "value")
        note = f" - {schema['description']}" if schema.get("description") else ""
        lines.append(f"  {name}: {kind}{note}")
    return (
        "When the procedure is complete, give the case summary as a single JSON object inside "
        f"<{FINAL_TAG}></{FINAL_TAG}> tags, with exactly these fields:\n" + "\n".join(lines)
    )


def system_prompt(output_schema: JSON, tools_text: str | None = None) -> str:
    """The system message. ``tools_text`` is given for ReAct, whose model has no native tools."""
    parts = [_ROLE]
    if tools_text is not None:
        parts += [f"Tools you can use:\n{tools_text}", _react_format(output_schema)]
    else:
        parts.append(
            "Call tools through the function-calling interface, one step at a time, and wait "
            "for each result before deciding the next step."
        )
    parts.append(answer_contract(output_schema))
    return "\n\n".join(parts)


def tool_free_prompt(output_schema: JSON) -> str:
    """The system message of a task with no tools (answer-only, one-shot): the SOP and the
    case are all there is, and the reply is the answer."""
    return (
        "You carry out a Standard Operating Procedure (SOP) for one case. This task has no "
        "tools: everything you need is in the SOP and the case input. Apply the SOP to the "
        "case and answer at once.\n\n" + answer_contract(output_schema)
    )


def _react_format(output_schema: JSON) -> str:
    example = {k: "..." for k in output_schema.get("properties", {})}
    return (
        "Answer in rounds. Each round is exactly:\n"
        "Thought: which SOP step comes next and why\n"
        "Action: the name of one tool from the list above\n"
        f"{REACT_MARKER} the tool's arguments as one JSON object\n"
        "Then stop writing. The tool's result will be sent back to you as "
        "'Observation: ...', and you continue with the next round.\n"
        "When no SOP step is left, end with:\n"
        "Thought: the procedure is complete\n"
        f"Final Answer: <{FINAL_TAG}>{orjson.dumps(example).decode()}</{FINAL_TAG}>"
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


def use_tools_request(output_schema: JSON) -> str:
    """After an answer given before any tool call: the SOP's steps are tool calls."""
    return (
        "You answered without calling any tool, so the answer rests on guesses. The SOP's "
        "steps are carried out through the tools: call the tool of the first step now, and "
        f"give the answer in <{FINAL_TAG}></{FINAL_TAG}> tags only when the steps are done."
    )


def repeat_warning(what: str, times: int) -> str:
    """After the model repeated itself: what it did, and what to do instead."""
    return (
        f"Warning: you have now {what} {times} times in a row, and it got the same "
        "result each time. Repeating it will not change that. Read the error, then change the "
        "arguments it names, call a different tool, or give the final answer if the "
        "procedure is done."
    )


def observation(content: Any) -> str:
    """A tool result (or error) as the ReAct model sees it."""
    text = content if isinstance(content, str) else orjson.dumps(content).decode()
    return f"Observation: {text}"

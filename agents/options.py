"""The model agents' tunable options: their defaults and their types (the command line's one
block of flags that sets them, ``sopgym run --max-steps 12 --agent-option max_repeats=2``, is
:mod:`sopgym.cli.agent_options`).

The options travel in the run's ``config.json`` (``agent_options``), so a resumed run keeps
them, and reach :class:`sopgym.agents.graph.GraphAgent` as keyword arguments in each worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AgentOption:
    kind: type  # int, float, or str (then one of ``choices``)
    default: float | int | str | None
    help: str
    low: float = 0.0
    choices: tuple[str, ...] = ()


# When a native-tools agent (fc, plan, mcp) asks the server to force a tool call
# (``tool_choice: "required"``): never; on the episode's first turn that offers the tools; or
# on every turn until a call of the episode has succeeded (issue 48: a small model that
# answers with a guess before any call makes calls once forced). An endpoint that refuses the
# option is asked without it ("auto"), and the row says so (``tool_choice_refused``).
TOOL_CHOICES = ("auto", "required-first", "required-until-success")


AGENT_OPTIONS: dict[str, AgentOption] = {
    "max_steps": AgentOption(int, 40, "Model turns per task.", 1),
    "request_timeout": AgentOption(
        float, 120.0, "Seconds one model request may take (never past the task's deadline).", 0.1
    ),
    "retries": AgentOption(
        int, 4, "Retries of a failed model request (a timed-out one is retried once)."
    ),
    "temperature": AgentOption(float, 0.0, "Sampling temperature sent with every request."),
    "max_tokens": AgentOption(int, 1024, "Most tokens a model reply may have.", 1),
    "max_nudges": AgentOption(int, 2, "Reminders to give the final answer in its form."),
    "corrective_turns": AgentOption(
        int, 1, "Turns that tell a model which answered before any tool call to use the tools."
    ),
    "max_repeats": AgentOption(
        int, 3, "Identical failing calls or replies in a row before the agent stops.", 1
    ),
    "max_replans": AgentOption(int, 6, "Re-plans after failed steps (plan agent)."),
    "paper_protocol": AgentOption(
        int,
        0,
        "1: SOP-Maze's own protocol on prompt-only tasks (the prompt as the one user message, "
        "no system prompt, the reply read as the official scorer reads it); --protocol paper.",
    ),
    "record_tokens": AgentOption(
        int,
        0,
        "1: record each model turn's prompt and completion token ids and logprobs (an "
        "OpenAI-compatible server such as vLLM, or the scripted model) in runs/<id>/tokens.jsonl"
        "; --record-tokens. docs/tokens.md.",
    ),
    "text_tool_calls": AgentOption(
        int, 1, "1: read tool calls a model writes as text (fenced JSON, <tool_call>) as calls."
    ),
    "tool_choice": AgentOption(
        str,
        "required-first",
        "When fc, plan and mcp ask the server to force a tool call (tool_choice \"required\"): "
        "auto (never), required-first (the first turn that offers the tools), "
        "required-until-success (every turn until a call succeeds). An endpoint that refuses "
        "it is asked without it.",
        choices=TOOL_CHOICES,
    ),
}


def default(name: str) -> Any:
    return AGENT_OPTIONS[name].default


def parse_agent_option(text: str) -> tuple[str, float | int | str]:
    """``key=value`` → the option's name and typed value; :class:`ValueError` saying why."""
    key, sep, raw = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or key not in AGENT_OPTIONS:
        known = ", ".join(AGENT_OPTIONS)
        raise ValueError(f"{text!r}: use key=value with a key among {known}")
    option = AGENT_OPTIONS[key]
    if option.choices:
        if raw.strip() not in option.choices:
            named = ", ".join(option.choices)
            raise ValueError(f"{key} must be one of {named}, got {raw.strip()!r}")
        return key, raw.strip()
    try:
        value = option.kind(raw.strip())
    except ValueError:
        raise ValueError(f"{key} must be {option.kind.__name__}, got {raw.strip()!r}") from None
    if value < option.low:
        raise ValueError(f"{key} must be at least {option.low:g}, got {value}")
    return key, value

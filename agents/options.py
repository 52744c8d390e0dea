"""The model agents' tunable options: their defaults, their types, and the command line's one
block of flags that sets them (``sopgym run --max-steps 12 --agent-option max_repeats=2``).

The options travel in the run's ``config.json`` (``agent_options``), so a resumed run keeps
them, and reach :class:`sopgym.agents.graph.GraphAgent` as keyword arguments in each worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from sopgym.types import JSON


@dataclass(frozen=True)
class AgentOption:
    kind: type  # int, float, or str (then one of ``choices``)
    default: float | int | str | None
    help: str
    low: float = 0.0
    choices: tuple[str, ...] = ()


# When a native-tools agent (fc, plan, mcp) asks the server to force a tool call
# (``tool_choice: "required"``): never; on its first model turn only; or on every turn until
# a call of the episode has succeeded (issue 48: a small model that answers with a guess
# before any call makes calls once forced). An endpoint that refuses the option is asked
# without it ("auto"), and the row says so (``tool_choice_refused``).
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
        "auto (never), required-first (the first model turn), required-until-success (every "
        "turn until a call succeeds). An endpoint that refuses it is asked without it.",
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


def agent_option_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--max-steps`` ... ``--max-tokens``, ``--tool-choice`` and the repeatable
    ``--agent-option key=value``
    (any option of :data:`AGENT_OPTIONS`); the command reads them back with
    :func:`collect_agent_options`."""
    flags = [
        click.option(
            "--agent-option",
            "agent_option",
            multiple=True,
            metavar="KEY=VALUE",
            help=f"Any agent option; repeatable ({', '.join(AGENT_OPTIONS)}).",
        )
    ]
    for name in ("max_tokens", "temperature", "retries", "request_timeout", "max_steps"):
        option = AGENT_OPTIONS[name]
        flags.append(
            click.option(
                "--" + name.replace("_", "-"),
                name,
                type=click.IntRange(int(option.low))
                if option.kind is int
                else click.FloatRange(option.low),
                default=None,
                help=f"{option.help} [default: {option.default}]",
            )
        )
    flags.append(
        click.option(
            "--protocol",
            "protocol",
            type=click.Choice(["default", "paper"]),
            default=None,
            help="How prompt-only tasks (SOP-Maze imports) are sent and read: ours (default), "
            "or the paper's (the prompt as published, no system prompt, the reply repaired "
            "as the official scorer does). Recorded in the run's agent_options.",
        )
    )
    flags.append(
        click.option(
            "--tool-choice",
            "tool_choice",
            type=click.Choice(list(TOOL_CHOICES)),
            default=None,
            help=f"{AGENT_OPTIONS['tool_choice'].help} [default: {default('tool_choice')}]",
        )
    )
    flags.append(
        click.option(
            "--record-tokens",
            "record_tokens",
            is_flag=True,
            default=None,
            help="Record each model turn's token ids and logprobs (OpenAI-compatible servers "
            "that return them, e.g. vLLM) in runs/<id>/tokens.jsonl; off by default.",
        )
    )
    for flag in flags:
        command = flag(command)
    return command


def collect_agent_options(values: dict[str, Any]) -> JSON:
    """The options a command was given (``--agent-option`` first, the named flags over them),
    popped from its keyword arguments; :class:`click.BadParameter` for a bad pair."""
    options: JSON = {}
    for text in values.pop("agent_option", ()) or ():
        try:
            key, value = parse_agent_option(text)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--agent-option") from None
        options[key] = value
    for name in AGENT_OPTIONS:
        value = values.pop(name, None)
        if value is not None:
            options[name] = int(value) if isinstance(value, bool) else value
    protocol = values.pop("protocol", None)
    if protocol is not None:
        options["paper_protocol"] = int(protocol == "paper")
    return options

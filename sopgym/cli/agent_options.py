"""The command line's one block of flags that sets the model agents' options
(``sopgym run --max-steps 12 --agent-option max_repeats=2``); the options themselves, their
defaults and types, are :data:`sopgym.agents.options.AGENT_OPTIONS`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from sopgym.agents.options import AGENT_OPTIONS, TOOL_CHOICES, default, parse_agent_option
from sopgym.types import JSON


def agent_option_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--max-steps`` ... ``--max-tokens``, ``--tool-choice`` and the repeatable
    ``--agent-option key=value`` (any option of :data:`AGENT_OPTIONS`); the command reads them
    back with
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

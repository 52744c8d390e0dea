"""Command-line value checks shared by every command: a bad value is one clear line (exit 2)
before anything starts, never a silent fallback or a traceback later."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sopgym.core.exceptions import UsageError

if TYPE_CHECKING:
    from sopgym.core.plugins import Plugins

_Command = TypeVar("_Command", bound=Callable[..., Any])

PORT = click.IntRange(1, 65535)
"""A TCP port: anything else is refused (no silent wrap-around to another port)."""

_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class Seconds(click.ParamType):
    """A positive, finite number of seconds (``-5``, ``0``, ``nan`` and ``inf`` refused)."""

    name = "seconds"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or seconds <= 0:
            self.fail(f"{value!r} must be a positive, finite number of seconds", param, ctx)
        return seconds


class PluginName(click.ParamType):
    """A name of one kind of plug-in (:class:`sopgym.core.plugins.Plugins`): a registered or
    installed name, or ``module:attr``; checked by loading it, so a wrong one is one line
    before anything starts. The value stays the text given (workers resolve it again)."""

    def __init__(self, plugins: Plugins[Any]) -> None:
        self.plugins = plugins
        self.name = plugins.kind

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return f"[{'|'.join(self.plugins.registered)}|module:attr]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            self.plugins.resolve(str(value))
        except UsageError as error:
            self.fail(str(error), param, ctx)
        return str(value)


# Episodes one run, worker or load-test level keeps in flight at once (docs/concurrency.md)
MAX_IN_FLIGHT = 20_000
IN_FLIGHT = click.IntRange(1, MAX_IN_FLIGHT)

SECONDS = Seconds()


def run_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A run id is one plain folder name, so a run never writes outside the runs folder."""
    if value is not None and not _RUN_NAME.fullmatch(value):
        raise click.BadParameter(
            f"{value!r} is not a run name (letters, digits, '.', '_', '-'; no path)", ctx, param
        )
    return value


def id_list(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str] | None:
    """``ID,ID,...`` as a list of ids (blanks between commas dropped); at least one."""
    if value is None:
        return None
    ids = [part.strip() for part in value.split(",") if part.strip()]
    if not ids:
        raise click.BadParameter(f"{value!r} names no id", ctx, param)
    return ids


def fault_spec(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A fault injection spec, parsed now so that a typo fails before the stack starts."""
    if value is None:
        return None
    from sopgym.gateway.faults import FaultSpecError, parse_faults

    try:
        parse_faults(value)
    except FaultSpecError as error:
        raise click.BadParameter(str(error), ctx, param) from None
    return value


DATA_ROOT = click.option(
    "--data-root",
    type=click.Path(path_type=Path),
    default=None,
    help="Where generated datasets (tasks and gold) are cached (default: ~/.cache/sopgym).",
)
"""The dataset cache every command that reads tasks or gold takes."""

HOST = click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (0.0.0.0: every interface, as in a container).",
)
"""The listening address of every server command."""


def port_option(default: int) -> Callable[[_Command], _Command]:
    """A server command's listening port."""
    return click.option(
        "--port", default=default, show_default=True, type=PORT, help="Port to listen on."
    )


AGENT_HELP = (
    "react (text ReAct), fc (native function calling), plan (plan-and-execute), mcp (fc "
    "through the gateway's MCP door), oneshot (one model call: answer-only and graph tasks), "
    "oracle (replays the reference policy's gold calls; must score 100%) or baseline (the "
    "generic policy of imported benchmarks, no model, no SOP: a reference point); or an "
    "installed plug-in's name, or module:Class for your own agent class (docs/own-agent.md)"
)
"""What ``--agent`` takes, said the same way by every command that runs agents."""

MODEL_HELP = (
    "Model spec: scripted[:profile], openai:<model>, anthropic:<model>, bedrock:<model-id>."
)
"""What ``--model`` takes (sopgym.agents.models)."""


def retrieval_spec(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A tool-retrieval spec (``METHOD[:K]``), parsed now so that a typo fails before the run."""
    if value is None:
        return None
    from sopgym.agents.retrieval import RetrievalSpec

    try:
        RetrievalSpec.parse(value)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx, param) from None
    return value

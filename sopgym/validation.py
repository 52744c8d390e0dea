"""Command-line value checks shared by every command: a bad value is one clear line (exit 2)
before anything starts, never a silent fallback or a traceback later."""

from __future__ import annotations

import math
import re
from typing import Any

import click

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


SECONDS = Seconds()


def run_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A run id is one plain folder name, so a run never writes outside the runs folder."""
    if value is not None and not _RUN_NAME.fullmatch(value):
        raise click.BadParameter(
            f"{value!r} is not a run name (letters, digits, '.', '_', '-'; no path)", ctx, param
        )
    return value


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

"""What the command modules share: the default domain, the one-line refusals (exit 2) and
the run progress bar."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sopgym.agents.models import ModelUnavailable
from sopgym.core.registry import (
    UnknownDomainError,
    load_domain,
)
from sopgym.terminal import console

DEFAULT_DOMAIN = "patient_intake"


def domain_or_usage_error(name: str) -> Any:
    try:
        return load_domain(name)
    except UnknownDomainError as error:
        raise click.UsageError(str(error)) from None


def fail(message: str) -> None:
    console.print(f"[red]error[/]: {escape(message)}", soft_wrap=True)
    sys.exit(2)


def model_unavailable(error: ModelUnavailable) -> None:
    console.print(f"[red]model unavailable[/]: {escape(str(error))}", soft_wrap=True)
    sys.exit(2)


def check_model_spec(spec: str) -> None:
    from sopgym.agents.models import ModelUnavailable, is_scripted, parse_model_spec
    from sopgym.services.model.profiles import ProfileError, parse_profile

    try:
        parse_model_spec(spec)
        if is_scripted(spec):
            parse_profile(spec.partition(":")[2])
    except (ModelUnavailable, ProfileError) as error:
        raise click.UsageError(f"--model: {error}") from None


def progress_bar(disable: bool = False) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tsr]}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[step]}"),
        console=console,
        disable=disable,
    )

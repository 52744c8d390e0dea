"""What the command modules share: the default domain, the one-line refusals (exit 2)."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click
from rich.markup import escape

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


def fail(message: str) -> NoReturn:
    console.print(f"[red]error[/]: {escape(message)}", soft_wrap=True)
    sys.exit(2)


def model_unavailable(error: ModelUnavailable) -> NoReturn:
    console.print(f"[red]model unavailable[/]: {escape(str(error))}", soft_wrap=True)
    sys.exit(2)


def check_model_spec(spec: str) -> None:
    """:func:`sopgym.orchestration.refusals.check_model_spec` as a usage error (exit 2)."""
    from sopgym.core.exceptions import UsageError
    from sopgym.orchestration.refusals import check_model_spec as refuse_model_spec

    try:
        refuse_model_spec(spec)
    except UsageError as error:
        raise click.UsageError(str(error)) from None

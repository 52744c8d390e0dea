"""What the command modules share: the default domain, the one-line refusals (exit 2)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def entry_point_errors() -> Iterator[None]:
    """A service entry point's refusals as the command line gives them: a usage error in one
    line and exit 2 (a model that cannot be used says so), a failed start (a tool service
    that never answered, a port in use) in one line and exit 1; never a traceback."""
    from sopgym.core.exceptions import InfrastructureError, UsageError

    try:
        yield
    except ModelUnavailable as error:
        model_unavailable(error)
    except UsageError as error:
        raise click.UsageError(str(error)) from None
    except (InfrastructureError, ValueError) as error:
        raise click.ClickException(str(error)) from None

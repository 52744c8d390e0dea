"""``sopgym list``: the domains with their task and tool counts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import click
import orjson
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from sopgym.cli.domain import kind_label, load_data_saying_so, needs_generating
from sopgym.cli.validation import (
    DATA_ROOT,
)
from sopgym.core.domain import DomainPack
from sopgym.core.registry import (
    UnknownDomainError,
    listed_names,
    load_domain,
    select_domains,
)
from sopgym.terminal import console, stdout


@click.command("list")
@click.argument("domains", nargs=-1)
@click.option(
    "--details",
    is_flag=True,
    help="Also show each domain's tools and, per output field, its label distribution.",
)
@DATA_ROOT
def list_domains(domains: tuple[str, ...], details: bool, data_root: Path | None) -> None:
    """List the domains (all, or DOMAINS: names, families, globs) with their task and tool
    counts."""

    try:
        names = select_domains(list(domains)) if domains else listed_names()
    except UnknownDomainError as error:
        raise click.UsageError(str(error)) from None
    table = Table(Column("domain", no_wrap=True), "kind", "tasks", "tools", "distractors", "title")
    tools = Table(Column("domain", no_wrap=True), "SOP tools", title="tools", title_justify="left")
    labels = Table(
        Column("domain", no_wrap=True),
        "output field",
        "gold values",
        title="output fields",
        title_justify="left",
    )
    loaded: dict[str, DomainPack | UnknownDomainError] = {}
    for name in names:
        try:
            loaded[name] = load_domain(name)
        except UnknownDomainError as error:  # an import whose files moved: listed, with why
            loaded[name] = error
    fresh = [
        d for d in loaded.values() if isinstance(d, DomainPack) and needs_generating(d, data_root)
    ]
    # many datasets to generate (the first sopgym list: ~40 s): on a terminal one bar, not
    # a line each (a log still gets a line each)
    one_bar = len(fresh) > 1 and console.is_terminal
    with Progress(
        TextColumn("first use, generating datasets"), BarColumn(bar_width=12),
        MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[name]}"),
        console=console, disable=not one_bar, transient=True,
    ) as bar:  # fmt: skip
        handle = bar.add_task("datasets", total=len(fresh), name="")
        data_of: dict[str, Any] = {}
        for domain in fresh:
            bar.update(handle, name=domain.name)
            data_of[domain.name] = load_data_saying_so(domain, data_root, quiet=one_bar)
            bar.advance(handle)
    for name in names:
        found = loaded[name]
        if isinstance(found, UnknownDomainError):
            table.add_row(name, "-", "-", "-", "-", f"unavailable: {found}")
            continue
        domain = found
        data = data_of.get(name) or load_data_saying_so(domain, data_root)
        table.add_row(
            name,
            kind_label(domain),
            str(len(data.tasks)),
            str(len(domain.tools)),
            str(len(domain.distractors)),
            domain.title,
        )
        tools.add_row(name, ", ".join(t.name for t in domain.tools) or "-")
        schemas = domain.output_schema.get("properties", {})
        for field in domain.output_fields:
            values = [g.outputs.get(field) for g in data.gold.values()]
            labels.add_row(name, field, field_distribution(schemas.get(field, {}), values))
    stdout().print(table)
    if details:
        stdout().print(tools)
        stdout().print(labels)


def field_distribution(schema: dict[str, Any], values: list[Any]) -> str:
    """An output field's gold values: a label (its schema lists the values) by count; a
    number by its range; free text and structured values by how many distinct ones (listing
    them would print every answer)."""
    if "enum" in schema or schema.get("type") == "boolean":
        counts = Counter(str(v) for v in values)
        return ", ".join(f"{k}: {v}" for k, v in counts.most_common())
    given = [v for v in values if v is not None]
    distinct = len({orjson.dumps(v, option=orjson.OPT_SORT_KEYS) for v in given})
    nulls = f", {len(values) - len(given)} null" if len(given) < len(values) else ""
    if given and all(isinstance(v, int | float) and not isinstance(v, bool) for v in given):
        return f"numbers {min(given):g} to {max(given):g}, {distinct} distinct{nulls}"
    return f"{distinct} distinct values{nulls} (free text or structured: not listed)"

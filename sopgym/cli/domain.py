"""``sopgym domain show NAME``: one domain as an agent meets it — its SOP, its tools with their
argument schemas, the output fields an answer must give, and an example task with the gold
answer — and the one-word kind of a domain that ``sopgym list`` shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import orjson
from rich.markup import escape
from rich.table import Column, Table

from sopgym.cli.validation import DATA_ROOT
from sopgym.core.domain import DomainPack
from sopgym.core.registry import UnknownDomainError, load_domain
from sopgym.terminal import stdout

KIND_LABELS = {"tool_use": "tool use", "json_answer": "answer-only", "dialogue": "dialogue",
               "graph": "graph"}  # fmt: skip


def kind_label(domain: DomainPack) -> str:
    """What an episode of the domain is: tool use, stateful (tool use whose final state is
    scored), answer-only, dialogue or graph."""
    if domain.kind == "tool_use" and domain.stateful:
        return "stateful"
    return KIND_LABELS.get(domain.kind, domain.kind)


def needs_generating(domain: DomainPack, data_root: Path | None) -> bool:
    """Whether the domain's dataset is not cached yet (its first use generates it)."""
    from sopgym.core import dataset

    return not (dataset.data_path(domain, data_root) / "gold.jsonl").exists()


def load_data_saying_so(domain: DomainPack, data_root: Path | None, quiet: bool = False) -> Any:
    """The domain's dataset; a line first when it must be generated (the first use can take
    a while, and silence reads as a hang), unless ``quiet`` (a progress bar says it)."""
    from sopgym.core import dataset

    if not quiet and needs_generating(domain, data_root):
        # on stderr: progress, not the listing (a pipe or a parser reads stdout)
        click.echo(f"generating the {domain.name} dataset (first use; cached after)", err=True)
    return dataset.load(domain, data_root)


@click.group("domain")
def domain_group() -> None:
    """Look at one domain: its SOP, tools, output fields and an example task."""


@domain_group.command("show")
@click.argument("name")
@click.option("--sop", "variant", default="clean", show_default=True, help="The SOP variant.")
@click.option("--task", "task_id", default=None, help="The example task (default: the first).")
@DATA_ROOT
def show_domain(name: str, variant: str, task_id: str | None, data_root: Path | None) -> None:
    """Print domain NAME: its SOP, its tools with their argument schemas, its output fields
    and an example task with its gold answer."""
    try:
        domain = load_domain(name)
    except UnknownDomainError as error:
        raise click.UsageError(str(error)) from None
    if variant not in domain.sop_files:
        raise click.UsageError(
            f"no SOP variant {variant!r} in {name} (its variants: {', '.join(domain.sop_files)})"
        )
    out = stdout()
    out.print(f"[bold]{escape(domain.name)}[/]: {escape(domain.title)} ({kind_label(domain)})")
    out.rule(f"SOP ({variant})")
    out.print(escape(domain.sop(variant)), soft_wrap=True)
    out.rule(f"tools ({len(domain.tools)}; distractors: {len(domain.distractors)})")
    tools = Table(Column("tool", no_wrap=True), "description", "arguments")
    for tool in domain.tools:
        tools.add_row(escape(tool.name), escape(tool.spec.description),
                      escape(_arguments(tool.spec.input_schema)))  # fmt: skip
    out.print(tools)
    out.rule("output fields")
    fields = Table(Column("field", no_wrap=True), "type", "values / description")
    required = set(domain.output_schema.get("required", []))
    for field, schema in domain.output_schema.get("properties", {}).items():
        mark = "" if field in required else " (optional)"
        fields.add_row(escape(field + mark), escape(_type(schema)), escape(_values(schema)))
    out.print(fields)
    data = load_data_saying_so(domain, data_root)
    task = next((t for t in data.tasks if task_id in (None, t.id)), None)
    if task is None:
        raise click.UsageError(f"no task {task_id!r} in {name}")
    out.rule(f"example task {task.id}")
    out.print("[bold]input[/]")
    out.print(escape(_json(task.inputs)), soft_wrap=True)
    gold = data.gold[task.id]
    out.print(f"[bold]gold answer[/] ({len(gold.calls)} gold calls)")
    out.print(escape(_json(gold.outputs)), soft_wrap=True)


def _arguments(schema: dict[str, Any]) -> str:
    """``name: type`` per argument, ``*`` marking the required ones."""
    required = set(schema.get("required", []))
    return (
        ", ".join(
            f"{name}{'*' if name in required else ''}: {_type(prop)}"
            for name, prop in (schema.get("properties") or {}).items()
        )
        or "-"
    )


def _type(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "any")
    return "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)


def _values(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(map(str, schema["enum"]))
    return str(schema.get("description", ""))


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()

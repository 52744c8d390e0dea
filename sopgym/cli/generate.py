"""``sopgym generate``: a business task in, a validated domain pack out (docs/generation.md)."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.markup import escape
from rich.progress import Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from sopgym.terminal import console

_STATUS = {
    "queued": "[dim]queued[/]",
    "skipped": "[dim]passed earlier[/]",
    "pending": "[dim]not run[/]",
    "running": "[cyan]running[/]",
    "answered": "[cyan]checking[/]",
    "retrying": "[yellow]gate failed, asking again[/]",
    "passed": "[green]passed[/]",
    "failed": "[red]failed[/]",
}


@click.command("generate")
@click.argument("business_task")
@click.option(
    "--context",
    "context_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A file describing the business (policies, records, rules): shown to the first stage.",
)
@click.option(
    "--model",
    required=True,
    help="openai:<model> (with --base-url for any OpenAI-compatible server), anthropic:<model>, "
    "bedrock:<id>, or replay:<cassette folder> (recorded answers, offline).",
)
@click.option("--base-url", default=None, help="The model API's URL, e.g. http://host:8000/v1.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for the stages' artifacts and the pack (pack/); rerun with it to resume.",
)
@click.option(
    "--name", default=None, help="The pack's name after generated/ (default: from the task)."
)
@click.option("--from-stage", default=None, help="Run this stage and every later one again.")
@click.option("--only-stage", default=None, help="Run only this stage again.")
@click.option("--to-stage", default=None, help="Stop after this stage.")
@click.option(
    "--retries",
    type=click.IntRange(0, 10),
    default=2,
    show_default=True,
    help="Times a stage is asked again with its gate's error before the run stops.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=120.0,
    show_default=True,
    help="Seconds each check of generated code may take (a child process, killed then).",
)
@click.option(
    "--oracle-timeout",
    type=click.FloatRange(min=1),
    default=600.0,
    show_default=True,
    help="Seconds for the oracle's run through real processes.",
)
@click.option(
    "--record",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write every answer into this folder as a cassette for --model replay:<folder>.",
)
def generate_command(
    business_task: str,
    context_file: Path | None,
    model: str,
    base_url: str | None,
    out: Path,
    name: str | None,
    from_stage: str | None,
    only_stage: str | None,
    to_stage: str | None,
    retries: int,
    timeout: float,
    oracle_timeout: float,
    record: Path | None,
) -> None:
    """Generate a benchmark domain for BUSINESS_TASK, stage by stage, each gated by checks that
    run code; the pack lands in OUT/pack and is registered as generated/<name>."""
    from sopgym.agents.models import ModelUnavailable, parse_model_spec, preflight
    from sopgym.generation.model import REPLAY, GenerationModel
    from sopgym.generation.pack import SNAKE_NAME, pack_name_for
    from sopgym.generation.pipeline import GenerationError, Pipeline, Request, default_name
    from sopgym.generation.stages import STAGES, Settings
    from sopgym.observability.tracing import setup_tracing

    if from_stage and only_stage:
        raise click.UsageError("--from-stage or --only-stage, not both")
    if name is not None and not SNAKE_NAME.match(name):
        raise click.UsageError("--name: lowercase letters, digits and _ only")
    setup_tracing("sopgym-generate")
    try:
        if not model.startswith(REPLAY):
            preflight(parse_model_spec(model, base_url))
        generation_model = GenerationModel.from_spec(model, base_url, record)
    except (ModelUnavailable, FileNotFoundError) as error:
        raise click.UsageError(f"--model: {error}") from None
    request = Request(
        task=business_task,
        context=context_file.read_text() if context_file else "",
        name=pack_name_for(name) if name else default_name(business_task),
    )
    settings = Settings(timeout_s=timeout, oracle_timeout_s=oracle_timeout)
    with Progress(
        TextColumn("{task.description:<32}"),
        TextColumn("{task.fields[status]:<40}"),
        TextColumn("{task.fields[tokens]:>22}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        rows: dict[str, TaskID] = {
            s.name: progress.add_task(
                f"{s.name} ({s.title})", start=False, total=1, status="", tokens=""
            )
            for s in STAGES
        }

        def show(stage: str, event: str, rec: object) -> None:
            row = rows[stage]
            tokens = getattr(rec, "input_tokens", 0), getattr(rec, "output_tokens", 0)
            text = f"{tokens[0]} in / {tokens[1]} out" if any(tokens) else ""
            if event == "running":
                progress.start_task(row)
            progress.update(row, status=_STATUS.get(event, event), tokens=text)
            if event in ("passed", "failed"):
                progress.stop_task(row)

        pipeline = Pipeline(out, request, generation_model, settings, retries, show)
        try:
            outcome = pipeline.run(from_stage, only_stage, to_stage)
        except GenerationError as error:
            raise click.UsageError(str(error)) from None
    _summary(outcome.stages)
    if outcome.failure is not None:
        failure = outcome.failure
        console.print(
            f"[red]stopped at stage {outcome.failed_stage}: gate {failure.gate} failed on "
            f"{escape(failure.artifact)}[/]\n{escape(failure.message)}"
        )
        console.print(f"report: {outcome.report}")
        raise SystemExit(1)
    console.print(f"report: {outcome.report}")
    if outcome.passed:
        console.print(
            f"[green]{request.name}[/] is registered (SOPGYM_HOME="
            f"{os.environ.get('SOPGYM_HOME', '~/.config/sopgym')}): "
            f"sopgym run {request.name} --agent oracle"
        )


def _summary(stages: dict) -> None:
    table = Table("stage", "status", "attempts", "tokens in", "tokens out", "seconds")
    for name, rec in stages.items():
        table.add_row(
            name,
            rec.status,
            str(rec.attempts),
            str(rec.input_tokens),
            str(rec.output_tokens),
            f"{rec.seconds:.1f}",
        )
    total = [sum(getattr(r, k) for r in stages.values()) for k in ("input_tokens", "output_tokens")]
    seconds = sum(r.seconds for r in stages.values())
    table.add_row("total", "", "", str(total[0]), str(total[1]), f"{seconds:.1f}", style="bold")
    console.print(table)

"""The ``sopgym`` command line. Every server and worker is a subcommand, so containers and
the embedded runner start exactly the same entry points."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click
import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sopgym.core.registry import UnknownDomainError, domain_names, load_domain

console = Console(stderr=True)
DEFAULT_DOMAIN = "patient_intake"


@click.group()
@click.version_option(package_name="sopgym")
def main() -> None:
    """sopgym: run LLM agents through SOPs against real HTTP tool services."""


def _domain(name: str) -> Any:
    try:
        return load_domain(name)
    except UnknownDomainError as error:
        raise click.UsageError(str(error)) from None


@main.command("list")
@click.option("--details", is_flag=True, help="Also show tools and the label distribution.")
@click.option("--data-root", type=click.Path(path_type=Path), default=None)
def list_domains(details: bool, data_root: Path | None) -> None:
    """List the domains and their task and tool counts."""
    from collections import Counter

    from sopgym.core import dataset

    table = Table("domain", "tasks", "tools", "distractors", "title")
    labels: list[tuple[str, str, Counter[str]]] = []
    for name in domain_names():
        domain = _domain(name)
        data = dataset.load(domain, data_root)
        table.add_row(
            name,
            str(len(data.tasks)),
            str(len(domain.tools)),
            str(len(domain.distractors)),
            domain.title,
        )
        if details:
            for field in domain.output_fields:
                counts = Counter(str(g.outputs.get(field)) for g in data.gold.values())
                labels.append((name, field, counts))
    Console().print(table)
    if details:
        detail = Table("domain", "output field", "label distribution")
        for name, field, counts in labels:
            detail.add_row(name, field, ", ".join(f"{k}: {v}" for k, v in counts.most_common()))
        Console().print(detail)


@main.command()
@click.argument("domains", nargs=-1)
@click.option("--agent", default="oracle", show_default=True, help="Agent to run.")
@click.option("--model", default="scripted", show_default=True, help="Model spec.")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 256))
@click.option(
    "--distractors",
    default=0,
    show_default=True,
    type=click.IntRange(0, 10_000),
    help="Extra, unneeded tools added to each episode's catalog.",
)
@click.option(
    "--sop",
    "sop_variant",
    default="clean",
    show_default=True,
    type=click.Choice(["clean", "noisy"]),
)
@click.option("--limit", type=click.IntRange(1), default=None, help="First N tasks per domain.")
@click.option("--task-timeout", default=300.0, show_default=True, help="Seconds per task.")
@click.option(
    "--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True
)
@click.option("--run-id", default=None, help="Name of the run folder (default: timestamp).")
@click.option("--resume", default=None, help="Finish an interrupted run by its run id.")
@click.option(
    "--data-root",
    type=click.Path(path_type=Path),
    default=None,
    help="Where generated datasets are cached (default: ~/.cache/sopgym).",
)
def run(
    domains: tuple[str, ...],
    agent: str,
    model: str,
    workers: int,
    distractors: int,
    sop_variant: str,
    limit: int | None,
    task_timeout: float,
    runs_dir: Path,
    run_id: str | None,
    resume: str | None,
    data_root: Path | None,
) -> None:
    """Run an agent on every task of DOMAINS (default: patient_intake; 'all' for every one)."""
    from sopgym.runner import RunConfig, Runner, new_run_id

    if resume:
        run_dir = runs_dir / resume
        if not (run_dir / "config.json").exists():
            raise click.UsageError(f"no run to resume at {run_dir}")
        config = RunConfig.from_json(orjson.loads((run_dir / "config.json").read_bytes()))
    else:
        names = list(domains) or [DEFAULT_DOMAIN]
        if names == ["all"]:
            names = domain_names()
        for name in names:
            _domain(name)
        from sopgym.agents import AGENTS

        if agent not in AGENTS:
            raise click.UsageError(f"unknown agent {agent!r} (known: {', '.join(AGENTS)})")
        config = RunConfig(
            domains=names,
            agent=agent,
            model=model,
            workers=workers,
            distractors=distractors,
            sop_variant=sop_variant,
            limit=limit,
            task_timeout=task_timeout,
        )
        run_dir = runs_dir / (run_id or new_run_id())
        if (run_dir / "config.json").exists():
            raise click.UsageError(f"{run_dir} exists; use --resume {run_dir.name}")
    runner = Runner(config, run_dir, data_root)
    tasks = runner.prepare()
    todo = runner.pending(tasks)
    console.print(
        f"run [bold]{run_dir.name}[/]: {len(tasks)} tasks ({len(todo)} to run), "
        f"agent={config.agent} model={config.model} workers={config.workers}"
    )
    try:
        with _progress() as bar:
            handle = bar.add_task("tasks", total=len(todo), tsr="")
            solved = [0, 0]

            def on_result(row: dict) -> None:
                solved[0] += 1
                solved[1] += bool(row["score"]["success"])
                bar.update(handle, advance=1, tsr=f"success {solved[1]}/{solved[0]}")

            summary = runner.execute(tasks, on_result)
    except KeyboardInterrupt:
        console.print(
            f"[yellow]interrupted[/]: resume with [bold]sopgym run --resume {run_dir.name}[/]"
        )
        sys.exit(130)
    except Exception as error:  # one clear line, the details are in the run's logs
        console.print(f"[red]run failed[/]: {error}\nlogs: {run_dir / 'logs'}")
        sys.exit(1)
    _print_summary(summary)
    console.print(f"results: {run_dir / 'results.jsonl'}\nsummary: {run_dir / 'summary.json'}")


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tsr]}"),
        TimeElapsedColumn(),
        console=console,
    )


def _print_summary(summary: dict) -> None:
    table = Table("domain", "tasks", "completed", "ECR", "C-TSR", "TSR", "tool F1", "errors")
    rows = [*summary["domains"].items(), ("all", summary)]
    for name, s in rows:
        errors = ", ".join(f"{k}={v}" for k, v in s["errors"].items()) or "-"
        table.add_row(
            name,
            str(s["tasks"]),
            str(s["completed"]),
            f"{s['ecr']:.1%}",
            f"{s['c_tsr']:.1%}",
            f"{s['tsr']:.1%}",
            f"{s['tool_f1']:.3f}",
            errors,
        )
    Console().print(table)


@main.command("serve-tools")
@click.argument("domain")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8100, show_default=True, type=int)
@click.option("--data-root", type=click.Path(path_type=Path), default=None)
def serve_tools(domain: str, host: str, port: int, data_root: Path | None) -> None:
    """Serve one domain's tools over HTTP."""
    import uvicorn

    from sopgym.services.tools.app import create_app

    app = create_app(_domain(domain), data_root)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option(
    "--service",
    "services",
    multiple=True,
    required=True,
    help="DOMAIN=URL of a tool service; repeat for each domain.",
)
@click.option("--distractors", default=0, show_default=True, type=click.IntRange(0))
def gateway(host: str, port: int, services: tuple[str, ...], distractors: int) -> None:
    """Serve the gateway in front of the given tool services."""
    import uvicorn

    from sopgym.gateway.app import Gateway
    from sopgym.gateway.catalog import discover
    from sopgym.stack import ADMIN_TOKEN_ENV

    urls = {}
    for item in services:
        name, sep, url = item.partition("=")
        if not sep or not url.startswith("http"):
            raise click.UsageError(f"--service takes DOMAIN=URL, got {item!r}")
        urls[name] = url.rstrip("/")
    app = Gateway(discover(urls), distractors, os.environ.get(ADMIN_TOKEN_ENV))
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        http="httptools",
        loop="uvloop",
        lifespan="on",
    )


@main.command("agent-worker")
@click.option("--gateway", "gateway_url", required=True, help="Base URL of the gateway.")
@click.option("--agent", default="oracle", show_default=True)
@click.option("--model", default="scripted", show_default=True)
@click.option("--task-timeout", default=300.0, show_default=True)
@click.option("--options", default="{}", help="Agent options as a JSON object.")
def agent_worker(
    gateway_url: str, agent: str, model: str, task_timeout: float, options: str
) -> None:
    """Work tasks read as JSON lines on stdin; write one result line per task on stdout."""
    from sopgym.agents.worker import serve

    serve(agent, gateway_url, task_timeout, {"model": model, **orjson.loads(options)})

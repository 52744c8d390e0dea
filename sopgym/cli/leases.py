"""The command line of lease mode: ``sopgym run-service``, ``sopgym merge-leases`` and the
agent worker's ``--leases`` loop (heavy imports inside the commands)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click
import httpx
from rich.markup import escape

from sopgym.agents import DEFAULT_AGENT
from sopgym.cli.common import entry_point_errors
from sopgym.cli.scaleout import domain_list
from sopgym.cli.summary import print_summary
from sopgym.cli.validation import AGENT_HELP, DATA_ROOT, HOST, MODEL_HELP, port_option
from sopgym.orchestration.leases import EXIT_INFRA, LEASE_S, MAX_LAPSES
from sopgym.orchestration.scaleout import Observer
from sopgym.terminal import console
from sopgym.types import JSON

PROGRESS_S = 15.0  # how often merge-leases says how far the run is


def run_lease_command(
    gateway: str,
    transport: str,
    agent: str,
    model: str,
    base_url: str | None,
    task_timeout: float,
    agent_options: JSON,
    concurrency: int,
    observe: Observer | None,
    *,
    service: str,
    wait_s: float,
    outage_wait: float,
) -> None:
    """``sopgym agent-worker --leases URL``: work the run's leases until the run is done;
    exits with :mod:`sopgym.orchestration.leases`' statuses."""
    from sopgym.agents import uses_model
    from sopgym.agents.worker import EpisodePool, freeze_start_up_heap
    from sopgym.core.stopping import SIGTERM_STATUS, exit_on_sigterm, leave_now
    from sopgym.orchestration.lease_worker import LeaseSettings, LeaseWorker
    from sopgym.orchestration.shards import ShardError, default_owner, model_ready, wait_until

    exit_on_sigterm()  # as a container's PID 1, SIGTERM's default action is no action at all
    settings = LeaseSettings(service, default_owner(), agent, model, wait_s, outage_wait)
    if uses_model(agent):
        try:
            wait_until(time.monotonic() + wait_s, lambda: model_ready(model, base_url),
                       "model endpoint", console.print)  # fmt: skip
        except ShardError as error:
            console.print(f"[red]giving up[/]: {escape(str(error))}")
            sys.exit(EXIT_INFRA)
    options = {"model": model, **agent_options}
    if base_url:
        options["base_url"] = base_url
    pool = EpisodePool(agent, gateway, task_timeout, options, transport, concurrency)
    freeze_start_up_heap()
    worker = LeaseWorker(settings, pool, console.print, observe)
    console.print(f"lease worker {settings.worker}: {concurrency} episode(s) at once from "
                  f"{service}")  # fmt: skip
    try:
        status = worker.run()
    except SystemExit as stop:
        if stop.code != SIGTERM_STATUS:
            raise
        worker.give_back()  # the episodes in flight are not recorded: others take them now
        leave_now(SIGTERM_STATUS)
    worker.close()
    if status:
        sys.exit(status)


@click.command("run-service")
@click.option(
    "--run-dir",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="The run folder: its lease store (leases.sqlite), results.jsonl and summary.json.",
)
@click.option(
    "--domain",
    "domains",
    multiple=True,
    required=True,
    envvar="SOPGYM_DOMAINS",
    help="A domain whose tasks the run works; repeat ($SOPGYM_DOMAINS: space-separated).",
)
@click.option("--agent", default=DEFAULT_AGENT, show_default=True, help=f"Agent: {AGENT_HELP}.")
@click.option("--model", default="scripted", show_default=True, help=MODEL_HELP)
@click.option("--limit", type=click.IntRange(1), default=None, help="First N per domain.")
@click.option("--trials", type=click.IntRange(1), default=1, show_default=True,
              help="Times every task runs (as sopgym run --trials).")  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True,
              help="The run's seed (as sopgym run --seed).")  # fmt: skip
@click.option("--distractors", type=click.IntRange(0), default=0, show_default=True,
              help="Extra, unneeded tools added to each episode's catalog.")  # fmt: skip
@click.option("--sop", "sop_variant", default="clean", show_default=True, help="SOP variant.")
@click.option(
    "--lease-s",
    type=click.FloatRange(1),
    default=LEASE_S,
    show_default=True,
    help="Seconds a lease lasts unless its worker renews it (a dead worker's tasks go to "
    "another worker this long after it stopped answering).",
)
@click.option(
    "--max-lapses",
    type=click.IntRange(1),
    default=MAX_LAPSES,
    show_default=True,
    help="Lapsed leases after which a task is recorded as an infrastructure error.",
)
@HOST
@port_option(8400)
@DATA_ROOT
def run_service_command(
    run_dir: Path,
    domains: tuple[str, ...],
    agent: str,
    model: str,
    limit: int | None,
    trials: int,
    seed: int,
    distractors: int,
    sop_variant: str,
    lease_s: float,
    max_lapses: int,
    host: str,
    port: int,
    data_root: Path | None,
) -> None:
    """Serve one run's tasks to agent workers as leases and keep their results (SQLite in
    --run-dir); restarted on the same folder, it carries on."""
    from sopgym.orchestration.api import validate
    from sopgym.orchestration.run_service import RunService, serve_run_service
    from sopgym.runs.records import RunConfig

    with entry_point_errors():
        config = validate(RunConfig(
            domains=domain_list(domains, "--domain"), agent=agent, model=model, limit=limit,
            trials=trials, seed=seed, distractors=distractors, sop_variant=sop_variant,
        ))  # fmt: skip
        service = RunService(config, run_dir, data_root, lease_s, max_lapses)
        progress = service.store.progress()
        console.print(f"run service {run_dir.name}: {progress.done} of {progress.planned} "
                      f"attempts have results; leases last {lease_s:g}s")  # fmt: skip
        serve_run_service(service, host, port)


@click.command("merge-leases")
@click.argument("service")
@click.option(
    "--wait",
    "wait_s",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds to wait for every task's result before merging.",
)
@click.option("--report", is_flag=True, help="Also write report.md/report.html from the traces.")
def merge_leases_command(service: str, wait_s: float, report: bool) -> None:
    """Ask the run service at SERVICE (its base URL) to score the run into its run folder
    (results.jsonl, summary.json), once every task has a result or --wait runs out."""
    with httpx.Client(base_url=service.rstrip("/"), timeout=600.0) as client:
        try:
            progress = _wait_for_run(client, wait_s)
            merged = client.post("/v1/merge", json={"report": report})
        except httpx.HTTPError as error:
            raise click.ClickException(f"run service {service}: {error}") from None
    if merged.status_code != 200:
        raise click.ClickException(f"run service {service}: HTTP {merged.status_code}: "
                                   f"{merged.text[:300]}")  # fmt: skip
    print_summary(merged.json())
    console.print(
        f"leases: {progress['lapsed']} lapsed and re-leased, {progress['given_back']} given "
        f"back, {progress['duplicates']} late duplicate result(s) dropped"
    )
    if not progress["finished"]:
        console.print(f"[yellow]unfinished[/]: {progress['planned'] - progress['done']} of "
                      f"{progress['planned']} attempts have no result")  # fmt: skip
        sys.exit(1)


def _wait_for_run(client: httpx.Client, wait_s: float) -> JSON:
    """The run's progress once finished, or when ``wait_s`` runs out; says every PROGRESS_S
    how far it is. A service still starting is waited for within the same time."""
    started = said = time.monotonic()
    while True:
        try:
            progress: JSON = client.get("/v1/progress").raise_for_status().json()
        except httpx.HTTPError:
            if time.monotonic() - started >= wait_s:
                raise
            time.sleep(1.0)
            continue
        now = time.monotonic()
        if progress["finished"] or now - started >= wait_s:
            return progress
        if now - said >= PROGRESS_S:
            console.print(
                f"merge-leases: {progress['done']} of {progress['planned']} attempts done, "
                f"{progress['leased']} leased, after {now - started:.0f}s"
            )
            said = now
        time.sleep(1.0)


LEASE_COMMANDS: list[click.Command] = [run_service_command, merge_leases_command]

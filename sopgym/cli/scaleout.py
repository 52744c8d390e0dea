"""The command line for running sopgym as microservices: the agent worker's shard mode,
``sopgym merge``, ``sopgym loadtest`` and ``sopgym loadtest-gather`` (what they run lives in
:mod:`sopgym.orchestration`; heavy imports happen inside the commands)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from sopgym.agents import DEFAULT_AGENT
from sopgym.cli.summary import print_summary
from sopgym.cli.validation import AGENT_HELP, DATA_ROOT, MAX_IN_FLIGHT, MODEL_HELP, SECONDS
from sopgym.client.transports import TRANSPORTS
from sopgym.core.jsonio import read_jsonl_prefix
from sopgym.orchestration.run_report import write_report_if_traced
from sopgym.orchestration.scaleout import TRACE_SETTLE_S, Observer, default_out
from sopgym.orchestration.shards import OUTAGE_WAIT_S
from sopgym.runs.records import given
from sopgym.terminal import console
from sopgym.types import JSON


def shard_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The agent worker's shard-mode options (``--shard`` switches the mode on)."""
    options = [
        click.option(
            "--shard",
            default=None,
            metavar="INDEX/COUNT",
            help="Shard mode: work tasks INDEX, INDEX+COUNT, ... of --domain (auto/COUNT: "
            "claim the first free shard) and append results under <run-dir>/shards/.",
        ),
        click.option(
            "--domain",
            "domains",
            multiple=True,
            envvar="SOPGYM_DOMAINS",
            help="Shard mode: a domain whose tasks to work; repeat ($SOPGYM_DOMAINS: "
            "space-separated).",
        ),
        click.option(
            "--run-dir",
            type=click.Path(path_type=Path),
            default=None,
            help="Shard mode: the run folder all shards share.",
        ),
        click.option("--limit", type=click.IntRange(1), default=None, help="First N per domain."),
        click.option(
            "--distractors",
            type=click.IntRange(0),
            default=0,
            show_default=True,
            help="Extra, unneeded tools added to each episode's catalog.",
        ),
        click.option(
            "--sop",
            "sop_variant",
            default="clean",
            show_default=True,
            help="SOP variant: clean, noisy, or one a pack adds (maze/*: deciding, none); the "
            "gateway refuses one the domain lacks.",
        ),
        click.option(
            "--wait",
            "wait_s",
            default=300.0,
            show_default=True,
            help="Shard and lease modes: seconds to wait for the gateway, the model (and the "
            "run service) to answer.",
        ),
        click.option(
            "--retry-infra",
            is_flag=True,
            help="Shard mode: work again the shard's tasks the infrastructure failed.",
        ),
        click.option(
            "--trials",
            type=click.IntRange(1),
            default=1,
            show_default=True,
            help="Shard mode: times every task runs (as sopgym run --trials).",
        ),
        click.option(
            "--seed",
            type=int,
            default=0,
            show_default=True,
            help="Shard mode: the run's seed (as sopgym run --seed); every shard needs the same.",
        ),
        click.option(
            "--outage-wait",
            default=OUTAGE_WAIT_S,
            show_default=True,
            type=click.FloatRange(0),
            help="Shard and lease modes: seconds to pause for a tool service or the gateway "
            "that goes down mid-run before its task is recorded as an infrastructure error.",
        ),
        DATA_ROOT,
    ]
    for option in reversed(options):
        command = option(command)
    return command


def domain_list(patterns: tuple[str, ...], option: str) -> list[str]:
    """The domains named by ``patterns`` (names, ``all``, families, globs), as ``sopgym run``
    reads them; a pattern that names none is a usage error."""
    from sopgym.core.registry import UnknownDomainError, select_domains

    try:
        return select_domains(pattern for text in patterns for pattern in text.split())
    except UnknownDomainError as error:
        raise click.BadParameter(str(error), param_hint=option) from None


def run_shard_command(
    gateway: str,
    transport: str,
    agent: str,
    model: str,
    base_url: str | None,
    task_timeout: float,
    agent_options: JSON,
    observe: Observer | None,
    *,
    shard: str,
    domains: tuple[str, ...],
    run_dir: Path | None,
    limit: int | None,
    distractors: int,
    sop_variant: str,
    wait_s: float,
    retry_infra: bool,
    trials: int,
    seed: int,
    outage_wait: float,
    data_root: Path | None,
) -> None:
    from sopgym.core.stopping import SIGTERM_STATUS, exit_on_sigterm, leave_now
    from sopgym.orchestration.shards import ShardError, ShardSettings, run_shard

    if not domains or run_dir is None:
        raise click.UsageError("--shard needs --domain (or $SOPGYM_DOMAINS) and --run-dir")
    settings = ShardSettings(
        gateway=gateway,
        domains=domain_list(domains, "--domain"),
        agent=agent,
        model=model,
        base_url=base_url,
        agent_options=agent_options,
        transport=transport,
        distractors=distractors,
        sop_variant=sop_variant,
        limit=limit,
        task_timeout=task_timeout,
        trials=trials,
        seed=seed,
        outage_wait=outage_wait,
    )
    exit_on_sigterm()  # as a container's PID 1, SIGTERM's default action is no action at all
    try:
        worked = run_shard(
            settings, shard, run_dir, data_root, wait_s, observe, console.print, retry_infra
        )
    except ShardError as error:
        console.print(f"[red]shard failed[/]: {escape(str(error))}")
        sys.exit(1)
    except SystemExit as stop:
        if stop.code != SIGTERM_STATUS:
            raise
        # the shard's file is closed and its claim given back (run_shard's finally); leave now,
        # not after the agent's worker threads end their calls: the task is not recorded anyway
        leave_now(SIGTERM_STATUS)
    console.print(f"shard done: {worked} tasks worked")


@click.command("merge")
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--shards", type=click.IntRange(1), default=None, help="Shards to expect.")
@click.option(
    "--wait",
    "wait_s",
    default=0.0,
    show_default=True,
    help="Seconds to wait for every shard to finish before merging.",
)
@click.option(
    "--stall",
    "stall_s",
    default=None,
    type=click.FloatRange(0),
    help="Stop waiting once no unfinished shard has been worked for this many seconds (each "
    "unclaimed, or stuck: its worker gone); default: wait the whole --wait.",
)
@click.option("--report", is_flag=True, help="Also write report.md/report.html from the traces.")
@DATA_ROOT
def merge_command(
    run_dir: Path,
    shards: int | None,
    wait_s: float,
    stall_s: float | None,
    report: bool,
    data_root: Path | None,
) -> None:
    """Merge the shard results of RUN_DIR into results.jsonl and summary.json (scored)."""
    from sopgym.orchestration.shards import ShardError, merge

    try:
        summary = merge(run_dir, shards, wait_s, data_root, console.print, stall_s)
    except ShardError as error:
        raise click.ClickException(str(error)) from None
    figures = summary.to_json()
    # episodes no shard ran (unfinished shards): the summary counts them as incomplete; the
    # coverage line says the TSR over those that ran, as `sopgym run` does for infra errors
    figures["never_run"] = figures["tasks"] - len(read_jsonl_prefix(run_dir / "results.jsonl"))
    print_summary(figures)
    if summary.infra_failed:  # in shard mode the shard's own workers work them again
        console.print(
            "shards re-run their infrastructure errors with: sopgym agent-worker --shard I/N "
            "--run-dir RUN ... --retry-infra, then sopgym merge again"
        )
    console.print(f"results: {run_dir / 'results.jsonl'}\nsummary: {run_dir / 'summary.json'}")
    if report:
        if wait_s > 0:  # the shards just finished: their last spans are still on the way
            time.sleep(TRACE_SETTLE_S)  # through the batching exporters and the Collector
        write_report_if_traced(run_dir, data_root)
    if summary.unfinished_shards:
        states = given(summary.unfinished_shard_states) or {}
        for index in summary.unfinished_shards:
            why = escape(states.get(str(index), "not finished"))
            console.print(f"[yellow]unfinished shard {index}[/]: {why}")
        sys.exit(1)


def concurrency_levels(
    context: click.Context | None, parameter: click.Parameter | None, text: str
) -> list[int]:
    """``--concurrency 16`` or a sweep, ``--concurrency 1,10,100,1000``: episodes in flight,
    1 to 20,000 each."""
    try:
        levels = [int(part) for part in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"{text!r}: a number of episodes or a list, 1,10,100") from None
    if not levels or not all(1 <= level <= MAX_IN_FLIGHT for level in levels):
        raise click.BadParameter(
            f"{text!r}: each level must be 1 to {MAX_IN_FLIGHT} episodes in flight"
        )
    return levels


@click.command("loadtest")
@click.option("--tasks", default=100, show_default=True, type=click.IntRange(1), help="Episodes.")
@click.option(
    "--concurrency",
    "levels",
    default="4",
    show_default=True,
    callback=concurrency_levels,
    help="Episodes in flight (1-20000), or a sweep on one stack: 1,10,100,1000.",
)
@click.option(
    "--workers",
    default=None,
    type=click.IntRange(1, 512),
    help="Agent worker processes the episodes in flight are spread over (default: one per "
    "core, up to the episodes in flight).",
)
@click.option(
    "--duration",
    default=60.0,
    show_default=True,
    type=click.FloatRange(1),
    help="Seconds after which no new episode starts.",
)
@click.option(
    "--gateway",
    default=None,
    help="A running stack's gateway (base URL; host:port with --transport grpc). "
    "Default: start the embedded stack with the scripted model.",
)
@click.option(
    "--transport",
    type=click.Choice([t.name for t in TRANSPORTS.values() if t.replicable]),
    default="http",
    show_default=True,
    help="How the agent workers reach the gateway.",
)
@click.option("--domain", "domains", multiple=True, help="Domain(s) to draw tasks from.")
@click.option("--agent", default=DEFAULT_AGENT, show_default=True, help=f"Agent: {AGENT_HELP}.")
@click.option("--model", default="scripted", show_default=True, help=MODEL_HELP)
@click.option("--model-url", default=None, help="The model's /v1 base URL (with --gateway).")
@click.option(
    "--task-timeout", default=120.0, show_default=True, type=SECONDS, help="Seconds per episode."
)
@click.option("--grace", default=30.0, show_default=True, help="Seconds in-flight episodes get.")
@click.option("--no-warmup", is_flag=True, help="Count each worker's first episode too.")
@click.option(
    "--wait",
    "wait_s",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds to wait for the gateway and the model to answer before the load starts.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Report folder (default: $SOPGYM_RUNS_DIR/loadtest-<timestamp>, $SOPGYM_RUNS_DIR "
    "defaulting to runs).",
)
@DATA_ROOT
def loadtest_command(
    tasks: int,
    levels: list[int],
    workers: int | None,
    duration: float,
    gateway: str | None,
    transport: str,
    domains: tuple[str, ...],
    agent: str,
    model: str,
    model_url: str | None,
    task_timeout: float,
    grace: float,
    no_warmup: bool,
    wait_s: float,
    out_dir: Path | None,
    data_root: Path | None,
) -> None:
    """Drive many concurrent episodes against a stack and report throughput and latency."""
    from rich.live import Live

    from sopgym.orchestration.loadtest import (
        Loadtest,
        LoadtestConfig,
        write_reports,
        write_sweep_reports,
    )

    chosen = domain_list(domains, "--domain") if domains else ["patient_intake"]
    config = LoadtestConfig(
        tasks=tasks,
        concurrency=levels[0],
        workers=workers,
        duration=duration,
        gateway=gateway,
        transport=transport,
        domains=chosen,
        agent=agent,
        model=model,
        model_url=model_url,
        task_timeout=task_timeout,
        grace=grace,
        warmup=not no_warmup,
        wait_s=wait_s,
    )
    out_dir = out_dir or default_out("loadtest")
    out_dir.mkdir(parents=True, exist_ok=True)
    where = gateway or "the embedded stack"
    console.print(
        f"loadtest: {tasks} episodes, {','.join(map(str, levels))} in flight, at most "
        f"{duration:.0f}s each, against {where} ({transport}), agent={agent} model={model}"
    )
    with Live(_figures_table({}, 0, tasks), console=console, refresh_per_second=4) as live:

        def show(figures: JSON, in_flight: int, planned: int) -> None:
            live.update(_figures_table(figures, in_flight, planned))

        try:
            outcomes = Loadtest(config, out_dir, data_root).sweep(levels, show)
        except Exception as error:  # one line; the worker logs hold the details
            console.print(
                f"[red]loadtest failed[/]: {escape(str(error))}\nlogs: {out_dir / 'logs'}"
            )
            sys.exit(1)
        last = outcomes[-1]
        live.update(_figures_table(last.figures, last.cut, tasks, final=True))
    console.print()
    if len(outcomes) == 1:
        written = write_reports(outcomes[0], out_dir)
    else:
        written = write_sweep_reports(outcomes, out_dir)
    for path in written:
        console.print(f"wrote {path}")


@click.command("loadtest-gather")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@click.option("--parts", type=click.IntRange(1), required=True, help="Loadtests to expect.")
@click.option("--wait", "wait_s", default=0.0, show_default=True, help="Seconds to wait for them.")
def loadtest_gather_command(folder: Path, parts: int, wait_s: float) -> None:
    """One report from the loadtests of many pods (FOLDER/*/, one per pod of the Kubernetes
    loadtest Job): the whole load's figures, over time and by error class."""
    from sopgym.orchestration.loadtest import LoadtestError, gather, write_reports

    try:
        outcome = gather(folder, parts, wait_s, console.print)
    except LoadtestError as error:
        raise click.ClickException(str(error)) from None
    table = _figures_table(outcome.figures, outcome.cut, outcome.figures["episodes"], final=True)
    console.print(table)
    for path in write_reports(outcome, folder):
        console.print(f"wrote {path}")


def _figures_table(figures: JSON, in_flight: int, planned: int, final: bool = False) -> Any:
    from rich.table import Table

    from sopgym.orchestration.loadtest import summary_rows

    title = "loadtest: final figures" if final else f"loadtest: {in_flight} episodes in flight"
    table = Table("figure", "value", title=title)
    if figures:
        table.add_row("episodes planned", str(planned))
        for name, value in summary_rows(figures):
            table.add_row(name, value)
        if final:
            table.add_row("episodes cut at the deadline", str(in_flight))
    return table

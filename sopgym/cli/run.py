"""``sopgym run``: an agent on every task of the chosen domains."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from sopgym.agents import DEFAULT_AGENT
from sopgym.agents.models import ModelUnavailable
from sopgym.cli.agent_options import agent_option_flags, collect_agent_options
from sopgym.cli.common import (
    DEFAULT_DOMAIN,
    fail,
    model_unavailable,
)
from sopgym.cli.progress import execute_with_progress, prepare_run
from sopgym.cli.runs import resumed_config
from sopgym.cli.summary import print_summary
from sopgym.cli.validation import (
    AGENT_HELP,
    DATA_ROOT,
    IN_FLIGHT,
    MODEL_HELP,
    SECONDS,
    PluginName,
    fault_spec,
    id_list,
    retrieval_spec,
    run_name,
)
from sopgym.client.transports import TRANSPORT_PLUGINS
from sopgym.orchestration.after_run import SLOW_STEP_S, print_after_run
from sopgym.orchestration.runs import describe_config
from sopgym.terminal import console

if TYPE_CHECKING:  # loaded when the command runs: the CLI starts without the runner
    pass


def worker_pace(concurrency: int | None, workers: int | None) -> dict[str, int]:
    """The run's ``concurrency`` (episodes in flight) and ``workers`` (processes): as given;
    without ``--workers``, one process per core up to the episodes in flight (threads in one
    process share its core through the GIL, so more processes than cores buy nothing); without
    either, two of each, as before episodes shared a process."""
    if concurrency is None:
        count = workers if workers is not None else 2
        return {"concurrency": count, "workers": count}
    if workers is None:
        workers = max(1, min(concurrency, os.cpu_count() or 1))
    return {"concurrency": concurrency, "workers": min(workers, concurrency)}


@click.command()
@click.argument("domains", nargs=-1)
@click.option(
    "--agent",
    default=DEFAULT_AGENT,
    show_default=True,
    help=f"Agent to run: {AGENT_HELP}.",
)
@click.option(
    "--model",
    default="scripted",
    show_default=True,
    help=MODEL_HELP,
)
@click.option(
    "--base-url",
    default=None,
    help="Endpoint of the model's API, e.g. an OpenAI-compatible server's .../v1.",
)
@click.option(
    "--concurrency",
    default=None,
    type=IN_FLIGHT,
    help="Episodes in flight at once, spread over the --workers processes (default: the "
    "--workers count, 2 without it).",
)
@click.option(
    "--workers",
    default=None,
    type=click.IntRange(1, 256),
    help="Agent worker processes (default: with --concurrency, one per core up to it; "
    "else 2). Each holds its share of the episodes in flight.",
)
@click.option(
    "--distractors",
    default=0,
    show_default=True,
    type=click.IntRange(0, 10_000),
    help="Extra, unneeded tools added to each episode's catalog.",
)
@click.option(
    "--tool-retrieval",
    default=None,
    metavar="METHOD[:K]",
    callback=retrieval_spec,
    help="fc/mcp agents: offer the model only the K tools (default 30) that best match the SOP "
    "and the task: bm25, or embedding (pip install -e '.[retrieval]').",
)
@click.option(
    "--sop",
    "sop_variant",
    default="clean",
    show_default=True,
    help="SOP variant: clean or noisy (every pack); packs may add their own (maze/*: "
    "deciding, none; banking/*: abstract, abstract_user_data).",
)
@click.option("--limit", type=click.IntRange(1), default=None, help="First N tasks per domain.")
@click.option(
    "--tasks",
    "task_ids",
    default=None,
    callback=id_list,
    help="Only these task ids, comma-separated (ID,ID,...), looked up in every domain run.",
)
@click.option("--match", default=None, help="Only tasks whose id matches this glob, e.g. 'crm-0*'.")
@click.option(
    "--sample",
    type=click.IntRange(1),
    default=None,
    help="N tasks per domain drawn at random with --seed (the same seed draws the same tasks).",
)
@click.option(
    "--task-timeout", default=300.0, show_default=True, type=SECONDS, help="Seconds per task."
)
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="The folder that holds run folders.",
)
@click.option(
    "--run-id",
    default=None,
    callback=run_name,
    help="Name of the run folder (default: timestamp).",
)
@click.option(
    "--resume",
    default=None,
    callback=run_name,
    help="Finish an interrupted run by its run id, with its stored config: an option that "
    "contradicts it is refused (--workers may change).",
)
@click.option(
    "--retry-infra",
    is_flag=True,
    help="With --resume: run again exactly the tasks recorded as infrastructure errors.",
)
@click.option(
    "--repair", is_flag=True, help="With --resume: drop corrupt rows of results.jsonl (rerun)."
)
@DATA_ROOT
@click.option(
    "--trace/--no-trace",
    default=True,
    show_default=True,
    help="Record OpenTelemetry traces in the run's trace store (runs/<id>/traces/).",
)
@click.option(
    "--capture-messages",
    is_flag=True,
    help="Record the model's input and output messages on its chat spans (GenAI "
    "gen_ai.input.messages / gen_ai.output.messages; large, and may hold private data).",
)
@click.option(
    "--transport",
    type=PluginName(TRANSPORT_PLUGINS),
    default="http",
    show_default=True,
    help="How the agent workers reach the gateway (the mcp agent always uses MCP).",
)
@click.option(
    "--trials",
    default=1,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Times every task runs; the summary adds pass^k and pass@k for k = 1..trials.",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    help="Drives the run's random draws: the scripted model's mistakes (per trial) and the "
    "gateway's distractor and fault draws.",
)
@click.option(
    "--faults",
    default=None,
    callback=fault_spec,
    help="Inject faults at the gateway, e.g. 'latency=exp:20ms,429=0.05,503=0.05,timeout=0.01,"
    "drop=0.02,lookup_patient:503=0.5' (see docs/reliability.md).",
)
@click.option(
    "--service-groups",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="Tool-service processes the domains share (each domain keeps its own app and data).",
)
@agent_option_flags
@click.option("--quiet", is_flag=True, help="No progress and no per-task lines: the figures only.")
@click.option(
    "--verbose",
    is_flag=True,
    help="A line per model turn (else only a real model's turns slower than "
    f"{SLOW_STEP_S:g} s print, off a terminal).",
)
@click.option(
    "--prices",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A JSON price table (USD per million input/output tokens per model) for the "
    "summary's LLM cost estimate.",
)
def run(
    domains: tuple[str, ...],
    agent: str,
    model: str,
    base_url: str | None,
    concurrency: int | None,
    workers: int | None,
    distractors: int,
    tool_retrieval: str | None,
    sop_variant: str,
    limit: int | None,
    task_ids: list[str] | None,
    match: str | None,
    sample: int | None,
    task_timeout: float,
    runs_dir: Path,
    run_id: str | None,
    resume: str | None,
    retry_infra: bool,
    repair: bool,
    data_root: Path | None,
    trace: bool,
    capture_messages: bool,
    transport: str,
    trials: int,
    seed: int,
    faults: str | None,
    service_groups: int,
    prices: Path | None,
    quiet: bool,
    verbose: bool,
    **agent_flags: Any,
) -> None:
    """Run an agent on every task of DOMAINS: names, 'all', a family's name or a glob such as
    'maze/*' (default: patient_intake)."""
    from sopgym.core.exceptions import UsageError
    from sopgym.orchestration import api
    from sopgym.orchestration.runner import Runner
    from sopgym.runs.records import RunConfig

    if quiet and verbose:
        raise click.UsageError("--quiet and --verbose: give one")
    if (retry_infra or repair) and not resume:
        raise click.UsageError("--retry-infra and --repair go with --resume RUN")
    if limit is not None and sample is not None:
        raise click.UsageError("--limit takes the first N tasks, --sample N at random: give one")
    if resume and tool_retrieval:
        raise click.UsageError("--tool-retrieval is recorded with the run; a resume keeps it")
    agent_options = collect_agent_options(agent_flags)
    if prices is not None:
        from sopgym.evaluation.llm_usage import PriceTableError, read_prices

        try:
            read_prices(prices)
        except PriceTableError as error:
            raise click.BadParameter(str(error), param_hint="--prices") from None
    try:  # the API's refusals (sopgym.run raises the same): one line, exit 2
        if resume:
            run_dir = runs_dir / resume
            config = resumed_config(click.get_current_context(), api.stored_config(run_dir))
            if agent_options:  # the recorded run is what a resume finishes
                raise click.UsageError(
                    "agent options are recorded with the run (config.json); a resume keeps them"
                )
        else:
            if tool_retrieval:
                agent_options["tool_retrieval"] = tool_retrieval
            config = api.validate(RunConfig(
                domains=list(domains) or [DEFAULT_DOMAIN], agent=agent, model=model,
                base_url=base_url, **worker_pace(concurrency, workers),
                distractors=distractors,
                sop_variant=sop_variant, limit=limit, task_ids=task_ids, match=match,
                sample=sample, task_timeout=task_timeout, trace=trace,
                capture_messages=capture_messages, transport=transport, trials=trials,
                seed=seed, faults=faults, service_groups=service_groups,
                agent_options=agent_options, prices=str(prices) if prices else None,
            ))  # fmt: skip
            run_dir = api.new_run_dir(runs_dir, run_id)
    except UsageError as error:
        raise click.UsageError(str(error)) from None
    runner = Runner(config, run_dir, data_root)
    try:
        runner.check_model()  # a missing key or dead endpoint: one line, before anything starts
    except ModelUnavailable as error:
        model_unavailable(error)
    try:
        prepared = prepare_run(runner, repair, retry_infra)
    except OSError as error:  # a read-only or full runs folder: one line
        fail(f"cannot use run folder {run_dir}: {error.strerror or error}")
    console.print(
        f"run [bold]{run_dir.name}[/]: {len(prepared.tasks)} tasks"
        + (f" x {config.trials} trials" if config.trials > 1 else "")
        + f" ({len(prepared.todo)} to run)\n{escape(describe_config(config))}"
    )  # wrapped by rich at the spaces: a terminal's own wrap cut the config mid-word
    try:
        summary = execute_with_progress(runner, prepared, quiet, verbose)
    except KeyboardInterrupt:
        stopped = len(runner.interrupted)
        console.print(
            f"[yellow]interrupted[/]: {stopped} task(s) in flight not recorded; resume with "
            f"[bold]sopgym run --resume {run_dir.name}[/]"
        )
        sys.exit(130)
    except ModelUnavailable as error:  # the scripted model server, checked once it is up
        model_unavailable(error)
    except OSError as error:  # the run folder turned unwritable (full disk, permissions)
        console.print(f"[red]run failed[/]: {escape(str(error))}\nlogs: {run_dir / 'logs'}")
        sys.exit(1)
    except Exception as error:  # one clear line, the details are in the run's logs
        console.print(f"[red]run failed[/]: {escape(str(error))}\nlogs: {run_dir / 'logs'}")
        sys.exit(1)
    print_summary(summary.to_json())
    console.print(f"results: {run_dir / 'results.jsonl'}\nsummary: {run_dir / 'summary.json'}")
    console.print("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in runner.phases.items()))
    print_after_run(run_dir, runs_dir)  # the first failed tasks, why, and what to run next

"""The ``sopgym`` command line. Every server and worker is a subcommand, so containers and
the embedded runner start exactly the same entry points."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import click
import orjson
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from sopgym.agents import DEFAULT_AGENT
from sopgym.agents.models import ModelUnavailable, is_scripted
from sopgym.agents.options import agent_option_flags, collect_agent_options
from sopgym.client.transports import TRANSPORTS
from sopgym.core.registry import (
    UnknownDomainError,
    domain_names,
    listed_names,
    load_domain,
    select_domains,
)
from sopgym.core.tools import DEFAULT_TOOL_TIMEOUT_S
from sopgym.domain_cli import domain_group, kind_label, load_data_saying_so
from sopgym.evaluation.cli import EVALUATION_COMMANDS
from sopgym.generation.cli import generate_command
from sopgym.importers.cli import audit_group, import_group
from sopgym.observability.cli import OBSERVABILITY_COMMANDS
from sopgym.orchestration.after_run import SLOW_STEP_S, print_after_run, slow_step
from sopgym.orchestration.runs import describe_config
from sopgym.orchestration.runs_cli import RUNS_COMMANDS, resumed_config
from sopgym.orchestration.scaleout import (
    SCALEOUT_COMMANDS,
    run_shard_command,
    shard_options,
    worker_metrics,
)
from sopgym.orchestration.steps import STEP_PREFIX, StepFollower
from sopgym.services.tools.episodes import DEFAULT_IDLE_TIMEOUT_S
from sopgym.terminal import console, print_summary, stdout
from sopgym.validation import (
    AGENT_HELP,
    DATA_ROOT,
    HOST,
    MODEL_HELP,
    PORT,
    SECONDS,
    fault_spec,
    id_list,
    port_option,
    retrieval_spec,
    run_name,
)
from sopgym.viewer.cli import view_command

DEFAULT_DOMAIN = "patient_intake"


@click.group()
@click.version_option(package_name="sopgym")
def main() -> None:
    """sopgym: run LLM agents through SOPs against real HTTP tool services."""


main.add_command(import_group)  # sopgym import sop-bench ...
main.add_command(audit_group)  # sopgym audit sop-bench ...
main.add_command(generate_command)  # sopgym generate "<business task>" ...
# sopgym collector / eval / report / compare
for _command in [*OBSERVABILITY_COMMANDS, *EVALUATION_COMMANDS]:
    main.add_command(_command)
for _command in SCALEOUT_COMMANDS:  # sopgym merge / loadtest
    main.add_command(_command)
main.add_command(view_command)  # sopgym view: the run viewer
main.add_command(domain_group)  # sopgym domain show NAME
for _command in RUNS_COMMANDS:  # sopgym runs / show / export
    main.add_command(_command)


def _domain(name: str) -> Any:
    try:
        return load_domain(name)
    except UnknownDomainError as error:
        raise click.UsageError(str(error)) from None


@main.command("list")
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
    for name in names:
        try:
            domain = load_domain(name)
        except UnknownDomainError as error:  # an import whose files moved: listed, with why
            table.add_row(name, "-", "-", "-", "-", f"unavailable: {error}")
            continue
        data = load_data_saying_so(domain, data_root)
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


@main.command()
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
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Agent worker processes: how many tasks run at once.",
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
    "deciding, none; banking/*: abstract).",
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
    type=click.Choice(list(TRANSPORTS)),
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
    workers: int,
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
    from sopgym.orchestration.runner import RunConfig, Runner, new_run_id

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
    if resume:
        run_dir = runs_dir / resume
        if not (run_dir / "config.json").exists():
            raise click.UsageError(f"no run to resume at {run_dir}")
        try:
            config = RunConfig.read(run_dir / "config.json")
            select_domains(config.domains)  # a pack removed since, or a config edited
        except (ValueError, UnknownDomainError) as error:
            raise click.UsageError(str(error)) from None
        config = resumed_config(click.get_current_context(), config)
        if agent_options:  # the recorded run is what a resume finishes
            raise click.UsageError(
                "agent options are recorded with the run (config.json); a resume keeps them"
            )
    else:
        try:
            names = select_domains(list(domains) or [DEFAULT_DOMAIN])
        except UnknownDomainError as error:
            raise click.UsageError(str(error)) from None
        from sopgym.importers.resolve import run_refusal

        refusal = run_refusal(agent, [_domain(n) for n in names])
        if refusal:  # imported benchmarks have no gold calls to replay
            raise click.UsageError(refusal)
        from sopgym.orchestration.refusals import unknown_fault_tools

        refusal = unknown_fault_tools(faults, [_domain(n) for n in names])
        if refusal:  # it would inject nothing, and the run would read as fault-free
            raise click.UsageError(refusal)
        lacking = [n for n in names if sop_variant not in _domain(n).sop_files]
        if lacking:
            raise click.UsageError(
                f"no SOP variant {sop_variant!r} in {', '.join(lacking)} "
                f"(its variants: {', '.join(_domain(lacking[0]).sop_files)})"
            )
        from sopgym.agents import UnknownAgent, resolve_agent

        try:
            resolve_agent(agent)  # a name, a plug-in or module:Class, loaded before anything
        except UnknownAgent as error:
            raise click.UsageError(str(error)) from None
        _check_model_spec(model)
        config = RunConfig(
            domains=names,
            agent=agent,
            model=model,
            base_url=base_url,
            workers=workers,
            distractors=distractors,
            sop_variant=sop_variant,
            limit=limit,
            task_ids=task_ids,
            match=match,
            sample=sample,
            task_timeout=task_timeout,
            trace=trace,
            capture_messages=capture_messages,
            transport=transport,
            trials=trials,
            seed=seed,
            faults=faults,
            service_groups=service_groups,
            agent_options=agent_options,
            prices=str(prices) if prices else None,
        )
        if tool_retrieval:
            if agent not in ("fc", "mcp"):
                raise click.UsageError("--tool-retrieval narrows the catalog of the fc and mcp "
                                       f"agents, not of {agent}")  # fmt: skip
            config.agent_options["tool_retrieval"] = tool_retrieval
        run_dir = runs_dir / (run_id or new_run_id())
        if (run_dir / "config.json").exists():
            raise click.UsageError(f"{run_dir} exists; use --resume {run_dir.name}")
    runner = Runner(config, run_dir, data_root)
    try:
        runner.check_model()  # a missing key or dead endpoint: one line, before anything starts
    except ModelUnavailable as error:
        _model_unavailable(error)
    try:
        tasks, todo = _prepare_run(runner, repair, retry_infra)
    except OSError as error:  # a read-only or full runs folder: one line
        _fail(f"cannot use run folder {run_dir}: {error.strerror or error}")
    console.print(
        f"run [bold]{run_dir.name}[/]: {len(tasks)} tasks"
        + (f" x {config.trials} trials" if config.trials > 1 else "")
        + f" ({len(todo)} to run)\n{escape(describe_config(config))}",
        soft_wrap=True,
    )
    try:
        with _progress(disable=quiet) as bar:
            handle = bar.add_task("tasks", total=len(todo), tsr="", step="")
            solved = [0, 0]

            def on_result(row: dict) -> None:
                solved[0] += 1
                solved[1] += bool(row["score"]["success"])
                bar.update(handle, advance=1, tsr=f"success {solved[1]}/{solved[0]}")
                if not console.is_terminal and not quiet:  # a log or CI: a line per task
                    console.print(f"done task={row['task_id']} status={row['status']} "
                                  f"success={row['score']['success']}", markup=False)  # fmt: skip

            def on_step(line: str) -> None:  # a model turn in flight somewhere
                if quiet:
                    return
                if console.is_terminal:
                    bar.update(handle, step=line.removeprefix(STEP_PREFIX)[:60])
                elif verbose or (not is_scripted(config.model) and slow_step(line)):
                    console.print(line, markup=False, soft_wrap=True)

            with StepFollower(runner.paths.logs, on_step):
                summary = runner.execute(tasks, on_result)
    except KeyboardInterrupt:
        stopped = len(runner.interrupted)
        console.print(
            f"[yellow]interrupted[/]: {stopped} task(s) in flight not recorded; resume with "
            f"[bold]sopgym run --resume {run_dir.name}[/]"
        )
        sys.exit(130)
    except ModelUnavailable as error:  # the scripted model server, checked once it is up
        _model_unavailable(error)
    except OSError as error:  # the run folder turned unwritable (full disk, permissions)
        console.print(f"[red]run failed[/]: {escape(str(error))}\nlogs: {run_dir / 'logs'}")
        sys.exit(1)
    except Exception as error:  # one clear line, the details are in the run's logs
        console.print(f"[red]run failed[/]: {escape(str(error))}\nlogs: {run_dir / 'logs'}")
        sys.exit(1)
    print_summary(summary)
    console.print(f"results: {run_dir / 'results.jsonl'}\nsummary: {run_dir / 'summary.json'}")
    console.print("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in runner.phases.items()))
    print_after_run(run_dir, runs_dir)  # the first failed tasks, why, and what to run next


@main.command("score")
@click.argument("domains", nargs=-1, required=True)
@click.option(
    "--responses",
    required=True,
    type=click.Path(path_type=Path),
    help="A file of responses, or a folder of such files.",
)
@click.option(
    "--format", "reader", default=None,
    help="How the responses are written (docs/own-outputs.md lists the formats); default: "
    "sopmaze for SOP-Maze's files with model_response, else jsonl.",
)  # fmt: skip
@click.option("--model", default="unknown", show_default=True, help="Who wrote the responses.")
@click.option(
    "--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
    help="The folder that holds run folders.",
)  # fmt: skip
@click.option("--run-id", default=None, callback=run_name, help="Name of the run folder.")
@click.option("--tasks", "task_ids", default=None, callback=id_list, help="Only these task ids.")
@click.option("--match", default=None, help="Only tasks whose id matches this glob.")
@click.option("--sample", type=click.IntRange(1), default=None, help="N tasks per domain.")
@click.option("--limit", type=click.IntRange(1), default=None, help="First N tasks per domain.")
@click.option("--seed", default=0, show_default=True, help="The --sample draw's seed.")
@DATA_ROOT
def score(
    domains: tuple[str, ...], responses: Path, reader: str | None, model: str, runs_dir: Path,
    run_id: str | None, task_ids: list[str] | None, match: str | None, sample: int | None,
    limit: int | None, seed: int, data_root: Path | None,
) -> None:  # fmt: skip
    """Score responses produced elsewhere against DOMAINS' tasks (names, a family, a glob):
    a normal run folder that report, view, show, export and compare read. Tasks the selection
    holds and no response answers count as unanswered."""
    from sopgym.evaluation.external import EXTERNAL_AGENT, ScoreRefused, score_into_run
    from sopgym.orchestration.runner import RunConfig, new_run_id
    from sopgym.orchestration.selection import SelectionError

    try:
        names = select_domains(domains)
    except UnknownDomainError as error:
        raise click.UsageError(str(error)) from None
    config = RunConfig(domains=names, agent=EXTERNAL_AGENT, model=model, workers=0,
                       trace=False, task_ids=task_ids, match=match, sample=sample, limit=limit,
                       seed=seed)  # fmt: skip
    run_dir = runs_dir / (run_id or new_run_id())
    try:
        summary = score_into_run(config, run_dir, responses, reader, data_root)
    except (ScoreRefused, SelectionError) as error:
        _fail(str(error))
    except OSError as error:
        _fail(f"cannot use run folder {run_dir}: {error.strerror or error}")
    print_summary(summary)
    tally = summary["responses"]
    problems = ("unknown", "not_selected", "ambiguous", "duplicates", "unreadable", "missing",
                "no_trajectory")  # fmt: skip
    console.print(f"responses: {tally['read']} read, {tally['scored']} scored, "
                  + ", ".join(f"{tally[k]} {k.replace('_', ' ')}" for k in problems))  # fmt: skip
    if summary["undecided"]:
        console.print(f"undecided: {summary['undecided']} episode(s) passed every gate that "
                      "could be judged, not the final state (no service held it): TSR "
                      f"{summary['tsr']:.1%}, {summary['tsr_if_undecided_pass']:.1%} had they "
                      "passed it")  # fmt: skip
    for name in problems:
        for item in tally[f"{name}_listed"][:5]:
            console.print(f"  {name.replace('_', ' ')}: {escape(item)}", soft_wrap=True)
    console.print(f"results: {run_dir / 'results.jsonl'}\nsummary: {run_dir / 'summary.json'}")


def _prepare_run(runner: Any, repair: bool, retry_infra: bool) -> tuple[list, list]:
    """Lock the run, apply --repair / --retry-infra, and list its tasks and those to run;
    a run held by another runner or a corrupt row is one line and exit 2."""
    from sopgym.core.jsonio import CorruptRow
    from sopgym.orchestration.runner import RunLocked
    from sopgym.orchestration.selection import SelectionError

    try:
        tasks = runner.prepare()
        if repair:
            runner.repair()
        if retry_infra:
            console.print(f"retrying {runner.drop_infra_errors()} infrastructure error(s)")
        return tasks, runner.pending(tasks)
    except RunLocked as error:
        _fail(str(error))
    except CorruptRow as error:
        _fail(f"{error}; rerun with --repair to drop it (its task runs again)")
    except SelectionError as error:
        _fail(str(error))
    raise AssertionError("unreachable")


def _fail(message: str) -> None:
    console.print(f"[red]error[/]: {escape(message)}", soft_wrap=True)
    sys.exit(2)


def _model_unavailable(error: ModelUnavailable) -> None:
    console.print(f"[red]model unavailable[/]: {escape(str(error))}", soft_wrap=True)
    sys.exit(2)


def _check_model_spec(spec: str) -> None:
    from sopgym.agents.models import ModelUnavailable, is_scripted, parse_model_spec
    from sopgym.services.model.profiles import ProfileError, parse_profile

    try:
        parse_model_spec(spec)
        if is_scripted(spec):
            parse_profile(spec.partition(":")[2])
    except (ModelUnavailable, ProfileError) as error:
        raise click.UsageError(f"--model: {error}") from None


def _progress(disable: bool = False) -> Progress:
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


@main.command("serve-tools")
@click.argument("domains", nargs=-1, required=True)
@HOST
@port_option(8100)
@DATA_ROOT
@click.option(
    "--episode-idle-timeout",
    "idle_timeout",
    default=DEFAULT_IDLE_TIMEOUT_S,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds after its last use that an episode the gateway never closed is freed.",
)
@click.option(
    "--tool-timeout",
    default=DEFAULT_TOOL_TIMEOUT_S,
    show_default=True,
    envvar="SOPGYM_TOOL_TIMEOUT",
    type=SECONDS,
    help="Seconds a tool may take on one call before it is answered 504 tool_timeout "
    "($SOPGYM_TOOL_TIMEOUT; keep it under the gateway's 30 s upstream limit).",
)
def serve_tools(
    domains: tuple[str, ...],
    host: str,
    port: int,
    data_root: Path | None,
    idle_timeout: float,
    tool_timeout: float,
) -> None:
    """Serve one domain's tools over HTTP, or several domains' in one process, each under
    /domains/<name with / as __>."""
    from sopgym.core.access import service_secret
    from sopgym.observability.asgi import traced
    from sopgym.observability.tracing import setup_tracing
    from sopgym.services.tools.app import create_app
    from sopgym.services.tools.group import ToolServiceGroup
    from sopgym.serving import serve

    packs = {name: _domain(name) for name in dict.fromkeys(domains)}
    setup_tracing("sopgym-tools", {"sopgym.domain": domains[0]} if len(packs) == 1 else {})
    secret = service_secret()  # set: only the gateway may call
    apps = {
        name: traced(
            create_app(pack, data_root, idle_timeout, secret, tool_timeout), "sopgym.tools"
        )
        for name, pack in packs.items()
    }
    serve(next(iter(apps.values())) if len(apps) == 1 else ToolServiceGroup(apps), host, port)


@main.command()
@HOST
@port_option(8000)
@click.option(
    "--service",
    "services",
    multiple=True,
    envvar="SOPGYM_GATEWAY_SERVICES",
    help="DOMAIN=URL of a tool service (DOMAIN=URL,URL,...: its replicas, each episode pinned "
    "to one); repeat for each domain ($SOPGYM_GATEWAY_SERVICES: space-separated).",
)
@click.option(
    "--advertise-url",
    default=None,
    envvar="SOPGYM_GATEWAY_ADVERTISE_URL",
    help="This replica's own base URL, returned at episode open so the episode's later "
    "requests reach this replica (replicated gateways; $SOPGYM_GATEWAY_ADVERTISE_URL).",
)
@click.option(
    "--advertise-grpc",
    default=None,
    envvar="SOPGYM_GATEWAY_ADVERTISE_GRPC",
    help="As --advertise-url, for gRPC: this replica's host:port ($SOPGYM_GATEWAY_ADVERTISE_GRPC).",
)
@click.option(
    "--local-domain",
    "local_domains",
    multiple=True,
    envvar="SOPGYM_GATEWAY_LOCAL_DOMAINS",
    help="Tool-free domains (answer-only, one-shot) the gateway serves itself: a name, a "
    "family or a glob; repeatable ($SOPGYM_GATEWAY_LOCAL_DOMAINS: space-separated).",
)
@DATA_ROOT
@click.option(
    "--distractors",
    default=0,
    show_default=True,
    type=click.IntRange(0),
    help="Extra, unneeded tools in each episode's catalog when its opener names no count.",
)
@click.option("--seed", default=0, show_default=True, help="Salts each task's distractor draw.")
@click.option("--grpc-port", type=PORT, default=None, help="Also serve the gRPC API on this port.")
@click.option(
    "--user-sim",
    default=None,
    envvar="SOPGYM_USER_SIM",
    help="Base URL of the user simulator that dialogue episodes talk to ($SOPGYM_USER_SIM).",
)
@click.option(
    "--faults",
    default=None,
    callback=fault_spec,
    help="Inject latency and failures into tool calls (docs/reliability.md), drawn from --seed.",
)
@click.option(
    "--discover-wait",
    default=30.0,
    show_default=True,
    envvar="SOPGYM_GATEWAY_DISCOVER_WAIT",
    type=click.FloatRange(0),
    help="Seconds to wait, all services together, for the tool services to list their tools "
    "at start-up ($SOPGYM_GATEWAY_DISCOVER_WAIT; compose and k8s start them together).",
)
@click.option(
    "--keep-episodes",
    default=100_000,
    show_default=True,
    envvar="SOPGYM_GATEWAY_KEEP_EPISODES",
    type=click.IntRange(1),
    help="Episodes whose records the gateway holds (open and finished; the oldest go first).",
)
@click.option(
    "--keep-mib",
    default=256,
    show_default=True,
    envvar="SOPGYM_GATEWAY_KEEP_MIB",
    type=click.IntRange(1),
    help="MiB the finished episodes' (compressed) records may hold; the oldest go first.",
)
def gateway(
    host: str,
    port: int,
    services: tuple[str, ...],
    local_domains: tuple[str, ...],
    data_root: Path | None,
    distractors: int,
    seed: int,
    grpc_port: int | None,
    user_sim: str | None,
    faults: str | None,
    discover_wait: float,
    keep_episodes: int,
    keep_mib: int,
    advertise_url: str | None,
    advertise_grpc: str | None,
) -> None:
    """Serve the gateway in front of the given tool services and tool-free domains (HTTP,
    and gRPC if asked)."""
    from sopgym.core.access import handed_secret, service_secret
    from sopgym.gateway.app import Gateway
    from sopgym.gateway.catalog import DiscoveryError, discover
    from sopgym.gateway.local import with_local_domains
    from sopgym.gateway.server import ServerError, serve, tune_gc
    from sopgym.observability.tracing import setup_tracing
    from sopgym.orchestration.stack import ADMIN_TOKEN_ENV

    if not services and not local_domains:
        raise click.UsageError("give at least one --service or --local-domain")
    try:
        local = select_domains(local_domains) if local_domains else []
    except UnknownDomainError as error:
        raise click.UsageError(str(error)) from None
    setup_tracing("sopgym-gateway")

    urls: dict[str, str | list[str]] = {}
    for item in services:
        name, sep, given = item.partition("=")
        replicas = [url.rstrip("/") for url in given.split(",")]
        if not sep or not all(url.startswith("http") for url in replicas):
            raise click.UsageError(f"--service takes DOMAIN=URL[,URL...], got {item!r}")
        urls[name] = replicas

    def waiting(domain: str, url: str, why: str) -> None:
        console.print(f"waiting for tool service {domain} at {url} ({escape(why)})")

    try:
        discovered = discover(urls, discover_wait, on_wait=waiting)
        catalog = with_local_domains(discovered, local, data_root)
    except (DiscoveryError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    if user_sim is not None and not user_sim.startswith("http"):
        raise click.UsageError(f"--user-sim takes the simulator's base URL, got {user_sim!r}")
    admin_token = handed_secret(ADMIN_TOKEN_ENV)
    from sopgym.gateway.faults import parse_faults

    plan = parse_faults(faults) if faults else None
    secret = service_secret()  # sent to the tool services on every request
    app = Gateway(
        catalog,
        distractors,
        admin_token,
        grpc_port,
        host,
        user_sim=user_sim,
        seed=seed,
        faults=plan,
        service_secret=secret,
        keep_episodes=keep_episodes,
        keep_bytes=keep_mib * 2**20,
        replica={k: v for k, v in (("http", advertise_url), ("grpc", advertise_grpc)) if v} or None,
    )
    tune_gc()
    try:
        serve(app, host, port)
    except ServerError as error:
        raise click.ClickException(str(error)) from None


@main.command("env-serve")
@click.option("--gateway", "gateway_url", required=True, help="The gateway's base URL.")
@click.option("--domain", "domains", multiple=True, required=True, help="Repeatable.")
@HOST
@port_option(8090)
@DATA_ROOT
@click.option(
    "--distractors",
    default=None,
    type=click.IntRange(0),
    help="Extra, unneeded tools in each episode's catalog (default: the gateway's own count).",
)
@click.option(
    "--max-steps",
    default=64,
    show_default=True,
    type=click.IntRange(1),
    help="Actions after which an episode that has not finished is truncated.",
)
@click.option(
    "--run-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Record every ended episode into this new run folder (view, show, compare read it); "
    "its summary is written when the server stops.",
)
@click.option(
    "--score-detail",
    is_flag=True,
    help="Answer the whole score (per-field correctness, call metrics), not just the verdict.",
)
def env_serve(
    gateway_url: str,
    domains: tuple[str, ...],
    host: str,
    port: int,
    data_root: Path | None,
    distractors: int | None,
    max_steps: int,
    run_dir: Path | None,
    score_detail: bool,
) -> None:
    """Serve the RL environment API (reset/step/state over HTTP) on the given gateway."""
    from sopgym.client.recorder import recorder_for
    from sopgym.env.server import build
    from sopgym.serving import serve

    for name in domains:
        _domain(name)
    try:
        recorder = recorder_for(run_dir, [*domains], agent="env", data_root=data_root,
                                source="env-serve")  # fmt: skip
    except FileExistsError as error:
        _fail(str(error))
    if recorder is not None:  # uvicorn re-raises the SIGTERM it stopped on: end, summarised
        import signal

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        serve(
            build(gateway_url, [*domains], data_root, distractors=distractors,
                  max_steps=max_steps, recorder=recorder, score_detail=score_detail),
            host,
            port,
        )  # fmt: skip
    finally:
        if recorder is not None:
            recorder.close()


@main.command("agent-worker")
@click.option(
    "--gateway",
    "gateway_url",
    required=True,
    help="The gateway: base URL (http transport) or host:port (grpc transport).",
)
@click.option(
    "--transport",
    type=click.Choice(list(TRANSPORTS)),
    default="http",
    show_default=True,
    help="How the worker reaches the gateway (the mcp agent always uses MCP).",
)
@click.option(
    "--agent",
    default="oracle",
    show_default=True,
    help=f"Agent: {AGENT_HELP}. The default differs from sopgym run's ({DEFAULT_AGENT}): a "
    "worker started by hand needs no model endpoint to prove the path; runs and shards name "
    "their agent.",
)
@click.option(
    "--model",
    default="scripted",
    show_default=True,
    help=MODEL_HELP,
)
@click.option("--base-url", default=None, help="The model's OpenAI-compatible endpoint (…/v1).")
@click.option(
    "--task-timeout", default=300.0, show_default=True, type=SECONDS, help="Seconds per task."
)
@click.option("--options", default="{}", help="Agent options as a JSON object.")
@shard_options
@click.option(
    "--metrics-port",
    type=PORT,
    default=None,
    help="Serve Prometheus metrics (GET /metrics) and GET /healthz on this port.",
)
@click.option(
    "--metrics-host",
    default="0.0.0.0",
    show_default=True,
    help="Address the --metrics-port server listens on.",
)
def agent_worker(
    gateway_url: str,
    transport: str,
    agent: str,
    model: str,
    base_url: str | None,
    task_timeout: float,
    options: str,
    metrics_port: int | None,
    metrics_host: str,
    **shard: Any,
) -> None:
    """Work tasks read as JSON lines on stdin, one result line per task on stdout; or, with
    --shard, one shard of --domain's tasks taken from the gateway, results in --run-dir."""
    from sopgym.agents.worker import serve
    from sopgym.observability.tracing import setup_tracing

    try:
        agent_options = orjson.loads(options)
    except orjson.JSONDecodeError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint="--options") from None
    if not isinstance(agent_options, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--options")
    setup_tracing("sopgym-agent-worker", {"gen_ai.agent.name": agent})
    observe = worker_metrics(agent, model, metrics_host, metrics_port)
    try:
        if shard["shard"] is not None:
            run_shard_command(
                gateway_url, transport, agent, model, base_url, task_timeout, agent_options,
                observe, **shard,
            )  # fmt: skip
            return
        if base_url:
            agent_options["base_url"] = base_url
        serve(
            agent,
            gateway_url,
            task_timeout,
            {"model": model, **agent_options},
            transport=transport,
            observe=observe,
        )
    except ModelUnavailable as error:
        _model_unavailable(error)
    except ValueError as error:  # a gateway address of the wrong form, found before any job
        raise click.BadParameter(str(error), param_hint="--gateway") from None


@main.command("model-server")
@HOST
@port_option(8200)
@click.option(
    "--domain",
    "domains",
    multiple=True,
    envvar="SOPGYM_MODEL_DOMAINS",
    help="Domain whose tasks the model knows (a name, a family or a glob); repeat (default: "
    "every domain; $SOPGYM_MODEL_DOMAINS: space-separated). Start-up generates only these.",
)
@click.option(
    "--profile",
    default="perfect",
    show_default=True,
    help="Error profile for requests whose model name does not say scripted:<profile>.",
)
@click.option(
    "--injection-log",
    type=click.Path(path_type=Path),
    default=None,
    help="JSONL file recording every mistake the model injects, per task.",
)
@DATA_ROOT
def model_server(
    host: str,
    port: int,
    domains: tuple[str, ...],
    profile: str,
    injection_log: Path | None,
    data_root: Path | None,
) -> None:
    """Serve the scripted model offline: OpenAI Chat Completions, Anthropic Messages and Bedrock
    Converse endpoints."""
    from sopgym.services.model.app import create_app
    from sopgym.services.model.profiles import ProfileError, parse_profile

    try:
        parse_profile(profile)
    except ProfileError as error:
        raise click.UsageError(f"--profile: {error}") from None
    try:
        domains = tuple(select_domains(domains)) if domains else ()
    except UnknownDomainError as error:
        raise click.UsageError(str(error)) from None
    from sopgym.observability.asgi import traced
    from sopgym.observability.tracing import setup_tracing
    from sopgym.serving import serve

    setup_tracing("sopgym-model")
    app = create_app(list(domains) or None, data_root, profile, injection_log)
    serve(traced(app, "sopgym.model"), host, port)


@main.command("user-sim")
@HOST
@port_option(8300)
@click.option(
    "--domain",
    "domains",
    multiple=True,
    help="Dialogue domain whose users to simulate; repeat (default: every dialogue domain).",
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of the rule-based users' choices (default: each domain's own, as in its gold).",
)
@click.option(
    "--model",
    default=None,
    help="Play the users with a language model (openai:<model>, anthropic:<model>, ...) "
    "instead of the domain's rules.",
)
@click.option("--base-url", default=None, help="The user model's OpenAI-compatible endpoint.")
@DATA_ROOT
def user_sim(
    host: str,
    port: int,
    domains: tuple[str, ...],
    seed: int | None,
    model: str | None,
    base_url: str | None,
    data_root: Path | None,
) -> None:
    """Serve the simulated users of dialogue domains (POST /v1/reply), for the gateway."""
    from sopgym.core.access import service_secret
    from sopgym.observability.asgi import traced
    from sopgym.observability.tracing import setup_tracing
    from sopgym.services.user.app import create_app
    from sopgym.services.user.simulator import NotADialogueDomain
    from sopgym.serving import serve

    names = list(domains) or [n for n in domain_names() if _domain(n).user is not None]
    if not names:
        raise click.UsageError("no dialogue domain to simulate users for")
    user_model = None
    if model is not None:
        from sopgym.services.user.llm_user import LLMUser

        _check_model_spec(model)
        try:
            user_model = LLMUser(model, base_url)
        except ModelUnavailable as error:
            _model_unavailable(error)
    for name in names:
        _domain(name)
    setup_tracing("sopgym-user-sim")
    try:
        app = create_app(names, data_root, seed, user_model, service_secret())
    except NotADialogueDomain as error:
        raise click.UsageError(str(error)) from None
    serve(traced(app, "sopgym.user"), host, port)

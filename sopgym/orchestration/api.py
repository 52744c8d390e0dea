"""The run API: what ``sopgym run`` does, for a Python caller.

``sopgym.run(RunConfig(domains=["patient_intake"], agent="oracle"))`` validates the config,
prepares the run folder, runs every selected task through the real stack and returns the run's
summary, a typed :class:`~sopgym.runs.records.RunSummary` (what ``summary.json`` holds,
and ``run_dir``). The ``sopgym run`` command is a thin layer over the same
functions: it adds the progress bar, ``--resume`` and the one-line refusals.

A config the run cannot honour (an unknown domain, agent, model spec, SOP variant or price
table; faults naming tools no domain has; the oracle on an imported benchmark without gold
calls) raises :class:`~sopgym.core.exceptions.UsageError` before anything starts or is written;
the command line turns it into one line and exit 2. Inspect's ``eval()`` under ``inspect eval``
is the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from sopgym.core.exceptions import UsageError
from sopgym.core.registry import load_domain, select_domains
from sopgym.core.tasks import Task
from sopgym.orchestration.runner import Attempt, Runner, new_run_id
from sopgym.orchestration.steps import StepFollower
from sopgym.runs.records import RunConfig, RunSummary

# The agents whose catalog ``tool_retrieval`` narrows (the others are not given a catalog).
RETRIEVAL_AGENTS = ("fc", "mcp")
# The agents that offer tools natively, whose turns ``tool_choice`` may force (react writes its
# calls as text; the oracle calls no model).
TOOL_CHOICE_AGENTS = ("fc", "plan", "mcp")


def validate(config: RunConfig) -> RunConfig:
    """``config`` with its domain patterns resolved to names (``maze/*``, a family, ``all``),
    or :class:`UsageError` saying what cannot run. Loads the domains and the agent, so a
    mistake is refused before any process starts."""
    from sopgym.agents import resolve_agent
    from sopgym.client.transports import transport
    from sopgym.importers.resolve import run_refusal
    from sopgym.orchestration.refusals import (
        base_url_refusal,
        unknown_fault_tools,
    )
    from sopgym.services.model.profiles import check_model_spec

    if not config.domains:
        raise UsageError("no domains: name at least one (a name, a family, 'all' or a glob)")
    if config.limit is not None and config.sample is not None:
        raise UsageError("--limit takes the first N tasks, --sample N at random: give one")
    names = select_domains(config.domains)
    domains = [load_domain(n) for n in names]
    refusal = run_refusal(config.agent, domains)
    if refusal:  # imported benchmarks have no gold calls to replay
        raise UsageError(refusal)
    refusal = unknown_fault_tools(config.faults, domains)
    if refusal:  # it would inject nothing, and the run would read as fault-free
        raise UsageError(refusal)
    lacking = [d for d in domains if config.sop_variant not in d.sop_files]
    if lacking:
        raise UsageError(
            f"no SOP variant {config.sop_variant!r} in {', '.join(d.name for d in lacking)} "
            f"(its variants: {', '.join(lacking[0].sop_files)})"
        )
    resolve_agent(config.agent)  # a name, a plug-in or module:Class, loaded before anything
    transport(config.transport)  # likewise
    check_model_spec(config.model)
    refusal = base_url_refusal(config.base_url)
    if refusal:
        raise UsageError(refusal)
    if config.agent_options.get("record_tokens"):  # a provider that returns no token ids
        from sopgym.agents.models import check_token_recording, parse_model_spec

        check_token_recording(parse_model_spec(config.model, config.base_url))
    if config.agent_options.get("tool_retrieval") and config.agent not in RETRIEVAL_AGENTS:
        raise UsageError("--tool-retrieval narrows the catalog of the fc and mcp "
                         f"agents, not of {config.agent}")  # fmt: skip
    options = tool_choice_options(config.agent, config.agent_options)
    if config.prices is not None:
        from sopgym.evaluation.llm_usage import read_prices

        read_prices(Path(config.prices))  # a PriceTableError: a UsageError
    return msgspec.structs.replace(config, domains=names, agent_options=options)


def tool_choice_options(agent: str, options: Any) -> Any:
    """``options`` with the ``tool_choice`` a native-tools agent will use written in (its
    default when none was given), so the run's config.json says which it was; a value that is
    not one of :data:`TOOL_CHOICES`, or given to an agent that offers no native tools, is a
    :class:`UsageError`."""
    from sopgym.agents.options import TOOL_CHOICES, default

    choice = options.get("tool_choice")
    if agent not in TOOL_CHOICE_AGENTS:
        if choice is not None:
            raise UsageError(f"--tool-choice forces the native tool calls of "
                             f"{', '.join(TOOL_CHOICE_AGENTS)}, not of {agent}")  # fmt: skip
        return options
    if choice is not None and choice not in TOOL_CHOICES:
        raise UsageError(f"tool_choice must be one of {', '.join(TOOL_CHOICES)}, got {choice!r}")
    return {**options, "tool_choice": choice or default("tool_choice")}


def new_run_dir(runs_dir: Path, run_id: str | None = None) -> Path:
    """The folder of a new run (``run_id`` or a fresh one); :class:`UsageError` when a run
    already lives there."""
    run_dir = Path(runs_dir) / (run_id or new_run_id())
    if (run_dir / "config.json").exists():
        raise UsageError(f"{run_dir} exists; use --resume {run_dir.name}")
    return run_dir


def stored_config(run_dir: Path) -> RunConfig:
    """The config of the run to resume in ``run_dir``; :class:`UsageError` when there is none
    or its domains no longer resolve (a pack removed since, or a config edited)."""
    if not (run_dir / "config.json").exists():
        raise UsageError(f"no run to resume at {run_dir}")
    try:
        config = RunConfig.read(run_dir / "config.json")
    except ValueError as error:
        raise UsageError(str(error)) from None
    select_domains(config.domains)
    return config


@dataclass
class PreparedRun:
    """A locked run folder: the run's tasks, the attempts still to run and how many
    infrastructure errors ``retry_infra`` dropped (None when not asked)."""

    tasks: list[Task]
    todo: list[Attempt]
    infra_retried: int | None = None


def prepare(runner: Runner, *, repair: bool = False, retry_infra: bool = False) -> PreparedRun:
    """Lock the run, apply ``repair`` / ``retry_infra`` and list its tasks and those to run.
    Raises :class:`~sopgym.runs.folder.RunLocked` (another runner holds it),
    :class:`~sopgym.core.jsonio.CorruptRow` (rerun with ``repair``) or
    :class:`~sopgym.orchestration.selection.SelectionError`."""
    tasks = runner.prepare()
    if repair:
        runner.repair()
    retried = runner.drop_infra_errors() if retry_infra else None
    return PreparedRun(tasks, runner.pending(tasks), retried)


def execute(
    runner: Runner,
    prepared: PreparedRun,
    on_result: Callable[[dict], None] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> RunSummary:
    """Run the prepared tasks through the stack and return the run's summary; ``on_result``
    sees each result row as it lands, ``on_step`` each model turn the workers log."""
    if on_step is None:  # nobody to show the steps to: no thread following the logs
        return runner.execute(prepared.tasks, on_result)
    with StepFollower(runner.paths.logs, on_step):
        return runner.execute(prepared.tasks, on_result)


def run(
    config: RunConfig,
    *,
    runs_dir: str | Path = "runs",
    run_id: str | None = None,
    data_root: Path | None = None,
    on_result: Callable[[dict], None] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> RunSummary:
    """Run ``config`` into ``runs_dir/run_id`` (a fresh id by default) and return its summary:
    the figures ``summary.json`` holds (``summary.tsr``, ``.tasks``, ``.correct`` ...;
    ``.to_json()`` is the file's object) and ``run_dir``, the folder that ``report``,
    ``view`` and ``compare`` read.

    Raises :class:`~sopgym.core.exceptions.UsageError` for a config that cannot run (before
    anything is written) and :class:`~sopgym.agents.models.ModelUnavailable` (a UsageError
    too) for a model that does not answer."""
    config = validate(config)
    run_dir = new_run_dir(Path(runs_dir), run_id)
    runner = Runner(config, run_dir, data_root)
    runner.check_model()
    summary = execute(runner, prepare(runner), on_result, on_step)
    summary.run_dir = str(run_dir)
    return summary


def score(
    responses: str | Path,
    domains: list[str],
    *,
    reader: str | None = None,
    model: str = "unknown",
    runs_dir: str | Path = "runs",
    run_id: str | None = None,
    task_ids: list[str] | None = None,
    match: str | None = None,
    sample: int | None = None,
    limit: int | None = None,
    seed: int = 0,
    data_root: Path | None = None,
) -> RunSummary:
    """Score responses produced elsewhere (a file or a folder of them, in the ``reader``
    format; detected when None) against the tasks ``domains`` select, into a new run folder
    that ``report``, ``view`` and ``compare`` read; its summary, with ``run_dir`` added.
    :func:`sopgym.orchestration.score.score_into_run` under ``sopgym score``; refusals
    (an unknown format or domain, an unreadable path, a folder that exists) are
    :class:`UsageError` before anything is written."""
    from sopgym.evaluation.external import EXTERNAL_AGENT
    from sopgym.orchestration.score import score_into_run

    config = RunConfig(domains=select_domains(domains), agent=EXTERNAL_AGENT, model=model,
                       workers=0, trace=False, task_ids=task_ids, match=match, sample=sample,
                       limit=limit, seed=seed)  # fmt: skip
    run_dir = Path(runs_dir) / (run_id or new_run_id())
    summary = score_into_run(config, run_dir, Path(responses), reader, data_root)
    summary.run_dir = str(run_dir)
    return summary


def evaluate(
    path: str | Path, *, data_root: Path | None = None, run_filter: str | None = None
) -> dict[str, Any]:
    """Evaluate stored traces: a run folder (against its config's task set; from its results
    when it ran without traces) or a file or folder of OTLP JSON (against the tasks it has
    traces of); the evaluation's summary. :func:`sopgym.evaluation.evaluator.evaluate_path`
    under ``sopgym eval``."""
    from sopgym.evaluation.evaluator import evaluate_path

    return dict(evaluate_path(Path(path), data_root, run_filter))

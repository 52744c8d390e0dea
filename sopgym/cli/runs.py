"""``sopgym runs | show | export``: find a run, read one task's trajectory, export the results;
and the checks of ``sopgym run --resume`` against a run's stored config.

Registered on the main group; heavy imports (pandas, the dataset) happen inside a command.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import msgspec
import orjson
from click.core import ParameterSource
from rich.markup import escape
from rich.table import Column, Table

from sopgym.agents import uses_model
from sopgym.core.jsonio import CorruptRow, write_atomic
from sopgym.core.registry import UnknownDomainError, select_domains
from sopgym.core.untrusted import csv_cell
from sopgym.evaluation.explain import field_verdicts
from sopgym.orchestration.runs import RunReader, episode_tokens, flat_row, list_runs, results
from sopgym.orchestration.show_why import print_why
from sopgym.runs.folder import RunPaths
from sopgym.runs.records import RunConfig
from sopgym.terminal import console, print_table, stdout
from sopgym.types import JSON

_RUNS_DIR = click.option(
    "--runs-dir",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="The folder of run folders (RUN may also be a run folder's path).",
)
CELL_CHARS = 300  # a tool result or argument longer than this is cut in `show` (--full: whole)


# A `sopgym run` option is part of the run's config when it names a RunConfig field: a resume
# refuses a value that differs from the stored one, except for --workers (how fast the run
# goes, not what it measures).
_FREE_ON_RESUME = frozenset({"workers", "concurrency"})
_GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def resumed_config(ctx: click.Context, stored: RunConfig) -> RunConfig:
    """``stored`` with the options given on the command line checked against it: a value
    that contradicts the stored one is a usage error naming the option and both values."""
    given = {
        name: value
        for name, value in ctx.params.items()
        if ctx.get_parameter_source(name) in _GIVEN
    }
    if given.get("run_id") not in (None, ctx.params["resume"]):
        raise click.UsageError("--run-id names a new run; --resume RUN_ID continues one")
    for name, value in given.items():
        if name not in RunConfig.field_names() or name in _FREE_ON_RESUME:
            continue
        if name == "domains":
            if not value:
                continue
            try:
                value = select_domains(list(value))
            except UnknownDomainError as error:
                raise click.UsageError(str(error)) from None
        kept = getattr(stored, name)
        if value != kept:
            raise click.UsageError(
                f"{_option_name(ctx, name, value)} {_shown(value)} contradicts the run's stored "
                f"{name} {_shown(kept)}: a resume keeps its run's config (start a new run "
                "to change it)"
            )
    # how the resume spreads its episodes is the resumer's to choose
    pace = {k: given[k] for k in ("workers", "concurrency") if given.get(k) is not None}
    return msgspec.structs.replace(stored, **pace) if pace else stored


def _option_name(ctx: click.Context, name: str, value: Any) -> str:
    param = next(p for p in ctx.command.params if p.name == name)
    if isinstance(param, click.Argument):
        return name.upper()
    assert isinstance(param, click.Option)
    if param.secondary_opts and value is False:
        return param.secondary_opts[0]
    return param.opts[0]


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return "none" if value is None else str(value)


# ---- sopgym runs ----
@click.command("runs")
@_RUNS_DIR
def runs_command(runs_dir: Path) -> None:
    """List the runs in the runs folder, newest first: when, what, how far, how well."""
    if not runs_dir.is_dir():
        raise click.UsageError(f"no runs folder at {runs_dir}")
    found, unreadable = list_runs(runs_dir)
    # the figures before the domains: at 80 columns the table folds, the domains go last
    headers = ["run", "created (UTC)", "state", "agent", "model", "faults", "seed", "tasks",
               "TSR", "tokens", "domains"]  # fmt: skip
    rows = []
    partial = False
    for run in found:
        config = run.config
        domains = config.domains
        shown = ", ".join(domains[:3]) + (f" +{len(domains) - 3}" if len(domains) > 3 else "")
        planned = "?" if run.planned is None else str(run.planned)
        tsr = "-" if run.tsr is None else f"{run.tsr:.1%}" + ("*" if run.tsr_partial else "")
        partial |= run.tsr_partial and run.tsr is not None
        rows.append([
            run.run_id,
            run.created.replace("T", " ").rstrip("Z"),
            run.state,
            config.agent,
            config.model if uses_model(config.agent) else "-",
            config.faults or "-",
            str(config.seed),
            f"{run.recorded}/{planned}",
            tsr,
            "-" if run.tokens is None else f"{run.tokens:,}",
            shown,
        ])  # fmt: skip
    if found:
        print_table(stdout(), headers, rows, numeric=range(6, 10), foldable=(10,))
    else:
        console.print(f"no runs in {runs_dir}")
    if partial:
        console.print("* over the episodes recorded so far (the run has no summary of them yet)")
    for path, why in unreadable:
        console.print(f"[yellow]unreadable run[/] {escape(str(path))}: {escape(why)}")


# ---- sopgym show ----
def run_folder(run: str, runs_dir: Path) -> Path:
    """RUN as a run id in the runs folder, or a run folder's path."""
    for candidate in (runs_dir / run, Path(run)):
        if (candidate / "config.json").is_file():
            return candidate
    raise click.UsageError(f"no run {run!r} (neither {runs_dir / run} nor {run} is a run folder)")


def _rows(root: Path) -> list[JSON]:
    try:
        return results(RunPaths(root))
    except CorruptRow as error:
        hint = "`sopgym run --resume RUN --repair` drops it"
        raise click.ClickException(f"{error}; {hint}") from None


@click.command("show")
@click.argument("run")
@click.argument("task_id", metavar="TASK")
@click.option(
    "--trial",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Which trial of the task (runs with --trials K have 0..K-1).",
)
@click.option(
    "--domain", default=None, help="The task's domain, where two of the run's domains share its id."
)
@click.option("--full", is_flag=True, help=f"Print long values whole (else cut at {CELL_CHARS}).")
@click.option(
    "--data-root",
    type=click.Path(path_type=Path),
    default=None,
    help="Where generated datasets are cached: a run that did not record its task inputs "
    "reads them from there (default: ~/.cache/sopgym).",
)
@_RUNS_DIR
def show_command(
    run: str,
    task_id: str,
    trial: int,
    domain: str | None,
    full: bool,
    data_root: Path | None,
    runs_dir: Path,
) -> None:
    """Print one task of RUN in the terminal: its input, every tool call with its arguments
    and result or error, the answer against the gold field by field, and the scores."""
    root = run_folder(run, runs_dir)
    rows = [r for r in _rows(root) if r["task_id"] == task_id and (domain in (None, r["domain"]))]
    domains = sorted({r["domain"] for r in rows})
    if len(domains) > 1:
        raise click.UsageError(f"task {task_id} is in {', '.join(domains)}: pick one with --domain")
    row = next((r for r in rows if r.get("trial", 0) == trial), None)
    if row is None:
        trials = sorted(r.get("trial", 0) for r in rows)
        raise click.UsageError(
            f"run {root.name} has no result for task {task_id} trial {trial}"
            + (f" (its trials: {', '.join(map(str, trials))})" if trials else "")
        )
    out = stdout()
    cut = None if full else CELL_CHARS
    score = row["score"]
    verdict = (
        "[red]INFRASTRUCTURE ERROR[/] (not scored)"
        if score.get("infra_error")
        else "[green]SUCCESS[/]"
        if score["success"]
        else "[red]FAILED[/]"
    )
    out.print(
        f"[bold]{escape(task_id)}[/] ({escape(row['domain'])}, trial {row.get('trial', 0)}) "
        f"in run {escape(root.name)}: {verdict}; status {escape(str(row.get('status')))}, "
        f"episode {escape(str(row.get('episode_id')))}, {row.get('elapsed_s') or 0:.2f} s"
    )
    if row.get("error"):
        out.print(f"error: {escape(str(row['error']))}")
    _print_input(out, row, data_root, cut)
    trajectory = row.get("trajectory") or {}
    _print_steps(out, trajectory.get("calls") or [], cut)
    if trajectory.get("messages"):
        out.print("[bold]conversation[/]")
    for message in trajectory.get("messages") or []:
        out.print(f"  [dim]{escape(str(message.get('role')))}:[/] "
                  f"{escape(_text(message.get('content'), cut))}")  # fmt: skip
    _print_model_calls(out, row)
    _print_answer(out, row, cut)
    _print_scores(out, score)
    print_why(out, row, cut)  # last: what a reader looks for first stays on screen


def _print_input(out: Any, row: JSON, data_root: Path | None, cut: int | None) -> None:
    inputs = row.get("inputs")
    if inputs is None:  # recorded in rows only lately: older runs read it from the dataset
        inputs = _dataset_inputs(row, data_root)
    out.print("[bold]input[/]")
    out.print(escape(_text(inputs, cut)))


def _dataset_inputs(row: JSON, data_root: Path | None) -> Any:
    from sopgym.core import dataset
    from sopgym.core.registry import load_domain

    try:
        data = dataset.load(load_domain(row["domain"]), data_root)
    except UnknownDomainError:
        return f"(not recorded, and domain {row['domain']} is not installed here)"
    task = next((t for t in data.tasks if t.id == row["task_id"]), None)
    return task.inputs if task else "(not recorded, and not in this machine's dataset)"


def _print_steps(out: Any, calls: list[JSON], cut: int | None) -> None:
    if not calls:
        out.print("[bold]steps[/]: no tool call")
        return
    if cut is None:  # --full: every value whole, as lines (a table's columns would cut them)
        out.print("[bold]steps[/]")
        for index, call in enumerate(calls, 1):
            refused = call.get("error_code")
            outcome = f"{call.get('status')} {refused}" if refused else "result"
            arguments, result = _text(call.get("arguments"), None), _text(call.get("result"), None)
            out.print(f"{index}. {escape(call['name'])} {escape(arguments)}\n   "
                      f"{escape(outcome)}: {escape(result)}", soft_wrap=True)  # fmt: skip
        return
    table = Table(
        Column("#", justify="right"), Column("tool", no_wrap=True), "arguments", "outcome",
        Column("ms", justify="right"), title="steps", title_justify="left",
    )  # fmt: skip
    for index, call in enumerate(calls, 1):
        name = call["name"]
        if call.get("distractor"):
            name += " (distractor)"
        elif not call.get("in_catalog", True):
            name += " (not in catalog)"
        if call.get("error_code"):
            where = f" field {call['error_field']}" if call.get("error_field") else ""
            outcome = f"[red]{call.get('status')} {escape(call['error_code'])}{escape(where)}[/]"
            if call.get("result") is not None:
                outcome += f"\n{escape(_text(call['result'], cut))}"
        else:
            outcome = escape(_text(call.get("result"), cut))
        table.add_row(
            str(index),
            escape(name),
            escape(_text(call.get("arguments"), cut)),
            outcome,
            f"{call.get('duration_ms') or 0:.1f}",
        )
    out.print(table)


def _print_model_calls(out: Any, row: JSON) -> None:
    calls = row.get("llm_calls") or []
    if not calls:
        return
    failed = sum(1 for c in calls if c.get("error"))
    tokens = episode_tokens(row)
    latency = sum(c.get("latency_s") or 0 for c in calls)
    out.print(
        f"[bold]model calls[/]: {len(calls)} ({failed} failed), "
        f"{'no token counts' if tokens is None else f'{tokens:,} tokens'}, {latency:.2f} s"
    )


def _print_answer(out: Any, row: JSON, cut: int | None) -> None:
    fields = row["score"].get("fields") or {}
    given, expected = row.get("outputs"), row.get("gold_outputs") or {}
    if given is None:
        out.print("[bold]answer[/]: none (the episode gave no final answer)")
    table = Table("field", "expected", "given", "", title="answer vs gold", title_justify="left")
    verdicts = field_verdicts(row)
    for name in dict.fromkeys([*expected, *fields]):
        verdict = verdicts.get(name, "not scored")
        mark = "-" if verdict == "not scored" else escape(verdict)
        mark = f"[green]{mark}[/]" if verdict.startswith("ok") else f"[red]{mark}[/]" \
            if verdict.startswith("wrong") else mark  # fmt: skip
        table.add_row(
            escape(name),
            escape(_text(expected.get(name), cut)),
            escape(_text((given or {}).get(name, "(missing)"), cut)),
            mark,
        )
    out.print(table)


def _print_scores(out: Any, score: JSON) -> None:
    table = Table("scorer", Column("value", justify="right"), "gates", "explanation",
                  title="scores", title_justify="left")  # fmt: skip
    for name, result in (score.get("scores") or {}).items():
        value = result.get("value")
        table.add_row(
            escape(name),
            "n/a" if value is None else f"{value:.3f}",
            "yes" if result.get("gates") else "",
            escape(str(result.get("explanation") or "")),
        )
    out.print(table)
    errors = ", ".join(f"{k}={v}" for k, v in (score.get("errors") or {}).items() if v)
    f1 = score.get("tool_f1")
    out.print(
        f"tool calls {score.get('calls')} vs {score.get('gold_calls')} gold, "
        f"F1 {'n/a' if f1 is None else f'{f1:.3f}'}; errors: {errors or 'none'}"
    )
    if score.get("infra_error"):
        out.print(f"infrastructure error: {escape(score['infra_error'])}")


def _text(value: Any, cut: int | None) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if cut is None or len(text) <= cut else text[: cut - 1] + "…"


# ---- sopgym export ----
FORMATS = ("parquet", "csv", "jsonl", "inspect", "hf")


@click.command("export")
@click.argument("run")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="csv",
    show_default=True,
    help="parquet (needs pyarrow: pip install 'sopgym[parquet]'), csv, jsonl, or inspect "
    "(an Inspect eval log, .eval or .json; needs inspect-ai: pip install inspect-ai) or hf "
    "(a Hugging Face dataset folder: the parquet data and a dataset card; needs pyarrow).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="The file to write ('-': stdout, csv and jsonl only; default: <run>/export.<format>; "
    "hf: the folder, default <run>/export-hf).",
)
@_RUNS_DIR
def export_command(run: str, fmt: str, out: Path | None, runs_dir: Path) -> None:
    """Export RUN's results, one row per task (and trial) with its scores flattened into
    columns (score.<scorer>, errors.<kind>, output/gold/field_ok.<field>, tokens)."""
    root = run_folder(run, runs_dir)
    to_stdout = out is not None and str(out) == "-"
    if fmt == "inspect":
        if to_stdout:
            raise click.UsageError("--format inspect writes a file: give --out PATH")
        _export_inspect(root, out)
        return
    if fmt in ("parquet", "hf"):
        if to_stdout:
            raise click.UsageError(f"--format {fmt} writes files: give --out PATH")
        _require_parquet_engine()
    rows = _rows(root)
    frame = export_frame(rows)
    if to_stdout:
        text = _csv(frame) if fmt == "csv" else _jsonl(frame)
        sys.stdout.write(text)
        return
    if fmt == "hf":
        from sopgym.orchestration.hf_dataset import write_hf_dataset

        config = orjson.loads((root / "config.json").read_bytes())
        folder = write_hf_dataset(frame, rows, config, root.name, out or root / "export-hf")
        console.print(f"wrote {len(frame)} rows and a dataset card to {folder}")
        return
    target = out or root / f"export.{fmt}"
    # owner-only like every file that carries the gold (write_atomic)
    if fmt == "parquet":
        write_atomic(target, frame.to_parquet(None, index=False))
    elif fmt == "csv":
        write_atomic(target, _csv(frame).encode())
    else:
        write_atomic(target, _jsonl(frame).encode())
    console.print(f"wrote {len(frame)} rows, {len(frame.columns)} columns to {target}")


def _export_inspect(root: Path, out: Path | None) -> None:
    """The run as an Inspect eval log (:mod:`sopgym.interop.inspect_log`)."""
    import importlib.util

    if importlib.util.find_spec("inspect_ai") is None:
        raise click.ClickException("--format inspect needs inspect-ai: pip install inspect-ai")
    from sopgym.interop.inspect_log import write_inspect_log
    from sopgym.viewer.traces import episode_traces

    config = orjson.loads((root / "config.json").read_bytes())
    rows = _rows(root)
    traces = episode_traces(RunReader(root))  # the captured model calls, when traced
    target = write_inspect_log(rows, config, root.name, out or root / "export.eval", traces)
    console.print(f"wrote {len(rows)} samples to {target}")
    console.print(f"open it with: inspect view --log-dir {target.parent}")


def export_frame(rows: list[JSON]) -> Any:
    """The results as one flat table (pandas): absent error kinds are 0, absent fields (a
    domain without them) are empty."""
    import pandas as pd

    frame = pd.DataFrame([flat_row(r) for r in rows])
    counts = [c for c in frame.columns if c.startswith("errors.")]
    if counts:
        frame[counts] = frame[counts].fillna(0).astype(int)
    return frame


def _csv(frame: Any) -> str:
    """The table as CSV whose cells no spreadsheet runs as formulas (:func:`csv_cell`)."""
    text: str = frame.map(csv_cell).to_csv(index=False)
    return text


def _jsonl(frame: Any) -> str:
    text: str = frame.to_json(orient="records", lines=True)
    return text if text.endswith("\n") or not text else text + "\n"


def _require_parquet_engine() -> None:
    import importlib.util

    if not any(importlib.util.find_spec(engine) for engine in ("pyarrow", "fastparquet")):
        raise click.ClickException(
            "--format parquet needs pyarrow: pip install 'sopgym[parquet]' "
            "(or export --format csv or jsonl)"
        )


RUNS_COMMANDS: list[click.Command] = [runs_command, show_command, export_command]

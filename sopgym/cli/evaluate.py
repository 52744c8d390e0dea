"""``sopgym eval | report | compare``: the evaluation commands (the scoring itself lives in
:mod:`sopgym.evaluation`).

They are registered on the main ``sopgym`` group; heavy imports happen inside each command so
``sopgym --help`` and the other commands stay fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from sopgym.cli.validation import DATA_ROOT
from sopgym.terminal import console

RUNS_DIR = click.option(
    "--runs-dir",
    type=click.Path(path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Where run ids are looked up (a RUN that is a path is taken as it is).",
)


def run_path(run: str | Path, runs_dir: Path) -> Path:
    """A run given by its path or by its id in ``runs_dir``; neither is one line, exit 2."""
    path = Path(run)
    if path.exists():
        return path
    if (runs_dir / str(run)).is_dir():
        return runs_dir / str(run)
    raise click.UsageError(f"no run {str(run)!r} (neither {runs_dir / str(run)} nor {run} exists)")


def _parse_duration(text: str) -> timedelta:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        return timedelta(seconds=float(text[:-1]) * units[text[-1]])
    except (KeyError, ValueError, IndexError):
        raise click.BadParameter(f"expected e.g. 30m, 24h, 7d; got {text!r}") from None


def _evaluate(
    source: Path | None,
    jaeger: str | None,
    service: str,
    lookback: str,
    trace_ids: tuple[str, ...],
    run_id: str | None,
    data_root: Path | None,
) -> dict:
    from sopgym.evaluation.evaluator import TaskSet, evaluate
    from sopgym.evaluation.sources import fetch_jaeger
    from sopgym.observability.semconv import EVALUATED_SCOPES

    if (source is None) == (jaeger is None):
        raise click.UsageError("give either a run folder / trace file, or --jaeger URL")
    if jaeger is not None:
        import httpx

        from sopgym.observability.otlp import TraceFormatError

        try:
            spans = fetch_jaeger(
                jaeger,
                service,
                _parse_duration(lookback),
                trace_ids=list(trace_ids),
                scopes=EVALUATED_SCOPES,
            )
        except (httpx.HTTPError, TraceFormatError) as error:
            raise click.ClickException(f"Jaeger at {jaeger}: {error}") from None
        return evaluate(spans, TaskSet(data_root), run_filter=run_id, source=jaeger)
    return scored(source, data_root, run_id)  # type: ignore[arg-type]


@contextmanager
def unreadable_as_usage_error() -> Iterator[None]:
    """A run's input errors as one clear line: a usage error when nothing is there, exit 1 when
    what is there is not a run's rows or trace data."""
    from sopgym.core.jsonio import CorruptRow
    from sopgym.observability.otlp import TraceFormatError
    from sopgym.runs.records import UnreadableConfig

    try:
        yield
    except FileNotFoundError as error:
        raise click.UsageError(str(error)) from None
    except (CorruptRow, UnreadableConfig) as error:
        raise click.ClickException(f"unreadable run: {error}") from None
    except TraceFormatError as error:
        raise click.ClickException(f"unreadable traces: {error}") from None


def scored(path: Path, data_root: Path | None, run_id: str | None = None) -> dict:
    """:func:`evaluate_path`, its input errors as one clear line."""
    from sopgym.evaluation.evaluator import evaluate_path

    with unreadable_as_usage_error():
        return evaluate_path(path, data_root, run_id)


_Command = TypeVar("_Command", bound=Callable[..., Any])


def _source_options(command: _Command) -> _Command:
    for option in reversed(
        [
            click.argument("source", type=click.Path(path_type=Path), required=False),
            click.option("--jaeger", default=None, help="Jaeger query URL (uses /api/v3/traces)."),
            click.option(
                "--service",
                default="sopgym-gateway",
                show_default=True,
                help="With --jaeger: the service whose traces to fetch.",
            ),
            click.option("--lookback", default="24h", show_default=True, help="Jaeger window."),
            click.option("--trace-id", "trace_ids", multiple=True, help="Fetch these traces only."),
            click.option("--run-id", default=None, help="Only episodes of this run id."),
            DATA_ROOT,
            RUNS_DIR,
        ]
    ):
        command = option(command)
    return command


@click.command("eval")
@_source_options
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write results JSON here ('-': stdout; default: <run>/eval.json for a run folder).",
)
def eval_command(
    source: Path | None,
    jaeger: str | None,
    service: str,
    lookback: str,
    trace_ids: tuple[str, ...],
    run_id: str | None,
    data_root: Path | None,
    runs_dir: Path,
    out: Path | None,
) -> None:
    """Score stored traces (a run folder or run id, an OTLP JSON file, or Jaeger) without
    re-running."""
    from sopgym.core.jsonio import dumps, write_atomic
    from sopgym.evaluation.report import print_summary
    from sopgym.evaluation.sources import is_run_dir

    if source is not None:
        source = run_path(source, runs_dir)

    result = _evaluate(source, jaeger, service, lookback, trace_ids, run_id, data_root)
    print_summary(result, console)  # stderr: stdout may carry the JSON
    if out is None and source is not None and is_run_dir(source):
        out = source / "eval.json"
    if out is None or str(out) == "-":
        sys.stdout.buffer.write(dumps(result) + b"\n")
    elif out.exists() and not out.is_file():  # a device or pipe: never replace it
        out.write_bytes(dumps(result) + b"\n")
    else:
        write_atomic(out, dumps(result))
        console.print(f"results: {out}")


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path), metavar="RUN")
@click.option(
    "--jaeger-ui",
    default=None,
    envvar="SOPGYM_JAEGER_UI",
    help="Base URL of a Jaeger UI holding the run's traces: trace ids link to it (without "
    "it they are plain ids: a link to a Jaeger nobody set up leads nowhere).",
)
@DATA_ROOT
@RUNS_DIR
def report_command(
    run_dir: Path, jaeger_ui: str | None, data_root: Path | None, runs_dir: Path
) -> None:
    """Write <run>/report.md and a self-contained <run>/report.html from the run's traces
    (RUN: a run id or a run folder's path)."""
    run_dir = run_path(run_dir, runs_dir)
    if not run_dir.is_dir():
        raise click.UsageError(f"{run_dir} is not a run folder")
    write_run_report(run_dir, data_root, jaeger_ui)


def write_run_report(run_dir: Path, data_root: Path | None, jaeger_ui: str | None = None) -> None:
    """:func:`sopgym.orchestration.run_report.write_run_report`, saying what it wrote; its input
    errors as one clear line."""
    from sopgym.orchestration.run_report import write_run_report as write_reports

    with unreadable_as_usage_error():
        written = write_reports(run_dir, data_root, jaeger_ui)
    for path in written:
        console.print(f"wrote {path}")


@click.command("compare")
@click.argument("run_a", type=click.Path(path_type=Path))
@click.argument("run_b", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the deltas as JSON.")
@DATA_ROOT
@RUNS_DIR
def compare_command(
    run_a: Path, run_b: Path, as_json: bool, data_root: Path | None, runs_dir: Path
) -> None:
    """Metric deltas (B - A) overall and per domain over the tasks both runs scored (a warning
    counts the others), and the tasks that flipped. RUN_A, RUN_B: run ids or paths."""
    from sopgym.core.jsonio import dumps
    from sopgym.evaluation.compare import compare, print_comparison
    from sopgym.terminal import stdout

    run_a, run_b = run_path(run_a, runs_dir), run_path(run_b, runs_dir)

    deltas = compare(scored(run_a, data_root), scored(run_b, data_root))
    if deltas["warning"]:  # stderr: stdout may carry the JSON
        console.print(f"[yellow]warning[/]: {deltas['warning']}", markup=True)
    if as_json:
        sys.stdout.buffer.write(dumps(deltas) + b"\n")
    else:
        print_comparison(deltas, str(run_a), str(run_b), stdout())


EVALUATION_COMMANDS = [eval_command, report_command, compare_command]

"""A run's report from its traces: ``eval.json``, ``report.md`` and ``report.html`` beside
them (``sopgym report``, ``sopgym merge --report``, the run service's last step)."""

from __future__ import annotations

from pathlib import Path

from sopgym.core.jsonio import dumps, write_atomic
from sopgym.orchestration.runs import RunReader
from sopgym.terminal import console


def write_run_report(
    run_dir: Path, data_root: Path | None, jaeger_ui: str | None = None
) -> list[Path]:
    """Score the run's traces; write eval.json, report.md and report.html beside them, headed
    by the run's whole config; the reports' paths. A folder that is not there raises
    :class:`FileNotFoundError`, unreadable rows or traces their own errors (the command line
    turns each into one line)."""
    from sopgym.evaluation.evaluator import evaluate_path
    from sopgym.evaluation.report import write_reports
    from sopgym.evaluation.sources import is_run_dir

    result = evaluate_path(run_dir, data_root)
    write_atomic(run_dir / "eval.json", dumps(result))
    run = RunReader(run_dir)
    if is_run_dir(run_dir):  # pass^k / pass@k: the run's summary has them over its trials
        result.setdefault("trials", run.summary().get("trials"))
    recorded = run.rows()  # the failed tasks' details
    config = run.describe() if is_run_dir(run_dir) else None  # a bare trace store has none
    return write_reports(result, run_dir, jaeger_ui, recorded, config)


def write_report_if_traced(run_dir: Path, data_root: Path | None) -> None:
    """The evaluator's report over the run's trace store, when the run was traced."""
    from sopgym.evaluation.sources import trace_files

    if not trace_files(run_dir):
        console.print(f"no traces under {run_dir}: report skipped")
        return
    for path in write_run_report(run_dir, data_root):
        console.print(f"wrote {path}")

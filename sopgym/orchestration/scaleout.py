"""What the microservice commands share with the run service: the agent worker's metrics,
the report of a traced run, a report folder's default place (the commands themselves live in
:mod:`sopgym.cli.scaleout`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from sopgym.evaluation.records import WorkerReport
from sopgym.terminal import console
from sopgym.types import JSON

Observer = Callable[[WorkerReport, JSON | None], None]
RUNS_DIR_ENV = "SOPGYM_RUNS_DIR"
TRACE_SETTLE_S = 5.0  # > OTEL_BSP_SCHEDULE_DELAY (1 s in compose/k8s) + the Collector's batch


def worker_metrics(agent: str, model: str, host: str, port: int | None) -> Observer | None:
    """The worker's metrics, served on ``port`` (and exported over OTLP when configured);
    returns what to call with each report, or ``None`` when neither is wanted."""
    from sopgym.observability.metrics import Metrics, otlp_metrics_requested, serve_metrics

    if port is None and not otlp_metrics_requested():
        return None
    from sopgym.agents.metrics import WorkerMetrics, episode_facts

    metrics = Metrics("sopgym-agent-worker")
    instruments = WorkerMetrics(metrics, agent, model)
    if port is not None:
        serve_metrics(metrics, host, port)
    return lambda report, record: instruments.observe(episode_facts(report, record))


def write_report_if_traced(run_dir: Path, data_root: Path | None) -> None:
    """The evaluator's report over the run's trace store, when the run was traced."""
    from sopgym.evaluation.report import write_run_report
    from sopgym.evaluation.sources import trace_files

    if not trace_files(run_dir):
        console.print(f"no traces under {run_dir}: report skipped")
        return
    for path in write_run_report(run_dir, data_root):
        console.print(f"wrote {path}")


def default_out(name: str) -> Path:
    """A report folder under ``$SOPGYM_RUNS_DIR`` (default ``runs``): the compose and k8s
    containers set it to their mounted runs volume, so a ``--rm`` container's report stays."""
    from sopgym.orchestration.runner import new_run_id

    return Path(os.environ.get(RUNS_DIR_ENV, "runs")) / f"{name}-{new_run_id()}"

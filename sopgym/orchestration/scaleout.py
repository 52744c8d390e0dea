"""What the microservice commands share with the run service: the agent worker's metrics, how
long a run's last spans take to settle, a report folder's default place (the commands
themselves live in :mod:`sopgym.cli.scaleout`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from sopgym.runs.records import WorkerReport
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


def default_out(name: str) -> Path:
    """A report folder under ``$SOPGYM_RUNS_DIR`` (default ``runs``): the compose and k8s
    containers set it to their mounted runs volume, so a ``--rm`` container's report stays."""
    from sopgym.orchestration.runner import new_run_id

    return Path(os.environ.get(RUNS_DIR_ENV, "runs")) / f"{name}-{new_run_id()}"

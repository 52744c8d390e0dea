"""Tracing for the embedded stack: the run's own OTLP receiver, and the environment that
points every child process at it.

The collector starts before anything else so no child ever exports into the void, and it is
stopped last (children stop in reverse start order), after every child has flushed its spans
on shutdown.
"""

from __future__ import annotations

import os
from pathlib import Path

from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command

FORWARD_ENV = "SOPGYM_OTLP_FORWARD"  # also relay the run's spans here (e.g. a local Jaeger)

# Defaults for the run; a value already in the environment wins.
_TUNABLE = {
    "OTEL_BSP_SCHEDULE_DELAY": "500",  # ms: spans reach the store soon after they end
    "OTEL_BSP_MAX_QUEUE_SIZE": "65536",  # a burst of fast oracle calls must not drop spans
}


def exporter_env(collector_url: str) -> dict[str, str]:
    """``OTEL_*`` settings that send a child's spans to ``collector_url``.

    Sampling is forced on: the trace store is the evaluation record, and a sampled-out
    episode would be scored as incomplete.
    """
    env = {
        "OTEL_SDK_DISABLED": "false",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "none",  # the run's receiver stores traces only
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector_url,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{collector_url}/v1/traces",
        "OTEL_TRACES_SAMPLER": "parentbased_always_on",
        "OTEL_SERVICE_NAME": "",  # each child names itself (sopgym-gateway, sopgym-tools, ...)
    }
    env.update({k: os.environ.get(k, v) for k, v in _TUNABLE.items()})
    return env


def start_collector(group: ProcessGroup, out_dir: Path, logs: Path) -> dict[str, str]:
    """Start ``sopgym collector`` writing to ``out_dir``; return the children's OTEL env."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    forward = [a for u in os.environ.get(FORWARD_ENV, "").split(",") if u for a in ("--forward", u)]
    group.start(
        "collector",
        sopgym_command("collector", "--port", str(port), "--out", str(out_dir), *forward),
        logs / "collector.log",
        ready_url=f"{url}/readyz",
    ).wait_ready()
    return exporter_env(url)

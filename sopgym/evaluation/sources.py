"""Where the evaluator's spans come from: a run folder's trace store, OTLP JSON files, or
Jaeger's query API v3 (which answers OTLP JSON, so one parser serves all three)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from sopgym.observability.otlp import SpanBatch, paused_gc, read_batch, read_spans

TRACE_DIR = "traces"  # the trace store's folder inside a run folder
GATEWAY_SERVICE = "sopgym-gateway"  # every episode has gateway spans: query Jaeger by it


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").exists()


def trace_files(path: Path) -> list[Path]:
    """The OTLP JSON files behind a run folder, a trace-store folder, or a single file."""
    if path.is_file():
        return [path]
    folder = path / TRACE_DIR if is_run_dir(path) else path
    return sorted(p for p in folder.glob("*.json*") if p.is_file())


def load_spans(path: Path, scopes: frozenset[str] | None = None) -> SpanBatch:
    """The spans under ``path`` (of ``scopes`` only, when given: see :func:`read_batch`)."""
    if not path.exists():
        raise FileNotFoundError(f"no trace data at {path}")
    return read_spans(trace_files(path), scopes)


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def jaeger_query(
    service: str = GATEWAY_SERVICE,
    lookback: timedelta = timedelta(hours=24),
    limit: int = 10_000,
    now: datetime | None = None,
) -> dict[str, str]:
    """Query parameters of ``GET /api/v3/traces`` for every trace touching ``service``."""
    end = now or datetime.now(UTC)
    return {
        "query.service_name": service,
        "query.start_time_min": _rfc3339(end - lookback),
        "query.start_time_max": _rfc3339(end),
        "query.num_traces": str(limit),
        "query.search_depth": str(limit),
    }


def fetch_jaeger(
    base_url: str,
    service: str = GATEWAY_SERVICE,
    lookback: timedelta = timedelta(hours=24),
    limit: int = 10_000,
    trace_ids: list[str] | None = None,
    timeout: float = 60.0,
    scopes: frozenset[str] | None = None,
    transport: httpx.BaseTransport | None = None,
) -> SpanBatch:
    """Spans from a Jaeger query service: by trace id, or every trace of ``service`` in the
    lookback window. A 404 (no traces found) is an empty answer, not an error."""
    base = base_url.rstrip("/")
    bodies: list[bytes] = []
    with httpx.Client(timeout=timeout, transport=transport) as client:
        if trace_ids:
            for trace_id in trace_ids:
                response = client.get(f"{base}/api/v3/traces/{trace_id}")
                if response.status_code != 404:
                    bodies.append(response.raise_for_status().content)
        else:
            response = client.get(
                f"{base}/api/v3/traces", params=jaeger_query(service, lookback, limit)
            )
            if response.status_code != 404:
                bodies.append(response.raise_for_status().content)
    batch = SpanBatch()
    with paused_gc():
        for body in bodies:
            read_batch(body, scopes, batch)
    return batch

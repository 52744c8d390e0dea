"""Process metrics: a Prometheus scrape endpoint always, OpenTelemetry metrics when exported.

The gateway counts every tool call, so the hot path must stay cheap: instruments update plain
dictionaries (well under a microsecond) and the Prometheus text exposition (format 0.0.4) is
written here at scrape time, with no client library. When an OTLP endpoint is configured (the
standard ``OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT`` variables, as in compose and Kubernetes)
each instrument has an OpenTelemetry twin of the same name, exported periodically by the SDK,
so a cluster's dashboard sees the same figures either way: counters and gauges are observable
instruments that read these dictionaries when the SDK collects; histograms, which have no
observable form, record each value in the SDK as well.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger("sopgym.metrics")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
# Latency buckets in seconds: sub-millisecond tool calls up to minute-long LLM calls.
LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 120.0,
)  # fmt: skip
Labels = tuple[str, ...]


def otlp_metrics_requested(env: Mapping[str, str] = os.environ) -> bool:
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() in ("none", ""):
        return False
    return any(env.get(name) for name in ENDPOINT_VARS)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    parts = [f'{n}="{_escape(str(v))}"' for n, v in zip(names, values, strict=True)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _number(value: float) -> str:
    if value == float("inf"):
        return "+Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Counter:
    """A monotonically increasing count per label set."""

    kind = "counter"

    def __init__(self, name: str, help: str, labels: Sequence[str]) -> None:
        self.name, self.help, self.label_names = name, help, tuple(labels)
        self.values: dict[Labels, float] = {}

    def add(self, labels: Labels = (), value: float = 1.0) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + value

    def observations(self, _options: Any = None) -> list[Any]:
        """The totals, for an OpenTelemetry observable counter: read when the SDK collects,
        so the hot path never pays the SDK's ~15 µs a synchronous update costs."""
        from opentelemetry.metrics import Observation

        return [
            Observation(value, dict(zip(self.label_names, labels, strict=True)))
            for labels, value in list(self.values.items())  # list(): one atomic copy
        ]

    def exposition(self) -> list[str]:
        full = f"{self.name}_total"
        lines = [f"# HELP {full} {self.help}", f"# TYPE {full} counter"]
        for labels, value in sorted(self.values.items()):
            lines.append(f"{full}{_labels(self.label_names, labels)} {_number(value)}")
        return lines


class Histogram:
    """Cumulative buckets, sum and count per label set (seconds, by Prometheus convention)."""

    kind = "histogram"

    def __init__(
        self,
        name: str,
        help: str,
        labels: Sequence[str],
        buckets: Sequence[float] = LATENCY_BUCKETS,
        otel: Any = None,
    ) -> None:
        self.name, self.help, self.label_names = name, help, tuple(labels)
        self.bounds = tuple(sorted(buckets))
        self.series: dict[Labels, list[float]] = {}  # per bucket counts..., +Inf, sum
        self._otel = otel
        self._attributes: dict[Labels, dict[str, str]] = {}  # the OTel form of each label set

    def observe(self, value: float, labels: Labels = ()) -> None:
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = [0.0] * (len(self.bounds) + 2)
        series[bisect.bisect_left(self.bounds, value)] += 1
        series[-1] += value
        if self._otel is not None:
            attributes = self._attributes.get(labels)
            if attributes is None:
                attributes = self._attributes[labels] = dict(
                    zip(self.label_names, labels, strict=True)
                )
            self._otel.record(value, attributes)

    def exposition(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        for labels, series in sorted(self.series.items()):
            cumulative = 0.0
            for bound, count in zip((*self.bounds, float("inf")), series, strict=False):
                cumulative += count
                le = f'le="{_number(bound)}"'
                lines.append(
                    f"{self.name}_bucket{_labels(self.label_names, labels, le)} "
                    f"{_number(cumulative)}"
                )
            tags = _labels(self.label_names, labels)
            lines.append(f"{self.name}_sum{tags} {_number(series[-1])}")
            lines.append(f"{self.name}_count{tags} {_number(cumulative)}")
        return lines


class Gauge:
    """A value read when scraped (and when OpenTelemetry collects)."""

    kind = "gauge"

    def __init__(self, name: str, help: str, read: Callable[[], float]) -> None:
        self.name, self.help, self.read = name, help, read

    def exposition(self) -> list[str]:
        return [
            f"# HELP {self.name} {self.help}",
            f"# TYPE {self.name} gauge",
            f"{self.name} {_number(self.read())}",
        ]


class Metrics:
    """A process's instruments. Names are Prometheus names (``sopgym_gateway_tool_calls``);
    the OpenTelemetry mirror uses the same names."""

    def __init__(self, service: str, otel: bool | None = None) -> None:
        self.service = service
        self.instruments: list[Counter | Histogram | Gauge] = []
        export = otlp_metrics_requested() if otel is None else otel
        self._meter = _otel_meter(service) if export else None

    def counter(self, name: str, help: str, labels: Sequence[str] = ()) -> Counter:
        counter = Counter(name, help, labels)
        if self._meter is not None:
            self._meter.create_observable_counter(
                name, callbacks=[counter.observations], description=help
            )
        return self._add(counter)

    def histogram(
        self,
        name: str,
        help: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] = LATENCY_BUCKETS,
    ) -> Histogram:
        otel = None
        if self._meter is not None:
            otel = self._meter.create_histogram(
                name, unit="s", description=help, explicit_bucket_boundaries_advisory=list(buckets)
            )
        return self._add(Histogram(name, help, labels, buckets, otel))

    def gauge(self, name: str, help: str, read: Callable[[], float]) -> Gauge:
        if self._meter is not None:
            from opentelemetry.metrics import Observation

            self._meter.create_observable_gauge(
                name, callbacks=[lambda _options: [Observation(read())]], description=help
            )
        return self._add(Gauge(name, help, read))

    def _add(self, instrument: Any) -> Any:
        self.instruments.append(instrument)
        return instrument

    def exposition(self) -> bytes:
        """Every instrument in the Prometheus text format."""
        lines: list[str] = []
        for instrument in self.instruments:
            lines += instrument.exposition()
        return ("\n".join(lines) + "\n").encode()


def _otel_meter(service: str) -> Any:
    """A meter whose MeterProvider exports over OTLP/HTTP; ``None`` if the SDK is missing."""
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
    except ImportError:  # pragma: no cover - the SDK is a dependency
        log.warning("OpenTelemetry metrics SDK unavailable: Prometheus endpoint only")
        return None
    resource = Resource.create({
        "service.name": os.environ.get("OTEL_SERVICE_NAME") or service,
        "service.namespace": "sopgym",
    })
    provider = MeterProvider(
        resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
    )
    return provider.get_meter("sopgym")


def serve_metrics(metrics: Metrics, host: str, port: int) -> ThreadingHTTPServer:
    """Serve ``GET /metrics`` (and ``GET /healthz``) from a daemon thread: for processes
    without an HTTP server of their own, such as agent workers."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] == "/metrics":
                body, kind = metrics.exposition(), CONTENT_TYPE
            elif self.path in ("/healthz", "/readyz"):
                body, kind = b'{"status": "ok"}', "application/json"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:  # scrapes are not worth a log line
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server

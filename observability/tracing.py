"""Process-wide OpenTelemetry setup, driven by the standard ``OTEL_*`` environment variables.

Every sopgym process (agent worker, gateway, tool services, model server) calls
:func:`setup_tracing` once with its service name. Tracing is on when an OTLP endpoint is
configured (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``) and not
disabled (``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``); without an endpoint a
process runs untraced rather than retrying a collector that is not there. Spans leave through
the SDK's BatchSpanProcessor (``OTEL_BSP_*``) and the OTLP/HTTP protobuf exporter, so the
request path only pays for building spans, never for sending them.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import signal
import threading
from collections.abc import Mapping
from typing import Any

import orjson
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import NonRecordingSpan

import sopgym
from sopgym.core.normalized import normalize
from sopgym.core.stopping import terminate
from sopgym.observability.lean import LeanTracer, current_traceparent, remote_parent

log = logging.getLogger("sopgym.observability")

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PAYLOAD_LIMIT_ENV = "SOPGYM_TRACE_PAYLOAD_LIMIT"
DEFAULT_PAYLOAD_LIMIT = 4096  # bytes of tool arguments / results kept on a span
SIGTERM_FLUSH_S = 3.0  # what a stopping process gives its last spans (a live receiver: ms)
OUTPUTS_LIMIT = 65536  # final outputs are scored from the span, so they get a larger cap

_provider: TracerProvider | None = None
_processor: BatchSpanProcessor | None = None


def tracing_requested(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for spans to be exported."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() in ("none", ""):
        return False
    return any(env.get(name) for name in ENDPOINT_VARS)


def setup_tracing(
    service: str,
    attributes: Mapping[str, Any] | None = None,
    *,
    endpoint: str | None = None,
) -> TracerProvider | None:
    """Install the global tracer provider for this process; ``None`` when tracing is off.

    ``service`` names the resource unless ``OTEL_SERVICE_NAME`` overrides it (compose and k8s
    set it per container); ``OTEL_RESOURCE_ATTRIBUTES`` is merged in by the SDK. ``endpoint``
    (a full ``.../v1/traces`` URL) forces tracing on, for tests and benchmarks. Idempotent.
    """
    global _provider, _processor
    if _provider is not None:
        return _provider
    if endpoint is None and not tracing_requested():
        return None
    from sopgym.observability.protowire import OTLPSpanExporter  # the SDK's, faster encoding

    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    if protocol != "http/protobuf":
        log.warning("OTLP protocol %r is not supported here; exporting http/protobuf", protocol)
    resource = Resource.create(
        {
            "service.name": os.environ.get("OTEL_SERVICE_NAME") or service,
            "service.namespace": "sopgym",
            "service.version": sopgym.__version__,
            **(attributes or {}),
        }
    )
    provider = TracerProvider(resource=resource)
    processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
    provider.add_span_processor(processor)
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        trace.set_tracer_provider(provider)  # once per process; sopgym's own code uses ours
    _provider, _processor = provider, processor
    _flush_on_sigterm(provider)
    return provider


def _flush_on_sigterm(provider: TracerProvider) -> None:
    """Export buffered spans when SIGTERM arrives.

    Stopping a server is a SIGTERM; uvicorn shuts down gracefully and then re-raises the
    signal, whose default action ends the process before ``atexit`` (where the SDK would
    flush) runs, losing the last batch. Only installed where nobody else handles SIGTERM.
    After the flush the process exits (:func:`sopgym.core.stopping.terminate`), PID 1 too.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        return

    def flush_then_terminate(signum: int, frame: object) -> None:
        # Bounded: when the receiver is gone too (a SIGKILLed runner takes every child down at
        # once), the exporter retries for seconds per batch, and a process asked to stop must
        # not linger that long for spans nobody can take.
        flushing = threading.Thread(target=provider.shutdown, daemon=True)
        flushing.start()
        flushing.join(SIGTERM_FLUSH_S)
        # not re-raised with the default action: as a container's PID 1 the kernel drops it
        terminate(signum, frame)

    signal.signal(signal.SIGTERM, flush_then_terminate)


def shutdown_tracing() -> None:
    """Flush and stop this process's tracing (tests and embedding hosts; servers rely on the
    SIGTERM / atexit flush). Spans started afterwards are dropped."""
    global _provider, _processor
    if _provider is not None:
        _provider.shutdown()
    _provider = _processor = None


def enabled() -> bool:
    return _provider is not None


# Tracers by scope, with the provider they came from: the SDK builds a new Tracer (and its
# scope) on every get_tracer call, ~0.17 ms each, and an agent step asks for two (its chat and
# tool spans).
_tracers: dict[str, tuple[object, trace.Tracer]] = {}


def tracer(scope: str) -> trace.Tracer:
    """The tracer for an instrumentation scope: this process's provider's, else the global
    one (a no-op until something installs a provider)."""
    provider = _provider
    if provider is None:
        return trace.get_tracer(scope, sopgym.__version__)
    found = _tracers.get(scope)
    if found is None or found[0] is not provider:  # none yet, or the provider was replaced
        found = _tracers[scope] = (provider, provider.get_tracer(scope, sopgym.__version__))
    return found[1]


def lean_tracer(scope: str) -> LeanTracer | None:
    """Hand-built server spans for the hot paths (see :mod:`.lean`); ``None`` when off."""
    if _provider is None or _processor is None:
        return None
    return LeanTracer(_provider, _processor, scope)


def flush(timeout_ms: int = 5000) -> bool:
    """Export everything buffered so far; agent workers call it after every episode so a
    worker that is later killed loses no finished episode."""
    return _provider.force_flush(timeout_ms) if _provider is not None else True


# ---- payloads on spans ----
def payload_limit() -> int:
    """Bytes of a JSON payload kept on a span: ours, or the SDK's own attribute cap if lower
    (the SDK would otherwise cut the text silently and we could not tell)."""
    limits = [int(os.environ.get(PAYLOAD_LIMIT_ENV, DEFAULT_PAYLOAD_LIMIT))]
    for name in ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"):
        if os.environ.get(name, "").strip().isdigit():
            limits.append(int(os.environ[name]))
    return max(16, min(limits))


def capped(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters, and whether it was cut."""
    return (text, False) if len(text) <= limit else (text[:limit], True)


def normalized_digest(value: Any) -> str:
    """A digest of a value's normalised form: two argument sets that the scorer treats as
    equal have the same digest, so arguments too large for a span can still be matched
    against the gold."""
    encoded = orjson.dumps(normalize(value), option=orjson.OPT_SORT_KEYS)
    return base64.b64encode(hashlib.blake2b(encoded, digest_size=12).digest()).decode()


# ---- W3C trace context ----
def parent_from_traceparent(value: str | bytes | None) -> Context | None:
    """The remote parent context a ``traceparent`` header names, or ``None`` if malformed
    (for SDK spans; the lean spans parse the header themselves)."""
    remote = remote_parent(value)
    return trace.set_span_in_context(NonRecordingSpan(remote)) if remote is not None else None


def traceparent_line() -> bytes:
    """A ready-encoded ``traceparent: ...\r\n`` header line naming the current span, or
    ``b""`` when there is none (tracing off): for hand-written upstream requests."""
    value = current_traceparent()
    return b"traceparent: " + value.encode() + b"\r\n" if value else b""

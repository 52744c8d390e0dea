"""Lean SERVER spans for the two hot paths: the gateway and the tool services.

Every tool call crosses both, so their spans are built by hand instead of through the SDK's
``Tracer``/``Span`` machinery, which validates each attribute, takes a lock per update and
copies the span again when it ends: measured, that costs the gateway several times its own
routing work per call. A :class:`LeanSpan` is a plain object collecting the same data; when it
ends it becomes an SDK ``ReadableSpan`` handed straight to this process's
``BatchSpanProcessor``, so export (OTLP/HTTP protobuf, ``OTEL_BSP_*``) is exactly the SDK's.

Sampling: a span follows its remote parent's sampled flag; a root span asks the provider's
configured sampler (``OTEL_TRACES_SAMPLER``). The span is "current" through a context variable
that :func:`current_span` reads (and falls back to the OTel context for SDK spans, e.g. the
gateway's gRPC transport), so handlers annotate it without knowing which kind it is.
"""

from __future__ import annotations

import random
from contextvars import ContextVar, Token
from time import time_ns
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

import sopgym

_CURRENT: ContextVar[LeanSpan | None] = ContextVar("sopgym_lean_span", default=None)
_SAMPLED, _NOT_SAMPLED = TraceFlags(TraceFlags.SAMPLED), TraceFlags(TraceFlags.DEFAULT)
_ERROR = Status(StatusCode.ERROR)
_UNSET = Status(StatusCode.UNSET)


class LeanSpan:
    """The subset of the span API sopgym's handlers use, on a plain object. Ids are kept as
    the hex text of the ``traceparent`` header as well, since the upstream hop needs them."""

    __slots__ = ("attributes", "events", "kind", "name", "parent", "span_hex", "start_ns",
                 "trace_hex", "traced")  # fmt: skip

    def __init__(
        self,
        name: str,
        trace_hex: str,
        parent: SpanContext | None,
        traced: bool,
        kind: SpanKind,
        attributes: dict[str, Any],
    ) -> None:
        self.name, self.trace_hex, self.parent, self.traced = name, trace_hex, parent, traced
        self.kind, self.attributes = kind, attributes
        self.span_hex = f"{random.getrandbits(64) or 1:016x}"
        self.start_ns = time_ns()
        self.events: list[Event] = []

    def is_recording(self) -> bool:
        return self.traced

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        self.attributes.update(attributes)

    def add_event(self, name: str, attributes: dict[str, Any] | None = None) -> None:
        self.events.append(Event(name, attributes, time_ns()))

    def update_name(self, name: str) -> None:
        self.name = name

    def traceparent(self) -> str:
        return f"00-{self.trace_hex}-{self.span_hex}-{'01' if self.traced else '00'}"


class LeanTracer:
    """Starts and ends :class:`LeanSpan` s for one instrumentation scope of this process."""

    def __init__(self, provider: TracerProvider, processor: SpanProcessor, scope: str) -> None:
        self._provider, self._processor = provider, processor
        self._resource = provider.resource
        self._scope = InstrumentationScope(scope, sopgym.__version__)

    def start(
        self,
        name: str,
        traceparent: bytes | str | None,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.SERVER,
    ) -> tuple[LeanSpan, Token[LeanSpan | None]]:
        """A span under the remote parent ``traceparent`` names (if valid), made current."""
        parent = remote_parent(traceparent)
        if parent is not None:
            trace_hex, traced = f"{parent.trace_id:032x}", parent.trace_flags.sampled
        else:
            trace_id = random.getrandbits(128) or 1
            decision = self._provider.sampler.should_sample(None, trace_id, name, kind)
            trace_hex, traced = f"{trace_id:032x}", decision.decision.is_sampled()
        span = LeanSpan(name, trace_hex, parent, traced, kind, attributes)
        return span, _CURRENT.set(span)

    def end(self, span: LeanSpan, token: Token[LeanSpan | None], error: bool = False) -> None:
        _CURRENT.reset(token)
        if not span.traced:
            return
        context = SpanContext(
            int(span.trace_hex, 16), int(span.span_hex, 16), is_remote=False, trace_flags=_SAMPLED
        )
        self._processor.on_end(
            ReadableSpan(
                name=span.name,
                context=context,
                parent=span.parent,
                resource=self._resource,
                attributes=span.attributes,
                events=span.events,
                kind=span.kind,
                status=_ERROR if error else _UNSET,
                start_time=span.start_ns,
                end_time=time_ns(),
                instrumentation_scope=self._scope,
            )
        )


def remote_parent(value: bytes | str | None) -> SpanContext | None:
    """The remote span context a W3C ``traceparent`` value names, or ``None`` if malformed."""
    if not value:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    parts = value.strip().split("-")
    if len(parts) < 4 or len(parts[1]) != 32 or len(parts[2]) != 16 or parts[0] == "ff":
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3][:2], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    sampled = _SAMPLED if flags & 1 else _NOT_SAMPLED
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=sampled)


def current_span() -> Any:
    """The recording span a handler should annotate (lean or SDK), or ``None``."""
    span = _CURRENT.get()
    if span is not None:
        return span if span.traced else None
    sdk_span = trace.get_current_span()
    return sdk_span if sdk_span.is_recording() else None


def current_traceparent() -> str | None:
    """The ``traceparent`` naming the current span (lean or SDK) as parent, if any."""
    span = _CURRENT.get()
    if span is not None:
        return span.traceparent()
    return traceparent_of(trace.get_current_span())


def traceparent_of(span: trace.Span) -> str | None:
    """The W3C ``traceparent`` that names ``span`` as the parent."""
    context = span.get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"

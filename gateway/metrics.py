"""The gateway's metrics: episodes and tool calls by domain, outcome and transport, and the
latency of each call (the hop to the tool service included). Served on ``GET /metrics`` and
mirrored to OpenTelemetry when an OTLP endpoint is configured."""

from __future__ import annotations

from sopgym.observability.metrics import Metrics


class GatewayMetrics:
    def __init__(self, metrics: Metrics | None = None) -> None:
        self.metrics = metrics or Metrics("sopgym-gateway")
        m = self.metrics
        self.opened = m.counter(
            "sopgym_gateway_episodes_opened", "Episodes opened.", ("domain", "transport")
        )
        self.finished = m.counter(
            "sopgym_gateway_episodes_finished", "Episodes finished.", ("domain", "transport")
        )
        self.tool_calls = m.counter(
            "sopgym_gateway_tool_calls",
            "Tool calls recorded, by outcome (ok or the error code).",
            ("domain", "outcome", "transport"),
        )
        self.messages = m.counter(
            "sopgym_gateway_user_messages",
            "Messages exchanged with the simulated user in dialogue episodes.",
            ("domain", "transport"),
        )
        self.tool_seconds = m.histogram(
            "sopgym_gateway_tool_call_duration_seconds",
            "Tool-call latency at the gateway, the hop to the tool service included.",
            ("domain", "transport"),
        )
        m.gauge("sopgym_gateway_open_episodes", "Episodes opened and not finished.", self._open)

    def _open(self) -> float:
        return sum(self.opened.values.values()) - sum(self.finished.values.values())

    def call(self, domain: str, outcome: str, transport: str, seconds: float) -> None:
        self.tool_calls.add((domain, outcome, transport))
        self.tool_seconds.observe(seconds, (domain, transport))

    def exposition(self) -> bytes:
        return self.metrics.exposition()

"""Whether the endpoints every task needs are still up: the gateway and the model endpoint.

A tool service that dies fails only its own domain's tasks (the gateway answers
``service_unavailable`` at once), but every task of a run goes through the gateway and, with a
model agent, the model endpoint. When one of them is down, each remaining task would open an
agent worker's episode only to fail it, after the clients' retries: the runner asks this
watch instead. After any infrastructure error it probes the gateway, and the model endpoint
too when the model failed the task; when one does not answer, the watch says so
(:attr:`EndpointWatch.down`) and the runner records every task it has not dispatched yet as
``infra_error`` with that cause, at once, without running it (``--resume RUN --retry-infra``
runs them when the endpoint is back).
"""

from __future__ import annotations

import threading

import httpx

from sopgym.agents.models import ModelSpec, ModelUnavailable, preflight

PROBE_TIMEOUT_S = 2.0
# The class a worker's report types a failed model endpoint with (its ``error_record``:
# sopgym.agents.llm.ModelUnreachable); only then is the model probed, so a dead tool service
# never sends requests to a provider.
MODEL_FAILURE = "ModelUnreachable"


class EndpointWatch:
    """The run's gateway (``gateway_url``) and model endpoint (``model``; None for agents
    that use none), probed on demand from any worker thread."""

    def __init__(self, gateway_url: str, model: ModelSpec | None) -> None:
        self.gateway_url, self.model = gateway_url, model
        self.down: str | None = None  # why the remaining tasks cannot run, once known
        self._probing = threading.Lock()

    def check(self, cause: str, error_type: str | None = None) -> str | None:
        """After a task failed for ``cause`` (``error_type``: the class of the worker's error,
        :attr:`~sopgym.runs.records.WorkerReport.error_type`), probe the endpoints (one
        thread at a time; a later caller sees the verdict) and return why the remaining tasks
        cannot run, if so."""
        with self._probing:
            if self.down is None:
                model = error_type == MODEL_FAILURE
                self.down = self._probe_gateway() or (self._probe_model() if model else None)
            return self.down

    def _probe_gateway(self) -> str | None:
        url = f"{self.gateway_url}/healthz"
        try:
            httpx.get(url, timeout=PROBE_TIMEOUT_S).raise_for_status()
        except httpx.HTTPError as error:
            return f"the gateway is down ({url}: {error or type(error).__name__})"
        return None

    def _probe_model(self) -> str | None:
        if self.model is None:
            return None
        try:
            preflight(self.model, PROBE_TIMEOUT_S)
        except ModelUnavailable as error:
            return f"the model endpoint is down ({error})"
        return None

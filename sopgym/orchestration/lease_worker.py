"""An agent worker in lease mode: jobs leased from the run service, results sent back to it.

The worker keeps ``--concurrency`` episodes in flight in one
:class:`~sopgym.agents.worker.EpisodePool`. One loop asks the run service, in one request, to
renew every lease it holds and to lease as many jobs as it has free slots; it asks again as
soon as a slot frees, and at least every third of the lease's life while it works. Each
finished episode's report goes back with the gateway's record of the episode (its spans
flushed first, as an agent worker's reports always are); a send the service cannot take (it is
restarting) is tried again, so a result is never lost to a restart, and the service keeps the
first result of each attempt, so one sent twice is never doubled.

A tool service or the gateway gone mid-episode (:func:`~sopgym.orchestration.shards.is_outage`)
gives the lease back and pauses this worker's asking, bounded by ``--outage-wait``; past it,
the episode is sent as the infrastructure error it is. SIGTERM (an eviction, the Job scaled
down) gives every lease back at once and exits 143; the statuses are in
:mod:`sopgym.orchestration.leases`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import httpx

from sopgym.agents.worker import EpisodePool, TraceDelivery
from sopgym.core.exceptions import InfrastructureError, UsageError
from sopgym.observability import tracing
from sopgym.orchestration.leases import EXIT_DONE, EXIT_INFRA, EXIT_USAGE
from sopgym.orchestration.shards import Outage, fetch_record, is_outage
from sopgym.runs.records import WorkerReport
from sopgym.types import JSON

RETRY_S = 0.5  # between tries of a request the run service did not answer
IDLE_POLL_S = 1.0  # how often an idle worker asks again while other workers hold the rest


class RunServiceDown(InfrastructureError, RuntimeError):
    """The run service did not answer within the worker's ``--wait``."""


class WorkerRefused(UsageError, RuntimeError):
    """The run service refused this worker's request (409: another agent or model, a lease
    that is not the run's): retrying cannot help."""


@dataclass
class LeaseSettings:
    """Who the worker is and how it talks to the run service."""

    service: str
    worker: str
    agent: str
    model: str
    wait_s: float = 300.0  # how long the run service may stay unreachable
    outage_wait: float = 300.0


class RunServiceClient:
    """The worker's requests to the run service, each tried again until it is answered or
    ``wait_s`` has passed (:class:`RunServiceDown`); a refusal is :class:`WorkerRefused`."""

    def __init__(self, settings: LeaseSettings) -> None:
        self.settings = settings
        self._http = httpx.Client(base_url=settings.service.rstrip("/"), timeout=10.0)

    def post(self, path: str, body: JSON, wait_s: float | None = None) -> JSON:
        deadline = time.monotonic() + (self.settings.wait_s if wait_s is None else wait_s)
        while True:
            try:
                response = self._http.post(path, json=body)
            except httpx.HTTPError as error:
                cause = f"{type(error).__name__}: {error}"
            else:
                if response.status_code in (400, 409):
                    raise WorkerRefused(_error_of(response))
                if response.status_code == 200:
                    answer: JSON = response.json()
                    return answer
                cause = f"HTTP {response.status_code}: {_error_of(response)}"
            if time.monotonic() >= deadline:
                raise RunServiceDown(f"run service {self.settings.service}{path}: {cause}")
            time.sleep(RETRY_S)

    def close(self) -> None:
        self._http.close()


def _error_of(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", response.text[:200]))
    except ValueError:
        return response.text[:200]


@dataclass
class LeaseWorker:
    """The loop of one worker process (:meth:`run` returns its exit status)."""

    settings: LeaseSettings
    pool: EpisodePool
    log: Callable[[str], None] = print
    observe: Callable[[WorkerReport, JSON | None], None] | None = None
    held: dict[str, JSON] = field(default_factory=dict)  # lease -> job, until its result is in
    failure: BaseException | None = None  # a delivery's fatal error: ends the loop
    worked: int = 0
    _wake: threading.Condition = field(default_factory=threading.Condition)
    _paused_until: float = 0.0

    def __post_init__(self) -> None:
        self.client = RunServiceClient(self.settings)
        self.outage = Outage(self.settings.outage_wait, self.log)
        self._delivery = TraceDelivery(self._deliver) if tracing.enabled() else None

    def run(self) -> int:
        try:
            return self._loop()
        except WorkerRefused as error:
            self.log(f"run service refused this worker: {error}")
            return EXIT_USAGE
        except RunServiceDown as error:
            self.log(f"giving up: {error}")
            return EXIT_INFRA

    def _loop(self) -> int:
        renew_every = None
        while True:
            with self._wake:
                if self.failure is not None:
                    raise self.failure
                held = list(self.held)
                want = 0 if time.monotonic() < self._paused_until else (
                    self.pool.concurrency - len(held))  # fmt: skip
            answer = self.client.post("/v1/leases", {
                "worker": self.settings.worker, "agent": self.settings.agent,
                "model": self.settings.model, "want": max(0, want), "held": held,
            })  # fmt: skip
            renew_every = float(answer["lease_s"]) / 3
            for lease in answer["lost"]:
                self.log(f"lease {lease} lapsed and went to another worker; still working it")
            if answer["finished"] and not held:
                progress = answer["progress"]
                self.log(f"run finished: {progress['done']} of {progress['planned']} attempts "
                         f"have results; this worker worked {self.worked}")  # fmt: skip
                return EXIT_DONE
            for job in answer["jobs"]:
                with self._wake:
                    self.held[job["job_id"]] = job
                self.pool.acquire()  # free: we asked for no more than the free slots
                self.pool.submit(job).add_done_callback(self._done)
            with self._wake:  # until a slot frees (ask for more) or it is time to renew
                idle = not self.held and not answer["jobs"]
                self._wake.wait(min(renew_every, IDLE_POLL_S) if idle else renew_every)

    # ---- results (episode threads) ----
    def _done(self, future: Future[WorkerReport]) -> None:
        report = future.result()
        if self._delivery is not None:
            self._delivery.send(report)  # its spans flushed before it goes
        else:
            self._deliver(report)

    def _deliver(self, report: WorkerReport) -> None:
        lease = report.job_id if isinstance(report.job_id, str) else ""
        try:
            record = fetch_record(self.pool.client, report)
            cause = is_outage(report, record)
            if cause is not None and self.outage.retry(cause):
                self.client.post("/v1/leases/give-back",
                                 {"worker": self.settings.worker, "leases": [lease]})  # fmt: skip
                with self._wake:
                    self._paused_until = time.monotonic() + 2.0
                return
            if cause is None:
                self.outage.over()
            line = {"report": report.to_json(), "record": record}
            answer = self.client.post("/v1/results", {
                "worker": self.settings.worker, "lease": lease, "line": line})  # fmt: skip
            if answer["outcome"] == "duplicate":
                self.log(f"task {report.task_id} trial {report.trial}: another worker's result "
                         "came first (this lease had lapsed); dropped")  # fmt: skip
            self.worked += 1
            if self.observe is not None:
                self.observe(report, record)
        except (WorkerRefused, RunServiceDown) as error:
            with self._wake:
                self.failure = error
        finally:
            with self._wake:
                self.held.pop(lease, None)
                self._wake.notify_all()

    def give_back(self) -> None:
        """Stopping (SIGTERM): every lease held goes back to the run at once."""
        with self._wake:
            held = list(self.held)
        if held:
            with contextlib.suppress(WorkerRefused, RunServiceDown):
                answer = self.client.post("/v1/leases/give-back",
                                          {"worker": self.settings.worker, "leases": held},
                                          wait_s=2.0)  # fmt: skip
                self.log(f"stopping: gave {answer['freed']} lease(s) back to the run")

    def close(self) -> None:
        if self._delivery is not None:
            self._delivery.close()
        self.client.close()
        self.pool.close()

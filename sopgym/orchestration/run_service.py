"""The run service: one run's work handed out as leases, its results kept, scored on request.

Why a service of the run's own rather than the gateway: the gateway is stateless between
episodes and scales out (an HPA adds and removes replicas, each holding only its own episodes),
while leases need one authority whose state survives a restart; and handing out work means
knowing the run (its task selection, trials, seed, the oracle's replays), which the gateway
must never hold beside the agents' door. The run service is one pod with one volume
(ReadWriteOnce): a SQLite file (:class:`~sopgym.orchestration.leases.LeaseStore`) and, beside
it, the run folder that ``merge`` writes; the agents' workers need no volume at all.

HTTP API (JSON bodies; a malformed or refused request is answered 400/409 with one line,
``{"error": "..."}``):

* ``POST /v1/leases`` ``{"worker", "agent", "model", "want", "held"}``: renews the worker's
  ``held`` leases and hands it up to ``want`` more jobs (``job_id``: the lease). Answers
  ``{"jobs", "lost", "finished", "lease_s", "progress"}``; ``lost``: held leases it no longer
  holds. A worker of another agent or model than the run's is refused (409).
* ``POST /v1/results`` ``{"worker", "lease", "line": {"report", "record"}}``: one attempt's
  result; ``{"outcome": "accepted" | "resent" | "duplicate"}``.
* ``POST /v1/leases/give-back`` ``{"worker", "leases"}``: a stopping worker's leases.
* ``GET /v1/progress``; ``POST /v1/merge`` ``{"report": false}``: score the results into the
  run folder's ``results.jsonl`` and ``summary.json`` (and the report), answer the summary.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson
from fastapi import FastAPI, Request, Response
from starlette.concurrency import run_in_threadpool

from sopgym.core.outcomes import INFRA_ERROR
from sopgym.core.tasks import Task
from sopgym.orchestration.leases import LEASE_FILE, LEASE_S, MAX_LAPSES, LeaseRefused, LeaseStore
from sopgym.runs.records import RunConfig, WorkerReport
from sopgym.types import JSON


class LeaseRequest(msgspec.Struct, forbid_unknown_fields=True):
    worker: str
    agent: str
    model: str
    want: int = 0
    held: list[str] = msgspec.field(default_factory=list)


class ResultRequest(msgspec.Struct, forbid_unknown_fields=True):
    worker: str
    lease: str
    line: JSON


class GiveBackRequest(msgspec.Struct, forbid_unknown_fields=True):
    worker: str
    leases: list[str]


class MergeRequest(msgspec.Struct, forbid_unknown_fields=True):
    report: bool = False


class RunService:
    """A run's tasks (selected once, as ``sopgym run`` selects them), its lease store and its
    scoring. Restarted on the same run folder it carries on where it stood; started with other
    settings than the stored ones it refuses (:class:`LeaseRefused`)."""

    def __init__(
        self,
        config: RunConfig,
        run_dir: Path,
        data_root: Path | None = None,
        lease_s: float = LEASE_S,
        max_lapses: int = MAX_LAPSES,
    ) -> None:
        from sopgym.orchestration.runner import Runner

        self.config, self.run_dir, self.data_root = config, run_dir, data_root
        self.runner = Runner(config, run_dir, data_root)
        self.tasks = self.runner.prepare()
        self.by_id = {task.id: task for task in self.tasks}
        self.store = LeaseStore(run_dir / LEASE_FILE, lease_s, max_lapses)
        settings = {k: v for k, v in config.to_json().items() if k != "workers"}
        attempts = [(t.id, trial) for trial in range(config.trials) for t in self.tasks]
        self.store.plan(settings, attempts)

    def lease(self, request: LeaseRequest) -> JSON:
        if (request.agent, request.model) != (self.config.agent, self.config.model):
            raise LeaseRefused(
                f"this run works agent {self.config.agent!r} with model {self.config.model!r}; "
                f"worker {request.worker!r} runs agent {request.agent!r} with model "
                f"{request.model!r}"
            )
        if request.want < 0:
            raise LeaseRefused(f"want must be 0 or more, not {request.want}")
        lost = self.store.renew(request.worker, request.held) if request.held else []
        leases = self.store.lease(request.worker, request.want, self._given_up)
        jobs = [
            {**self.runner.job(self.by_id[lease.task_id], lease.trial), "job_id": lease.lease}
            for lease in leases
        ]
        progress = self.store.progress()
        return {
            "jobs": jobs,
            "lost": lost,
            "finished": progress.finished,
            "lease_s": self.store.lease_s,
            "progress": progress.to_json(),
        }

    def _given_up(self, task_id: str, trial: int, lapses: int) -> JSON:
        """The result of an attempt whose every worker died holding it."""
        task = self.by_id[task_id]
        why = f"lease lapsed {lapses} times: every worker that took it stopped answering"
        report = WorkerReport(task_id=task_id, domain=task.domain, trial=trial,
                              status=INFRA_ERROR, error=why)  # fmt: skip
        return {"report": report.to_json(), "record": None}

    def accept(self, request: ResultRequest) -> JSON:
        try:
            report = WorkerReport.from_json(request.line.get("report"))
        except (msgspec.ValidationError, TypeError, ValueError) as error:
            raise LeaseRefused(f"line.report is not a worker report: {error}") from None
        record = request.line.get("record")
        if record is not None and not isinstance(record, dict):
            raise LeaseRefused("line.record must be an object or null")
        if report.task_id is None or report.task_id not in self.by_id:
            raise LeaseRefused(f"task {report.task_id!r} is not in this run")
        line = {"report": report.to_json(), "record": record}
        outcome = self.store.accept(request.worker, request.lease, report.task_id,
                                    report.trial, line)  # fmt: skip
        return {"outcome": outcome}

    def give_back(self, request: GiveBackRequest) -> JSON:
        return {"freed": self.store.give_back(request.worker, request.leases)}

    def merge(self, report: bool = False) -> JSON:
        """Score every accepted result into ``results.jsonl`` (the run's order) and
        ``summary.json``; attempts without a result count as incomplete (``missing``). The
        late duplicates the store dropped are counted under ``duplicate_task_rows``."""
        from sopgym.core.jsonio import dumps, write_atomic

        results = self.store.results()
        rows = []
        for trial in range(self.config.trials):
            for task in self.tasks:
                line = results.get((task.id, trial))
                if line is not None:
                    rows.append(self._scored(task, trial, line))
        paths = self.runner.paths
        write_atomic(paths.results, b"".join(dumps(row) + b"\n" for row in rows))
        summary = self.runner.write_summary(self.tasks)
        summary.duplicate_task_rows = self.store.progress().duplicates
        summary.unknown_task_rows = 0  # refused at the door: a result names a task of the run
        write_atomic(paths.summary, dumps(summary.to_json()))
        if report:
            from sopgym.orchestration.run_report import write_report_if_traced
            from sopgym.orchestration.scaleout import TRACE_SETTLE_S

            time.sleep(TRACE_SETTLE_S)  # the last spans are still in the exporters' batches
            write_report_if_traced(self.run_dir, self.data_root)
        return summary.to_json()

    def _scored(self, task: Task, trial: int, line: JSON) -> JSON:
        from sopgym.orchestration.runner import not_this_job

        report, record = WorkerReport.from_json(line["report"]), line.get("record")
        if record is not None:
            foreign = not_this_job(record, task, self.run_dir.name, trial)
            if foreign is not None:  # another task's episode is never scored as this one
                report = msgspec.structs.replace(report, status="failed", error=foreign)
                record = None
        return self.runner.result_row(task, report, record, trial)

    def close(self) -> None:
        self.store.close()
        self.runner.release()


def create_app(service: RunService) -> FastAPI:
    app = FastAPI(title="sopgym run service", docs_url=None, redoc_url=None, openapi_url=None)

    def answer(body: JSON, status: int = 200) -> Response:
        return Response(orjson.dumps(body), status, media_type="application/json")

    def route(kind: type[msgspec.Struct], handle: Callable[[Any], JSON]) -> Callable[
        [Request], Awaitable[Response]
    ]:
        async def endpoint(request: Request) -> Response:
            try:
                parsed = msgspec.json.decode(await request.body(), type=kind)
            except (msgspec.ValidationError, msgspec.DecodeError) as error:
                return answer({"error": f"malformed request: {error}"}, 400)
            try:
                return answer(await run_in_threadpool(handle, parsed))
            except LeaseRefused as error:
                return answer({"error": str(error)}, 409)

        return endpoint

    app.add_api_route("/v1/leases", route(LeaseRequest, service.lease), methods=["POST"])
    app.add_api_route("/v1/results", route(ResultRequest, service.accept), methods=["POST"])
    app.add_api_route(
        "/v1/leases/give-back", route(GiveBackRequest, service.give_back), methods=["POST"]
    )
    app.add_api_route(
        "/v1/merge", route(MergeRequest, lambda r: service.merge(r.report)), methods=["POST"]
    )

    @app.get("/v1/progress")
    async def progress() -> Response:
        return answer(service.store.progress().to_json())

    @app.get("/healthz")
    @app.get("/readyz")
    async def ready() -> Response:
        return answer({"status": "ok", "run_id": service.run_dir.name})

    return app


def serve_run_service(service: RunService, host: str, port: int) -> None:
    """Serve until SIGTERM; the store is closed on the way out (every answer was committed)."""
    from sopgym.serving import serve

    try:
        serve(create_app(service), host, port)
    finally:
        service.close()


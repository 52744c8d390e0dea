"""The runner's side of the pipe to an agent worker (sopgym/orchestration/dispatch.py): a
link returns only once every report it took is recorded."""

from __future__ import annotations

import queue
import sys
import threading
import time
from pathlib import Path

from sopgym.orchestration.dispatch import Attempt, WorkerLink
from sopgym.orchestration.processes import ManagedProcess
from sopgym.runs.records import WorkerReport
from tests.helpers import domain_data

# a worker that answers every job at once, as a finished episode
ECHO_WORKER = """
import sys, orjson
for line in sys.stdin:
    job = orjson.loads(line)
    report = {"task_id": job["task"]["id"], "domain": job["task"]["domain"],
              "trial": job["trial"], "job_id": job["job_id"], "status": "finished"}
    sys.stdout.write(orjson.dumps(report).decode() + "\\n")
    sys.stdout.flush()
"""


def test_the_link_returns_after_its_last_report_is_recorded(tmp_path: Path) -> None:
    """The last report's recording (scoring it, appending its row) may take a while after
    the report arrived; the run closes its results once every link returned, so a link that
    returned as soon as nothing was in flight lost the run's last row (seen in CI: 15 of 16
    rows after an agent worker was killed mid-run)."""
    tasks = domain_data("patient_intake").tasks[:2]
    recorded: list[str] = []

    def spawn() -> ManagedProcess:
        return ManagedProcess("worker", [sys.executable, "-c", ECHO_WORKER],
                              tmp_path / "worker.log", pipes=True)  # fmt: skip

    def build_job(attempt: Attempt) -> tuple[dict, object]:
        task, trial = attempt
        return {"task": task.to_json(), "trial": trial}, None

    def record(attempt: Attempt, report: WorkerReport, handle: object) -> None:
        time.sleep(0.5)  # scoring the episode
        recorded.append(f"{report.task_id}:{report.status}")

    jobs: queue.Queue[Attempt | None] = queue.Queue()
    for task in tasks:
        jobs.put((task, 0))
    jobs.put(None)
    link = WorkerLink(spawn, 1, 60.0, build_job, record)
    link.run(jobs, threading.Event(), lambda attempt: False)
    assert recorded == [f"{t.id}:finished" for t in tasks]

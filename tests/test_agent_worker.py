"""The agent worker's stdin protocol: one answer line per job line, bad lines included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from sopgym.agents.oracle import replay_of
from sopgym.orchestration.stack import embedded_stack
from tests.helpers import DATA_ROOT, domain_data


def test_a_worker_answers_bad_job_lines_and_keeps_working(tmp_path: Path) -> None:
    data = domain_data("patient_intake")
    task = data.tasks[0]
    good = {"task": task.to_json(), "replay": replay_of(data.gold[task.id])}
    lines = [
        "not json",
        "[1, 2]",
        orjson.dumps({"task": {"id": task.id}}).decode(),  # no domain
        orjson.dumps(good).decode(),
    ]
    with embedded_stack(["patient_intake"], tmp_path / "logs", DATA_ROOT) as stack:
        worker = subprocess.run(
            [sys.executable, "-m", "sopgym", "agent-worker", "--gateway", stack.gateway_url,
             "--agent", "oracle", "--data-root", str(DATA_ROOT)],
            input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert worker.returncode == 0, worker.stderr[-3000:]
    reports = [orjson.loads(line) for line in worker.stdout.splitlines()]
    assert [r["status"] for r in reports] == ["failed", "failed", "failed", "finished"], reports
    assert all(r["error"].startswith("invalid job: ") for r in reports[:3]), reports
    assert reports[3]["task_id"] == task.id and reports[3]["error"] is None
    assert "Traceback" not in worker.stderr

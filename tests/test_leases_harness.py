"""Lease mode end to end, with real processes: the tool service and the gateway, the run service
(``sopgym run-service``), agent worker pods (``sopgym agent-worker --leases``) started, scaled,
evicted and judged by :class:`tests.lease_harness.JobController`, which plays the Kubernetes
Job controller with the agents' Job's own ``podFailurePolicy`` (k8s/base/run.yaml), and
``sopgym merge-leases``. Each run meets a worker SIGKILLed while it holds leases, a worker
added, the run service restarted, an eviction and a scale-down, and must end with every task
exactly once and the same results as a local ``sopgym run`` of the same tasks.

The gateway adds a constant latency to every tool call (``--faults latency=...``: timing only,
drawn from nothing, recorded nowhere in the scores) so that episodes last long enough for the
events to land mid-run; each event asserts that it did.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest

from sopgym.orchestration.leases import EXIT_INFRA, EXIT_USAGE
from sopgym.orchestration.processes import (
    ManagedProcess,
    ProcessGroup,
    free_port,
    sopgym_command,
)
from sopgym.orchestration.stack import Stack, embedded_stack
from sopgym.runs.records import RunConfig
from tests.helpers import DATA_ROOT
from tests.lease_harness import JobController, Pod, agents_job, pod_failure_action

COMPARED = ("status", "outputs", "gold_outputs", "error")
Step = tuple[str, Callable[[dict], bool], Callable[[dict], None]]  # name, when, what


@dataclass
class LeaseRun:
    """A run service (restartable on the same folder and port) in front of a stack."""

    group: ProcessGroup
    stack: Stack
    root: Path
    domain: str
    limit: int
    lease_s: float
    port: int = 0
    service: ManagedProcess | None = None
    restarts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def run_dir(self) -> Path:
        return self.root / "runs" / "leased"

    def start_service(self) -> None:
        self.port = self.port or free_port()
        name = f"run-service-{self.restarts}"
        self.service = self.group.start(name, sopgym_command(
            "run-service", "--run-dir", str(self.run_dir), "--domain", self.domain,
            "--agent", "oracle", "--limit", str(self.limit), "--lease-s", str(self.lease_s),
            "--port", str(self.port), "--data-root", str(DATA_ROOT),
        ), self.root / f"{name}.log", ready_url=f"{self.url}/readyz")  # fmt: skip
        self.service.wait_ready(120)

    def restart_service(self) -> None:
        assert self.service is not None
        self.service.stop()
        self.restarts += 1
        self.start_service()

    def progress(self) -> dict:
        try:
            return dict(httpx.get(f"{self.url}/v1/progress", timeout=5).json())
        except httpx.HTTPError:  # restarting
            return {}

    def spawner(self, concurrency: int, agent: str = "oracle") -> Callable[[str], ManagedProcess]:
        def spawn(name: str) -> ManagedProcess:
            return self.group.start(name, sopgym_command(
                "agent-worker", "--gateway", self.stack.gateway_url, "--agent", agent,
                "--leases", self.url, "--concurrency", str(concurrency), "--wait", "60",
            ), self.root / f"{name}.log", env={"SOPGYM_WORKER_ID": name})  # fmt: skip

        return spawn

    def merge(self) -> dict:
        result = subprocess.run(sopgym_command("merge-leases", self.url, "--wait", "60"),
                                capture_output=True, text=True, timeout=300)  # fmt: skip
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        return dict(orjson.loads((self.run_dir / "summary.json").read_bytes()))

    def rows(self) -> list[dict]:
        return _rows(self.run_dir / "results.jsonl")


def _rows(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _local_rows(domain: str, limit: int, root: Path) -> list[dict]:
    """The same tasks run locally (sopgym.run: its own stack and workers)."""
    from sopgym.orchestration.api import run

    config = RunConfig(domains=[domain], agent="oracle", limit=limit, workers=2, trace=False)
    summary = run(config, runs_dir=root / "local", run_id="local", data_root=DATA_ROOT)
    return _rows(Path(str(summary.run_dir)) / "results.jsonl")


class Events:
    """The run's events in order, each fired once its condition holds on the run's progress,
    and recorded with the progress it met (so a test can assert it landed mid-run)."""

    def __init__(self, run: LeaseRun, steps: list[Step]) -> None:
        self.run, self.steps = run, list(steps)
        self.fired: dict[str, dict] = {}

    def __call__(self) -> None:
        if not self.steps:
            return
        name, ready, act = self.steps[0]
        progress = self.run.progress()
        if progress and ready(progress):
            act(progress)
            self.fired[name] = progress
            self.steps.pop(0)


def _leased_run(
    tmp_path: Path,
    domain: str,
    limit: int,
    pods: int,
    concurrency: int,
    latency: str,
    at: dict[str, int],
    timeout: float,
) -> tuple[LeaseRun, JobController, Events, dict]:
    """Run the leased run through its events (``at``: the results after which each fires)."""
    with ProcessGroup() as group, embedded_stack(
        [domain], tmp_path / "stack", DATA_ROOT, faults=f"latency={latency}"
    ) as stack:
        run = LeaseRun(group, stack, tmp_path, domain, limit, lease_s=2.0)
        run.start_service()
        job = JobController(run.spawner(concurrency), parallelism=pods)
        victims: dict[str, str] = {}

        def holding(progress: dict) -> bool:
            """Whether a live pod holds leases now (the victim of the next event)."""
            live = {p.name for p in job.live()}
            return any(n in live for n in progress["held_by"])

        def holder(progress: dict) -> Pod:
            live = {p.name: p for p in job.live()}
            held = {n: k for n, k in progress["held_by"].items() if n in live}
            return live[max(held, key=held.__getitem__)]

        def kill_a_holder(progress: dict) -> None:
            pod = holder(progress)
            victims["killed"] = pod.name
            job.kill(pod)

        def evict(progress: dict) -> None:
            pod = holder(progress)
            victims["evicted"] = pod.name
            job.evict(pod)

        def scale_down(progress: dict) -> None:
            job.parallelism = pods

        def add_one(progress: dict) -> None:
            job.parallelism = pods + 1

        events = Events(run, [
            ("kill -9 a worker holding leases",
             lambda p: p["done"] >= at["kill"] and holding(p), kill_a_holder),
            ("parallelism raised", lambda p: p["done"] >= at["add"], add_one),
            ("run service restarted", lambda p: p["done"] >= at["restart"],
             lambda p: run.restart_service()),
            ("a worker evicted", lambda p: p["done"] >= at["evict"] and holding(p), evict),
            ("parallelism lowered", lambda p: p["done"] >= at["lower"], scale_down),
        ])  # fmt: skip
        job.run_until_done(timeout, events)
        summary = run.merge()
        return run, job, events, {"summary": summary, "victims": victims,
                                  "progress": run.progress()}  # fmt: skip


def _check(run: LeaseRun, job: JobController, events: Events, facts: dict, local: list[dict],
           tasks: int) -> None:  # fmt: skip
    assert job.complete, (job.failed, job.exits)
    assert not events.steps, f"events that never fired: {[s[0] for s in events.steps]}"
    for name, progress in events.fired.items():
        assert progress["done"] < tasks, f"{name} landed after the run's end"
    codes = {name: (code, action) for name, code, action in job.exits}
    assert codes[facts["victims"]["killed"]] == (-9, "Count")
    assert codes[facts["victims"]["evicted"]] == (143, "Ignore")
    assert job.failures == 1, job.exits  # the SIGKILL alone is counted against backoffLimit
    progress = facts["progress"]
    assert progress["lapsed"] >= 1, "the killed worker's leases went to others"
    assert progress["given_back"] >= 1, "the evicted worker gave its leases back"
    rows = run.rows()
    keys = [(r["task_id"], r["trial"]) for r in rows]
    assert len(keys) == len(set(keys)) == tasks, "every task exactly once"
    summary = facts["summary"]
    assert summary["missing"] == [] and summary["tasks"] == tasks
    assert summary["duplicate_task_rows"] == progress["duplicates"]
    local_by_key = {(r["task_id"], r["trial"]): r for r in local}
    assert set(local_by_key) == set(keys)
    for row in rows:
        theirs = local_by_key[(row["task_id"], row["trial"])]
        assert {k: row[k] for k in COMPARED} == {k: theirs[k] for k in COMPARED}, row["task_id"]
        assert row["score"]["success"] == theirs["score"]["success"], row["task_id"]
        assert row["score"] == theirs["score"], row["task_id"]


@pytest.mark.parametrize(
    ("domain", "tasks", "pods", "concurrency", "latency", "at"),
    [
        # the default suite's: 24 tasks on 2 pods of 2 episodes
        ("patient_intake", 24, 2, 2, "60ms",
         {"kill": 2, "add": 4, "restart": 7, "evict": 11, "lower": 14}),
        # the acceptance: 3 workers on 300 tasks (slow suite)
        pytest.param("dangerous_goods", 300, 3, 4, "20ms",
                     {"kill": 30, "add": 60, "restart": 120, "evict": 180, "lower": 220},
                     marks=pytest.mark.slow, id="300-tasks"),
    ],
)  # fmt: skip
def test_a_leased_run_survives_kills_scaling_a_restart_and_an_eviction(
    tmp_path: Path, domain: str, tasks: int, pods: int, concurrency: int, latency: str,
    at: dict[str, int],
) -> None:  # fmt: skip
    run, job, events, facts = _leased_run(
        tmp_path, domain, tasks, pods, concurrency, latency, at, timeout=150 + 2 * tasks
    )
    _check(run, job, events, facts, _local_rows(domain, tasks, tmp_path), tasks)
    print(f"\n{tasks} tasks: pods {job.exits}; progress {facts['progress']}")


def test_a_worker_the_run_refuses_fails_the_job_at_once(tmp_path: Path) -> None:
    """A usage error (exit 2: the run works the oracle, the pod another agent) is the Job's
    FailJob: no pod is started again and nothing is leased."""
    with ProcessGroup() as group, embedded_stack(["patient_intake"], tmp_path / "stack",
                                                 DATA_ROOT) as stack:  # fmt: skip
        run = LeaseRun(group, stack, tmp_path, "patient_intake", 3, lease_s=2.0)
        run.start_service()
        job = JobController(run.spawner(1, agent="baseline"), parallelism=2)
        started = time.monotonic()
        job.run_until_done(60)
        assert job.failed is not None and "FailJob" in job.failed, job.exits
        assert job.exits[0][1] == EXIT_USAGE
        assert job.made == 2, "no pod replaced a refused one"
        assert run.progress()["done"] == 0 and run.progress()["leased"] == 0
        assert time.monotonic() - started < 60
        log = (tmp_path / "agent-workers-1.log").read_text()
        assert "run service refused this worker: this run works agent 'oracle'" in log


def test_a_worker_whose_run_service_never_answers_exits_3(tmp_path: Path) -> None:
    """The infrastructure's exit (3): counted against the Job's backoffLimit, never FailJob."""
    dead = f"http://127.0.0.1:{free_port()}"
    result = subprocess.run(sopgym_command(
        "agent-worker", "--gateway", dead, "--agent", "oracle", "--leases", dead, "--wait", "1",
    ), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == EXIT_INFRA, result.stdout + result.stderr
    said = result.stdout + result.stderr
    assert f"giving up: run service {dead}/v1/leases: ConnectError" in said
    assert "Traceback" not in said
    spec = agents_job()["spec"]  # what the agents' Job does with each status
    assert pod_failure_action(spec, EXIT_INFRA, disrupted=False) == "Count"
    assert pod_failure_action(spec, EXIT_USAGE, disrupted=False) == "FailJob"
    assert pod_failure_action(spec, 143, disrupted=True) == "Ignore"


def test_leases_and_shards_are_two_modes() -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    result = subprocess.run(sopgym_command(
        "agent-worker", "--gateway", nowhere, "--leases", nowhere,
        "--shard", "0/2", "--run-dir", "x", "--domain", "patient_intake",
    ), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == EXIT_USAGE
    assert "--leases and --shard are two modes: give one" in result.stderr

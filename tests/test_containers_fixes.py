"""What a cluster does every day, without a cluster (issue 32): shard jobs that carry the trial
and its seed, a shard that pauses for a dependency gone down and works its task again, claims
under a unique identity that a stopping worker gives back, a merge that counts a task once and
says which shards are stuck, a worker that stops on SIGTERM as a container's PID 1, a client
that retries ``service_unavailable`` where nothing is recorded, and a table that prints n/a
where every episode was an infrastructure error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

from sopgym.cli.summary import print_summary
from sopgym.client import GatewayClient, InfraError
from sopgym.core.keepalive import Reply
from sopgym.core.outcomes import INFRA_ERROR
from sopgym.core.registry import load_domain
from sopgym.evaluation.explain import coverage_line
from sopgym.orchestration import shards as shard_mode
from sopgym.orchestration.processes import free_port
from sopgym.orchestration.runner import Runner
from sopgym.orchestration.shards import (
    Shard,
    ShardSettings,
    claim,
    merge,
    run_shard,
    worker_identity,
)
from sopgym.runs.records import Job, RunConfig, WorkerReport, given, trial_seed
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "patient_intake"


class FakeClient:
    """The gateway as shard mode sees it: the domain's task inputs."""

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self._tasks = tasks

    def tasks(self, domain: str) -> list[dict[str, Any]]:
        return [t for t in self._tasks if t["domain"] == domain]

    def close(self) -> None:
        pass


def _tasks(count: int) -> list[dict[str, Any]]:
    return [t.to_json() for t in domain_data(DOMAIN).tasks[:count]]


@pytest.fixture
def fake_gateway(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    tasks = _tasks(2)
    monkeypatch.setattr("sopgym.client.connect", lambda *a, **k: FakeClient(tasks))
    monkeypatch.setattr(shard_mode, "POLL_S", 0.01)
    monkeypatch.setattr(shard_mode, "PROGRESS_S", 0.0)
    return tasks


def _finished(job: dict[str, Any], **changes: Any) -> WorkerReport:
    report = WorkerReport(task_id=job["task"]["id"], domain=DOMAIN, trial=job["trial"],
                          status="finished")  # fmt: skip
    return msgspec.structs.replace(report, **changes)


def _lines(run_dir: Path, stem: str = "shard-0000-of-0001") -> list[dict[str, Any]]:
    path = run_dir / "shards" / f"{stem}.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


# ---- (9) one job builder: a shard's job carries the trial and its seed ----
def test_a_shards_jobs_carry_trial_and_seed_as_a_local_runs_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_gateway: list[dict[str, Any]]
) -> None:
    jobs: list[dict[str, Any]] = []

    def work(agent: Any, client: Any, job: dict[str, Any], settings: Any) -> tuple[Any, Any]:
        jobs.append(job)
        return _finished(job), None

    monkeypatch.setattr(shard_mode, "_work_one", work)
    settings = ShardSettings(gateway="http://gw", domains=[DOMAIN], trials=2, seed=7)
    assert run_shard(settings, "0/1", tmp_path / "run", DATA_ROOT, log=lambda _: None) == 4
    assert [(j["task"]["id"], j["trial"]) for j in jobs] == [
        (t["id"], trial) for trial in (0, 1) for t in fake_gateway
    ]
    assert [j["seed"] for j in jobs] == [7, 7, trial_seed(7, 1), trial_seed(7, 1)]
    # the local runner's job for the same task and trial is the same job, key for key
    runner = Runner(RunConfig(domains=[DOMAIN], seed=7, trials=2), tmp_path / "local", DATA_ROOT)
    runner.prepare()
    task = domain_data(DOMAIN).tasks[0]
    local = runner.job(task, 1)
    assert local == {**jobs[2], "run_id": "local"}
    assert set(Job(task.to_json(), "r").to_json()) == set(local) - {"replay"}


# ---- (2) a dependency down mid-run: pause, then work the same task again ----
def test_a_shard_pauses_for_a_service_down_and_works_the_task_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_gateway: list[dict[str, Any]]
) -> None:
    answers = iter(["down", "unreachable", "ok", "ok"])

    def work(agent: Any, client: Any, job: dict[str, Any], settings: Any) -> tuple[Any, Any]:
        answer = next(answers)
        if answer == "down":  # a tool call answered service_unavailable: in the record
            record = {
                "calls": [{"name": "validate_insurance", "error_code": "service_unavailable"}]
            }
            return _finished(job, status="failed"), record
        if answer == "unreachable":
            error = "InfraError: gateway http://gw unreachable: refused"
            return _finished(job, status=INFRA_ERROR, error=error), None
        return _finished(job), None

    monkeypatch.setattr(shard_mode, "_work_one", work)
    heard: list[str] = []
    settings = ShardSettings(gateway="http://gw", domains=[DOMAIN], outage_wait=30)
    assert run_shard(settings, "0/1", tmp_path / "run", DATA_ROOT, log=heard.append) == 2
    rows = _lines(tmp_path / "run")
    assert [r["report"]["status"] for r in rows] == ["finished", "finished"], "no task lost"
    assert [r["report"]["task_id"] for r in rows] == [t["id"] for t in fake_gateway]
    assert any("dependency down" in line for line in heard)
    assert any("resuming" in line for line in heard)
    meta = orjson.loads((tmp_path / "run" / "shards" / "shard-0000-of-0001.json").read_bytes())
    assert meta["outages"] == 1


def test_an_outage_past_its_bound_is_recorded_as_an_infrastructure_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_gateway: list[dict[str, Any]]
) -> None:
    def work(agent: Any, client: Any, job: dict[str, Any], settings: Any) -> tuple[Any, Any]:
        error = "InfraError: POST /v1/episodes: 503 service_unavailable after 5 attempt(s)"
        return _finished(job, status=INFRA_ERROR, error=error), None

    monkeypatch.setattr(shard_mode, "_work_one", work)
    settings = ShardSettings(gateway="http://gw", domains=[DOMAIN], outage_wait=0.05)
    run_shard(settings, "0/1", tmp_path / "run", DATA_ROOT, log=lambda _: None)
    assert {r["report"]["status"] for r in _lines(tmp_path / "run")} == {INFRA_ERROR}


def test_a_final_state_lost_to_a_service_down_at_the_finish_is_an_outage() -> None:
    # compose/smoke.sh (issue 47): tod/live's service killed as an episode finished; the
    # answer was in, the state never handed over: recorded as an infra error, never re-run
    finished = WorkerReport(task_id="tod_live-0017", status="finished")
    lost = "service_unavailable: tool service tod/live unreachable: upstream closed the connection"
    record = {"calls": [], "finished": True, "state_error": lost}
    assert shard_mode.is_outage(finished, record) == f"final state: {lost}"
    refused = {"calls": [], "finished": True, "state_error": "unknown_task: no such task"}
    assert shard_mode.is_outage(finished, refused) is None, "only a service down is an outage"


def test_an_injected_fault_is_no_outage() -> None:
    error = "lookup: upstream_error (given up)"
    faulted = WorkerReport(task_id="t", status=INFRA_ERROR, error=error)
    assert shard_mode.is_outage(faulted, {"calls": [{"error_code": "upstream_error"}]}) is None


# ---- (3) claims: a unique identity, given back by a stopping worker ----
def test_workers_on_one_host_with_one_pid_still_take_different_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # host networking: every container has the host's name; each worker is PID 1
    monkeypatch.setattr("socket.gethostname", lambda: "vm")
    monkeypatch.setattr(os, "getpid", lambda: 1)
    monkeypatch.delenv(shard_mode.WORKER_ID_ENV, raising=False)
    monkeypatch.delenv(shard_mode.WORKER_ID_FILE_ENV, raising=False)
    first, second = worker_identity(), worker_identity()
    assert first != second
    taken = [claim(tmp_path, 2, first), claim(tmp_path, 2, second)]
    assert [s.index if s else None for s in taken] == [0, 1]
    assert claim(tmp_path, 2, worker_identity()) is None, "a third worker finds none free"


def test_a_restarted_container_is_the_same_worker_and_a_pod_is_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(shard_mode.WORKER_ID_ENV, raising=False)
    monkeypatch.setenv(shard_mode.WORKER_ID_FILE_ENV, str(tmp_path / "worker-id"))
    assert worker_identity() == worker_identity(), "kept in the container's own file"
    monkeypatch.setenv(shard_mode.WORKER_ID_ENV, "agent-worker-7f9c-x2")
    assert worker_identity() == "agent-worker-7f9c-x2"


def test_a_worker_stopped_mid_shard_gives_its_claim_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_gateway: list[dict[str, Any]]
) -> None:
    def stopped(*args: Any) -> Any:
        raise SystemExit(143)  # what SIGTERM raises (sopgym.core.stopping)

    monkeypatch.setattr(shard_mode, "_work_one", stopped)
    settings = ShardSettings(gateway="http://gw", domains=[DOMAIN])
    with pytest.raises(SystemExit):
        run_shard(settings, "auto/2", tmp_path / "run", DATA_ROOT, log=lambda _: None)
    shard = claim(tmp_path / "run", 2, "the-next-worker")
    assert shard is not None and shard.index == 0, "the stopped worker's shard is free again"


# ---- merge: a task worked twice counts once; stuck shards are named, not waited on ----
def _write_shard(run_dir: Path, shard: Shard, rows: list[dict[str, Any]], done: bool) -> None:
    folder = run_dir / "shards"
    folder.mkdir(parents=True, exist_ok=True)
    meta = {**shard_mode.asdict(ShardSettings(gateway="http://gw", domains=[DOMAIN], limit=4)),
            "count": shard.count, "shard": shard.index,
            "finished_at": 1.0 if done else None}  # fmt: skip
    (folder / f"{shard.stem}.json").write_bytes(orjson.dumps(meta))
    body = b"".join(orjson.dumps({"report": r, "record": None}) + b"\n" for r in rows)
    (folder / f"{shard.stem}.jsonl").write_bytes(body)


def test_merge_counts_a_task_worked_twice_once_and_names_a_stuck_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = _tasks(4)
    report = {"task_id": tasks[0]["id"], "status": "failed", "episode_id": None, "error": "x"}
    _write_shard(tmp_path, Shard(0, 2), [report, report], done=True)  # worked twice
    _write_shard(tmp_path, Shard(1, 2), [], done=False)
    claim_file = tmp_path / "shards" / "shard-0001-of-0002.claim"
    claim_file.write_text("vm-dead0worker\n")
    old = time.time() - shard_mode.STALE_S - 60
    os.utime(claim_file, (old, old))
    monkeypatch.setattr(shard_mode, "POLL_S", 0.02)
    heard: list[str] = []
    started = time.monotonic()
    summary = merge(tmp_path, 2, wait_s=60, data_root=DATA_ROOT, log=heard.append, stall_s=0.2)
    assert time.monotonic() - started < 30, "a stuck shard ends the wait, not the full --wait"
    assert summary.duplicate_task_rows == 1
    lines = (tmp_path / "results.jsonl").read_bytes().splitlines()
    assert [orjson.loads(line)["task_id"] for line in lines] == [tasks[0]["id"]]
    assert summary.unfinished_shards == [1]
    assert "stuck (vm-dead0worker" in (given(summary.unfinished_shard_states) or {})["1"]
    assert any("stuck" in line and "shard 1" in line for line in heard)


def test_merge_stall_counts_from_the_last_heartbeat_not_from_when_a_claim_went_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 47: --stall S waited STALE_S (120 s) + S for a worker that died holding its claim
    tasks = _tasks(4)
    report = {"task_id": tasks[0]["id"], "status": "failed", "episode_id": None, "error": "x"}
    _write_shard(tmp_path, Shard(0, 2), [report], done=True)
    _write_shard(tmp_path, Shard(1, 2), [], done=False)
    claim_file = tmp_path / "shards" / "shard-0001-of-0002.claim"
    claim_file.write_text("vm-worker-1\n")
    monkeypatch.setattr(shard_mode, "POLL_S", 0.02)
    alive = threading.Event()
    alive.set()

    def heartbeat() -> None:  # the worker, alive for its first 1.5 s, then gone
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            os.utime(claim_file)
            time.sleep(0.1)
        alive.clear()

    threading.Thread(target=heartbeat, daemon=True).start()
    started = time.monotonic()
    summary = merge(tmp_path, 2, wait_s=20, data_root=DATA_ROOT, log=lambda _: None,
                    stall_s=1.0)  # fmt: skip
    waited = time.monotonic() - started
    assert not alive.is_set(), "a shard whose claim beats is at work: no stall while it beats"
    assert waited < 1.5 + 1.0 + 3, f"waited {waited:.1f}s: --stall 1 after the last heartbeat"
    assert summary.unfinished_shards == [1]


def test_a_claim_file_is_a_data_file_0644(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        shard = claim(tmp_path, 2, "vm-worker-1")
    finally:
        os.umask(previous)
    assert shard is not None
    mode = (tmp_path / "shards" / f"{shard.stem}.claim").stat().st_mode & 0o777
    assert mode == 0o644, oct(mode)


def test_a_partial_merge_says_its_tsr_over_the_episodes_that_ran(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sopgym.cli.scaleout import merge_command

    tasks = _tasks(4)  # two shards of two tasks each; shard 1 never ran
    rows = [{"task_id": t["id"], "status": "failed", "episode_id": None, "error": "x"}
            for t in tasks[:2]]  # fmt: skip
    _write_shard(tmp_path, Shard(0, 2), rows, done=True)
    _write_shard(tmp_path, Shard(1, 2), [], done=False)
    result = CliRunner().invoke(
        merge_command, [str(tmp_path), "--shards", "2", "--data-root", str(DATA_ROOT)]
    )
    assert result.exit_code == 1, result.output  # an unfinished shard
    flat = " ".join(result.output.split())
    assert (
        "TSR 0.0% over 2 of 4 planned; 0 infra errors; 2 never run; TSR over all planned 0.0%"
        in flat
    )


def test_the_coverage_line_counts_episodes_never_run_apart_from_failures() -> None:
    # 54 of 80 episodes ran, all solved: 100% over those that ran, not a headline 67.5%
    summary = {"tasks": 80, "scored": 80, "correct": 54, "infra_errors": 0, "tsr": 0.675,
               "never_run": 26}  # fmt: skip
    assert coverage_line(summary) == (
        "TSR 100.0% over 54 of 80 planned; 0 infra errors; 26 never run; TSR over all planned 67.5%"
    )
    with_infra = {**summary, "scored": 78, "infra_errors": 2, "correct": 52, "never_run": 0}
    assert coverage_line(with_infra) == (
        "TSR 66.7% over 78 of 80 planned; 2 infra errors; TSR over all planned 65.0%"
    )


# ---- (4) SIGTERM as a container's PID 1 ----
def _in_pid_namespace(argv: list[str]) -> list[str]:
    """``argv`` as the first process of a new PID namespace (a container's PID 1), where the
    kernel drops a signal left to its default action; plain ``argv`` where that is not
    permitted (the exit status still tells a clean exit from a death by the signal)."""
    probe = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True)
    if probe.returncode == 0:
        return ["unshare", "--pid", "--fork", "--kill-child=SIGKILL", *argv]
    return argv


def _stop_within(process: subprocess.Popen[str], ready: str) -> tuple[int, float, str]:
    """SIGTERM ``process`` once its output says ``ready``; its status, seconds to stop, log."""
    assert process.stdout is not None
    seen = ""
    deadline = time.monotonic() + 60
    while ready not in seen and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen += line
    assert ready in seen, seen
    target = process.pid
    args = process.args
    if isinstance(args, list) and os.path.basename(str(args[0])) == "unshare":
        child = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        target = int(child[0])  # PID 1 inside: signalled from outside, as the runtime does
    sent = time.monotonic()
    os.kill(target, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return -999, time.monotonic() - sent, seen
    rest = process.stdout.read()
    return process.returncode, time.monotonic() - sent, seen + rest


@pytest.mark.skipif(sys.platform != "linux", reason="PID namespaces are Linux's")
def test_a_shard_worker_stops_on_sigterm_as_pid_1_and_gives_its_shard_back(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    argv = [sys.executable, "-m", "sopgym", "agent-worker", "--gateway",
            f"http://127.0.0.1:{free_port()}", "--shard", "auto/1", "--domain", DOMAIN,
            "--run-dir", str(run_dir), "--wait", "120"]  # fmt: skip
    env = {**os.environ, "OTEL_SDK_DISABLED": "true", "COLUMNS": "200"}
    process = subprocess.Popen(
        _in_pid_namespace(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=env,
    )  # fmt: skip
    status, took, log = _stop_within(process, "claimed by")
    assert status == 128 + signal.SIGTERM, log  # unshare passes its child's status on
    assert took < 5.0, took
    assert not (run_dir / "shards" / "shard-0000-of-0001.claim").exists(), log


@pytest.mark.skipif(sys.platform != "linux", reason="PID namespaces are Linux's")
def test_a_traced_server_exits_on_sigterm_as_pid_1_after_its_flush(tmp_path: Path) -> None:
    script = (
        "import time\n"
        "from sopgym.observability.tracing import setup_tracing\n"
        f"setup_tracing('t', endpoint='http://127.0.0.1:{free_port()}/v1/traces')\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    process = subprocess.Popen(
        _in_pid_namespace([sys.executable, "-c", script]), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    status, took, log = _stop_within(process, "ready")
    assert status == 128 + signal.SIGTERM, log
    assert took < 5.0


# ---- the client retries service_unavailable where nothing is recorded ----
class ScriptedTransport:
    def __init__(self, replies: list[Reply]) -> None:
        self.replies, self.sent = replies, 0

    def request(self, *args: Any) -> Reply:
        self.sent += 1
        return self.replies.pop(0)

    def close(self) -> None:
        pass


def test_opening_an_episode_retries_a_service_restarting() -> None:
    down = Reply(503, orjson.dumps({"error": {"code": "service_unavailable", "message": "x"}}))
    opened = Reply(201, orjson.dumps({"episode_id": "e1", "token": "t", "sop": "", "tools": [],
                                      "input_schema": {}, "output_schema": {}}))  # fmt: skip
    client = GatewayClient("http://gw", backoff=0.0)
    client._http = ScriptedTransport([down, down, opened])  # type: ignore[assignment]
    assert client.open("T1", DOMAIN).id == "e1"
    # a tool call answered service_unavailable is not retried: the episode is the driver's
    client._http = ScriptedTransport([down, opened])  # type: ignore[assignment]
    with pytest.raises(InfraError, match="service_unavailable"):
        client.request("POST", "/v1/episodes/e1/tools/x", json={})


# ---- (10) n/a, not 0.0%, when every episode was an infrastructure error ----
def test_the_table_says_n_a_when_every_episode_was_an_infrastructure_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sopgym.evaluation.scoring import TaskScore, summarize

    domain = load_domain(DOMAIN)
    gold = domain_data(DOMAIN).gold
    task = domain_data(DOMAIN).tasks[0]
    from sopgym.evaluation.scoring import score_episode

    lost: TaskScore = score_episode(domain, task, None, gold[task.id], "gateway unreachable")
    summary = summarize([lost, lost])
    print_summary(summary)
    table = capsys.readouterr().out
    assert "0.0%" not in table
    assert table.count("n/a") >= 6, table  # ECR, C-TSR, TSR, tool F1 in the domain and all rows


# ---- a tool service that restarted has lost its episodes: an infrastructure error ----
def test_a_call_on_an_episode_its_restarted_service_lost_is_service_unavailable(
    tmp_path: Path,
) -> None:
    import httpx

    from sopgym.core.access import SECRET_HEADER
    from sopgym.orchestration.stack import embedded_stack

    with embedded_stack([DOMAIN], tmp_path / "logs", DATA_ROOT) as stack:
        client = GatewayClient(stack.gateway_url, backoff=0.0)
        try:
            episode = client.open(domain_data(DOMAIN).tasks[0].id, DOMAIN)
            # what a restart does to the service: it no longer holds the episode
            forgotten = httpx.delete(
                f"{stack.services[DOMAIN]}/v1/episodes/{episode.id}",
                headers={SECRET_HEADER.decode(): stack.service_secret},
            )
            assert forgotten.status_code < 300, forgotten.text
            with pytest.raises(InfraError, match="service_unavailable"):
                episode.call("validate_insurance", {})
            record = client.record(episode.id, episode.token)
        finally:
            client.close()
    (call,) = record["calls"]
    assert call["error_code"] == "service_unavailable", "never the agent's unknown_episode"
    failed = WorkerReport(task_id="t", status="failed")
    assert shard_mode.is_outage(failed, record) is not None, "the shard re-runs it"

"""Many episodes per worker process, as a user runs them (``sopgym run --concurrency N``):
the same rows at 1 and 50 in flight, nothing lost on an interrupt, one episode's crash or
hang costing only itself, one trace per episode under the runner's span, and reports that no
agent can write (issue 40, issue 41 points 1-2)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import orjson
import pytest

from sopgym.cli.run import worker_pace
from sopgym.orchestration.runner import _shares
from tests.helpers import DATA_ROOT
from tests.test_infra_faults import finish, keyed, rows, summary, wait_for_rows
from tests.test_runs import sopgym

AGENTS = "tests.concurrency_agents"


def run_args(runs: Path, run_id: str, *extra: str, domain: str = "patient_intake") -> list[str]:
    return ["run", domain, "--runs-dir", str(runs), "--run-id", run_id, "--data-root",
            str(DATA_ROOT), "--quiet", *extra]  # fmt: skip


def run(runs: Path, run_id: str, *extra: str, env: dict | None = None, **kw: str) -> list[dict]:
    process = sopgym(*run_args(runs, run_id, *extra, **kw), env={**os.environ, **(env or {})})
    finish(process, timeout=600)
    return rows(runs / run_id)


def essence(row: dict) -> tuple:
    """What an episode did and how it scored, without its timing or ids."""
    calls = [(c["name"], orjson.dumps(c["arguments"], option=orjson.OPT_SORT_KEYS), c["status"])
             for c in (row["trajectory"] or {}).get("calls", [])]  # fmt: skip
    verdicts = {k: v.get("value") for k, v in row["score"]["scores"].items()}
    sort = orjson.OPT_SORT_KEYS
    outputs = orjson.dumps(row["outputs"], option=sort)
    return (row["status"], row["error"], outputs, calls, row["score"]["success"],
            orjson.dumps(verdicts, option=sort))  # fmt: skip


def test_pace_spreads_episodes_over_processes() -> None:
    assert worker_pace(None, None) == {"concurrency": 2, "workers": 2}  # as before
    assert worker_pace(None, 8) == {"concurrency": 8, "workers": 8}
    assert worker_pace(500, 3) == {"concurrency": 500, "workers": 3}
    assert worker_pace(2, 16) == {"concurrency": 2, "workers": 2}
    assert worker_pace(500, None)["workers"] == min(500, os.cpu_count() or 1)
    assert _shares(10, 3) == [4, 3, 3] and _shares(500, 2) == [250, 250]


def test_concurrency_1_and_50_give_identical_rows(tmp_path: Path) -> None:
    noisy = ("--model", "scripted:noisy", "--seed", "3", "--limit", "25", "--trials", "2",
             "--no-trace")  # fmt: skip
    one = run(tmp_path, "c1", *noisy, "--concurrency", "1")
    fifty = run(tmp_path, "c50", *noisy, "--concurrency", "50")
    assert len(one) == len(fifty) == 50
    by_key = {(r["task_id"], r["trial"]): essence(r) for r in one}
    assert {(r["task_id"], r["trial"]): essence(r) for r in fifty} == by_key
    assert 0 < sum(r["score"]["success"] for r in one) < 50  # noisy: the rows differ in kind
    config = summary(tmp_path / "c50")["config"]
    assert (config["concurrency"], config["workers"]) == (50, min(50, os.cpu_count() or 1))


@pytest.mark.parametrize("agent", ["PrintingReact", "ForgingReact"])
def test_what_an_agent_prints_is_never_a_report(tmp_path: Path, agent: str) -> None:
    recorded = run(tmp_path, "p", "--agent", f"{AGENTS}:{agent}", "--limit", "8",
                   "--concurrency", "4", "--no-trace")  # fmt: skip
    assert sorted(r["task_id"] for r in recorded) == sorted({r["task_id"] for r in recorded})
    assert len(recorded) == 8
    assert all(r["status"] == "finished" and r["score"]["success"] for r in recorded), [
        (r["task_id"], r["status"], r["error"]) for r in recorded
    ]
    assert all(r["trajectory"]["task_id"] == r["task_id"] for r in recorded)  # its own episode
    logs = "".join(p.read_text() for p in (tmp_path / "p" / "logs").glob("worker-*.log"))
    printed = "thinking" if agent == "PrintingReact" else "InfraError: forged"
    assert printed in logs  # what it printed went to the worker's log


def test_an_agent_claiming_infra_errors_gains_nothing(tmp_path: Path) -> None:
    noisy = ("--model", "scripted:noisy", "--seed", "3", "--limit", "20", "--no-trace",
             "--concurrency", "4")  # fmt: skip
    plain = run(tmp_path, "plain", "--agent", "react", *noisy, domain="customer_service")
    claiming = run(tmp_path, "claim", "--agent", f"{AGENTS}:InfraClaimingReact", *noisy,
                   domain="customer_service")  # fmt: skip
    claimed = [r for r in claiming if r.get("claimed_infra")]
    assert claimed, "the noisy model makes calls fail, and the wrapper claims each"
    assert all(r["status"] == "failed" and not r["score"]["infra_error"] for r in claimed)
    assert all(not r["score"]["success"] for r in claimed)
    assert summary(tmp_path / "claim")["infra_errors"] == 0
    assert summary(tmp_path / "claim")["tsr"] <= summary(tmp_path / "plain")["tsr"]
    assert not any(r.get("claimed_infra") for r in plain)


def test_one_episode_crashing_or_hanging_never_takes_down_the_others(tmp_path: Path) -> None:
    recorded = run(tmp_path, "t", "--agent", f"{AGENTS}:TroubledReact", "--limit", "12",
                   "--concurrency", "12", "--workers", "1", "--task-timeout", "2",
                   "--no-trace")  # fmt: skip
    outcome = {r["task_id"]: r for r in recorded}
    assert len(outcome) == 12
    crashed = [t for t in outcome if t.endswith("1")]
    hung = [t for t in outcome if t.endswith("2")]
    for task_id, row in outcome.items():
        if task_id in crashed:
            assert row["status"] == "failed" and "this agent crashed" in row["error"]
        elif task_id in hung:
            assert row["status"] == "failed" and "--task-timeout" in row["error"], row["error"]
        else:
            assert row["status"] == "finished" and row["score"]["success"], row["error"]


def test_sigterm_with_50_in_flight_loses_nothing_and_resumes_exactly(tmp_path: Path) -> None:
    args = run_args(tmp_path, "i", "--agent", f"{AGENTS}:SlowReact", "--limit", "60",
                    "--concurrency", "50", "--no-trace")  # fmt: skip
    victim = sopgym(*args, env={**os.environ, "SOPGYM_TEST_AGENT_PAUSE": "1.5"})
    wait_for_rows(tmp_path / "i", 1)
    victim.send_signal(signal.SIGTERM)
    _, err = victim.communicate(timeout=60)
    assert victim.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    first = rows(tmp_path / "i")
    assert len(first) == len(set(keyed(first))) < 60
    assert all(r["status"] == "finished" for r in first)  # nothing half-done was recorded
    finish(sopgym(*run_args(tmp_path, "i", "--resume", "i")), timeout=300)
    final = rows(tmp_path / "i")
    assert len(final) == 60 == len(set(keyed(final)))
    assert final[: len(first)] == first  # the rows before the interrupt kept as they were
    assert summary(tmp_path / "i")["tsr"] == 1.0


def spans_of(run_dir: Path) -> list[tuple[str, dict]]:
    """Every span of the run's trace store, with its service's name."""
    found = []
    for path in (run_dir / "traces").glob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            for resource in orjson.loads(line)["resourceSpans"]:
                attributes = {a["key"]: a["value"] for a in resource["resource"]["attributes"]}
                service = attributes["service.name"]["stringValue"]
                for scope in resource["scopeSpans"]:
                    found += [(service, span) for span in scope["spans"]]
    return found


def test_one_trace_per_episode_under_the_runners_span(tmp_path: Path) -> None:
    run(tmp_path, "tr", "--agent", f"{AGENTS}:SlowReact", "--limit", "20", "--concurrency",
        "20", env={"SOPGYM_TEST_AGENT_PAUSE": "0.5"})  # fmt: skip
    spans = spans_of(tmp_path / "tr")
    tasks = [s for service, s in spans if service == "sopgym-runner"]
    assert len(tasks) == 20 and len({s["traceId"] for s in tasks}) == 20
    roots = {s["traceId"]: s["spanId"] for s in tasks}
    worker_roots = [s for service, s in spans if service == "sopgym-agent-worker"
                    and s.get("parentSpanId") in roots.values()]  # fmt: skip
    assert Counter(s["traceId"] for s in worker_roots) == Counter({t: 1 for t in roots})
    assert all(roots[s["traceId"]] == s["parentSpanId"] for s in worker_roots)


def test_a_hand_fed_worker_runs_jobs_at_once_and_names_them(tmp_path: Path) -> None:
    """``agent-worker --concurrency`` on stdin, as the docs show: reports in the order the
    episodes end, each naming its job."""
    from sopgym.agents.oracle import replay_of
    from sopgym.orchestration.stack import embedded_stack
    from tests.helpers import domain_data

    data = domain_data("patient_intake")
    jobs = [{"task": t.to_json(), "replay": replay_of(data.gold[t.id]), "job_id": f"j{i}"}
            for i, t in enumerate(data.tasks[:6])]  # fmt: skip
    with embedded_stack(["patient_intake"], tmp_path / "logs", DATA_ROOT) as stack:
        worker = subprocess.run(
            [sys.executable, "-m", "sopgym", "agent-worker", "--gateway", stack.gateway_url,
             "--agent", "oracle", "--concurrency", "6"],
            input="".join(orjson.dumps(j).decode() + "\n" for j in jobs), capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
    assert worker.returncode == 0, worker.stderr[-2000:]
    reports = [orjson.loads(line) for line in worker.stdout.splitlines()]
    assert sorted(str(r["job_id"]) for r in reports) == sorted(str(j["job_id"]) for j in jobs)
    assert all(r["status"] == "finished" for r in reports), reports


def test_env_serve_works_as_many_requests_at_once_as_asked() -> None:
    """anyio's default 40 threads would cap the episodes a trainer steps at once at 40."""
    import anyio.to_thread
    from fastapi.testclient import TestClient

    from sopgym.env.server import EnvPool, create_app

    app = create_app(EnvPool.__new__(EnvPool), concurrency=700)
    with TestClient(app) as client:  # the lifespan runs on the client's own event loop
        assert client.portal is not None
        limiter = client.portal.call(anyio.to_thread.current_default_thread_limiter)
        assert limiter.total_tokens == 700


def test_shard_mode_refuses_a_concurrency_it_would_not_use(tmp_path: Path) -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "sopgym", "agent-worker", "--gateway", "http://127.0.0.1:9",
         "--shard", "0/2", "--run-dir", str(tmp_path), "--domain", "patient_intake",
         "--concurrency", "4"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2 and "--concurrency" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_kept_connection_above_fd_1023_is_checked_and_an_episode_thread_closes_its_own() -> (
    None
):
    """A worker holding hundreds of episodes holds sockets numbered past select()'s 1,024
    (1,000 in flight failed 272 episodes with "filedescriptor out of range in select()");
    and each episode's thread closes its sockets when it ends, or they would pile up."""
    import resource
    import socket
    import threading

    from sopgym.core.keepalive import Connections, _spoken_to_while_idle

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard limit of open files ({hard}) is below 1,200")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    padding = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        ours, theirs = socket.socketpair()
        assert ours.fileno() > 1023
        assert not _spoken_to_while_idle(ours)
        theirs.close()  # the server's close while the connection sat idle
        assert _spoken_to_while_idle(ours)
        ours.close()

        pool, kept = Connections(), []

        def episode() -> None:
            a, b = socket.socketpair()
            kept.extend([a, b])
            pool.keep("127.0.0.1", 1, a)
            Connections.close_thread()

        worker = threading.Thread(target=episode)
        worker.start()
        worker.join()
        assert kept[0].fileno() == -1  # closed with its thread
        kept[1].close()
    finally:
        for fd in padding:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_pools_threads_serve_episode_after_episode_and_a_stuck_one_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """:class:`EpisodePool` keeps its threads (and with them their kept connections): 8 jobs
    at 2 in flight run on (at most) 2 threads. A stuck episode is answered by the watchdog, a
    new thread takes its place, and the stuck thread ends once its episode returns, its late
    result dropped."""
    from sopgym.agents import worker as worker_module
    from sopgym.runs.records import WorkerReport

    release = threading.Event()
    ran_on: dict[str, int] = {}
    stuck_threads: list[threading.Thread] = []

    def fake_run_job(agent: object, client: object, job: dict, *_: object) -> WorkerReport:
        task_id = job["task"]["id"]
        ran_on[task_id] = threading.get_ident()
        if task_id == "stuck":
            stuck_threads.append(threading.current_thread())
            release.wait(30)
        return WorkerReport(task_id=task_id, domain="d", trial=0, status="finished")

    class Client:
        def close(self) -> None:
            pass

    monkeypatch.setattr(worker_module, "run_job", fake_run_job)
    class Entry:  # the registry's answer for an agent: its factory
        factory = staticmethod(lambda **options: object())

    monkeypatch.setattr(worker_module, "resolve_agent", lambda spec: Entry())
    monkeypatch.setattr(worker_module, "connect", lambda *a, **k: Client())
    monkeypatch.setattr(worker_module.EpisodePool, "GRACE_S", 0.1)
    pool = worker_module.EpisodePool("any", "http://127.0.0.1:9", 0.2, {}, concurrency=2)

    def run_all(task_ids: list[str]) -> list[WorkerReport]:
        futures = []
        for task_id in task_ids:
            pool.acquire()
            futures.append(pool.submit({"task": {"id": task_id, "domain": "d"}}))
        return [f.result(timeout=30) for f in futures]

    reports = run_all([f"t{i}" for i in range(8)])
    assert all(r.status == "finished" for r in reports)
    assert len(set(ran_on.values())) <= 2  # at most two threads ran the eight

    reports = run_all(["stuck", *[f"u{i}" for i in range(6)]])
    by_task = {r.task_id: r for r in reports}
    assert by_task["stuck"].status == "failed" and "--task-timeout" in str(by_task["stuck"].error)
    assert all(by_task[f"u{i}"].status == "finished" for i in range(6))
    others = {ran_on[f"u{i}"] for i in range(6)}
    assert ran_on["stuck"] not in others  # the stuck thread ran nothing else meanwhile
    release.set()
    stuck_threads[0].join(10)
    assert not stuck_threads[0].is_alive()  # it ended once its episode returned
    pool.close()


def test_serve_returns_only_once_every_report_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hand-fed worker whose stdin ends exits once the episodes in flight are over: every
    one's report must be written by then. A slot freed before its report left would let the
    last wave's reports go down with the process (a slow reader of stdout widens the gap)."""
    import io
    import time

    from sopgym.agents import worker as worker_module
    from sopgym.runs.records import WorkerReport

    def fake_run_job(agent: object, client: object, job: dict, *_: object) -> WorkerReport:
        time.sleep(0.2)  # all eight in flight before the first ends
        return WorkerReport(task_id=job["task"]["id"], domain="d", trial=0, status="finished")

    class Client:
        def close(self) -> None:
            pass

    class Entry:
        factory = staticmethod(lambda **options: object())

    class SlowOut(io.StringIO):
        def write(self, text: str) -> int:
            time.sleep(0.05)  # a reader that takes its time
            return super().write(text)

    monkeypatch.setattr(worker_module, "run_job", fake_run_job)
    monkeypatch.setattr(worker_module, "resolve_agent", lambda spec: Entry())
    monkeypatch.setattr(worker_module, "connect", lambda *a, **k: Client())
    jobs = "".join(orjson.dumps({"task": {"id": f"t{i}", "domain": "d"}}).decode() + "\n"
                   for i in range(8))  # fmt: skip
    out = SlowOut()
    worker_module.serve("any", "http://127.0.0.1:9", 5, {}, jobs=io.StringIO(jobs), out=out,
                        concurrency=8)  # fmt: skip
    written = [orjson.loads(line)["task_id"] for line in out.getvalue().splitlines()]
    assert sorted(written) == sorted(f"t{i}" for i in range(8))

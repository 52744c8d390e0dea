"""The lease store's contract (sopgym.orchestration.leases) and the run service's door: each
attempt handed to one worker at a time, a lapsed lease handed to another, one result per
attempt whatever arrives late or twice, all of it kept across a restart; bad requests refused
in one line."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sopgym.orchestration.leases import LeaseRefused, LeaseStore
from sopgym.runs.records import RunConfig, WorkerReport
from tests.helpers import DATA_ROOT

ATTEMPTS = [("t-1", 0), ("t-2", 0), ("t-3", 0), ("t-1", 1)]


def _line(task_id: str, trial: int, status: str = "finished") -> dict:
    report = WorkerReport(task_id=task_id, domain="d", trial=trial, status=status)
    return {"report": report.to_json(), "record": None}


def _give_up(task_id: str, trial: int, lapses: int) -> dict:
    return _line(task_id, trial, "infra_error") | {"lapses": lapses}


def _store(tmp_path: Path, lease_s: float = 30.0, max_lapses: int = 3) -> LeaseStore:
    store = LeaseStore(tmp_path / "leases.sqlite", lease_s, max_lapses)
    store.plan({"agent": "oracle"}, ATTEMPTS)
    return store


def test_attempts_are_leased_in_order_each_to_one_worker(tmp_path: Path) -> None:
    store = _store(tmp_path)
    first = store.lease("a", 2, _give_up)
    second = store.lease("b", 5, _give_up)
    assert [(x.task_id, x.trial) for x in first] == ATTEMPTS[:2]
    assert [(x.task_id, x.trial) for x in second] == ATTEMPTS[2:]
    assert store.lease("c", 5, _give_up) == []
    progress = store.progress()
    assert (progress.planned, progress.leased, progress.free) == (4, 4, 0)
    assert progress.held_by == {"a": 2, "b": 2}


def test_a_lapsed_lease_goes_to_another_worker_and_the_first_result_stands(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, lease_s=0.2)
    (dead,) = store.lease("killed", 1, _give_up)
    time.sleep(0.3)  # the worker stopped renewing: SIGKILL
    (taken,) = store.lease("alive", 1, _give_up)
    assert (taken.task_id, taken.trial) == (dead.task_id, dead.trial)
    assert taken.lease != dead.lease
    assert store.renew("killed", [dead.lease]) == [dead.lease], "the dead worker lost it"
    assert store.accept("alive", taken.lease, "t-1", 0, _line("t-1", 0)) == "accepted"
    # the slow worker's late result: counted once as a duplicate, never a second row
    assert store.accept("killed", dead.lease, "t-1", 0, _line("t-1", 0, "failed")) == "duplicate"
    assert store.accept("alive", taken.lease, "t-1", 0, _line("t-1", 0)) == "resent"
    results = store.results()
    assert list(results) == [("t-1", 0)]
    assert results[("t-1", 0)]["report"]["status"] == "finished"
    progress = store.progress()
    assert (progress.done, progress.duplicates, progress.resends, progress.lapsed) == (1, 1, 1, 1)


def test_renewal_keeps_a_lease_past_its_time(tmp_path: Path) -> None:
    store = _store(tmp_path, lease_s=0.3)
    (held,) = store.lease("a", 1, _give_up)
    for _ in range(3):
        time.sleep(0.15)
        assert store.renew("a", [held.lease]) == []
    assert [x.task_id for x in store.lease("b", 4, _give_up)] == ["t-2", "t-3", "t-1"]


def test_a_lease_answered_is_not_reported_lost_when_renewed(tmp_path: Path) -> None:
    """A worker renews the leases whose results are on their way: one the service has just
    accepted is answered, not taken by another worker."""
    store = _store(tmp_path)
    (done, open_) = store.lease("w", 2, _give_up)
    store.accept("w", done.lease, done.task_id, done.trial, _line(done.task_id, done.trial))
    assert store.renew("w", [done.lease, open_.lease]) == []
    assert store.renew("someone-else", [open_.lease]) == [open_.lease]


def test_given_back_leases_are_free_at_once_and_not_counted_as_lapses(tmp_path: Path) -> None:
    store = _store(tmp_path)
    held = store.lease("evicted", 2, _give_up)
    assert store.give_back("evicted", [x.lease for x in held]) == 2
    again = store.lease("other", 2, _give_up)
    assert [x.task_id for x in again] == ["t-1", "t-2"]
    progress = store.progress()
    assert (progress.given_back, progress.lapsed) == (2, 0)


def test_an_attempt_whose_workers_keep_dying_is_an_infra_error(tmp_path: Path) -> None:
    store = _store(tmp_path, lease_s=0.05, max_lapses=2)
    store.lease("w1", 1, _give_up)
    time.sleep(0.1)
    store.lease("w2", 1, _give_up)  # the same attempt: its first lapse
    time.sleep(0.1)
    given = store.lease("w3", 1, _give_up)  # its second lapse: given up, the next one leased
    assert [(x.task_id, x.trial) for x in given] == [("t-2", 0)]
    line = store.results()[("t-1", 0)]
    assert line["report"]["status"] == "infra_error" and line["lapses"] == 2


def test_everything_survives_a_restart_and_other_settings_are_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    (a, b) = store.lease("w", 2, _give_up)
    store.accept("w", a.lease, a.task_id, a.trial, _line(a.task_id, a.trial))
    store.close()
    again = LeaseStore(tmp_path / "leases.sqlite")
    again.plan({"agent": "oracle"}, ATTEMPTS)  # the same run: nothing changes
    assert again.renew("w", [b.lease]) == [], "the lease is still held after the restart"
    assert again.accept("w", a.lease, a.task_id, a.trial, _line(a.task_id, a.trial)) == "resent"
    assert list(again.results()) == [(a.task_id, a.trial)]
    with pytest.raises(LeaseRefused, match="agent 'fc' contradicts the run's stored 'oracle'"):
        again.plan({"agent": "fc"}, ATTEMPTS)


def test_results_for_another_attempt_or_run_are_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    (held,) = store.lease("w", 1, _give_up)
    with pytest.raises(LeaseRefused, match="is for task 't-1' trial 0, not task 't-2'"):
        store.accept("w", held.lease, "t-2", 0, _line("t-2", 0))
    with pytest.raises(LeaseRefused, match="not in this run"):
        store.accept("w", "no-such-lease", "t-9", 0, _line("t-9", 0))
    assert store.results() == {}


# ---- the run service's HTTP door ----
@pytest.fixture(scope="module")
def service_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    from sopgym.orchestration.run_service import RunService, create_app

    run_dir = tmp_path_factory.mktemp("runs") / "lease-door"
    config = RunConfig(domains=["patient_intake"], agent="oracle", limit=3)
    service = RunService(config, run_dir, DATA_ROOT, lease_s=30.0)
    with TestClient(create_app(service)) as client:
        yield client
    service.close()


def test_the_service_hands_out_whole_jobs_named_by_their_lease(service_client: TestClient) -> None:
    answer = service_client.post("/v1/leases", json={
        "worker": "w", "agent": "oracle", "model": "scripted", "want": 2}).json()  # fmt: skip
    assert len(answer["jobs"]) == 2 and answer["finished"] is False
    job = answer["jobs"][0]
    assert job["task"]["id"].startswith("patient_intake-") and job["replay"], "the oracle's"
    assert job["run_id"] == "lease-door" and job["job_id"]
    assert answer["progress"]["held_by"] == {"w": 2}


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (b"not json", 400, "malformed request"),
        (b'{"worker": "w", "agent": "oracle"}', 400, "malformed request"),
        (b'{"worker": "w", "agent": "fc", "model": "scripted", "want": 1}', 409,
         "this run works agent 'oracle' with model 'scripted'; worker 'w' runs agent 'fc'"),
        (b'{"worker": "w", "agent": "oracle", "model": "scripted", "want": -1}', 409,
         "want must be 0 or more"),
    ],
)
def test_bad_lease_requests_get_one_line(
    service_client: TestClient, body: bytes, status: int, error: str
) -> None:
    response = service_client.post("/v1/leases", content=body)
    assert response.status_code == status
    assert error in response.json()["error"] and "\n" not in response.json()["error"]


def test_a_result_that_is_not_a_report_is_refused(service_client: TestClient) -> None:
    response = service_client.post("/v1/results", json={
        "worker": "w", "lease": "x", "line": {"report": {"trial": "zero"}}})  # fmt: skip
    assert response.status_code == 409
    assert response.json()["error"].startswith("line.report is not a worker report")


def test_a_run_service_restarted_with_other_settings_is_refused(tmp_path: Path) -> None:
    from sopgym.orchestration.run_service import RunService

    run_dir = tmp_path / "restarted"
    first = RunService(RunConfig(domains=["patient_intake"], agent="oracle", limit=2), run_dir,
                       DATA_ROOT)  # fmt: skip
    first.close()
    again = RunService(RunConfig(domains=["patient_intake"], agent="oracle", limit=2), run_dir,
                       DATA_ROOT)  # fmt: skip
    assert again.store.progress().planned == 2, "the same run: carried on"
    again.close()
    with pytest.raises(LeaseRefused, match="seed 4 contradicts the run's stored 0"):
        RunService(RunConfig(domains=["patient_intake"], agent="oracle", limit=2, seed=4),
                   run_dir, DATA_ROOT)  # fmt: skip

"""The viewer's app without a browser (the browser tests, on real runs, are in test_viewer.py):
a run still being written shows live progress, a stopped one shows as interrupted, and bad
requests or unreadable run folders get a clear answer, never a server error."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from fastapi.testclient import TestClient

from sopgym.evaluation.scoring import TaskScore, summarize
from sopgym.runs.records import trial_seed
from sopgym.viewer.app import create_app
from sopgym.viewer.catalog import RunCatalog

DOMAIN = "patient_intake"


def _row(number: int, success: bool) -> dict[str, Any]:
    task_id = f"{DOMAIN}-{number:03d}"
    score = TaskScore(task_id, DOMAIN, completed=True, success=success,
                      fields={"insurance_status": success}, calls=1, gold_calls=1,
                      errors={} if success else {"wrong_final": 1})  # fmt: skip
    call = {"name": "validate_insurance", "arguments": {"patient_id": "P1"}, "status": 200,
            "error_code": None, "error_field": None, "result": {"policy_found": True},
            "duration_ms": 0.4, "in_catalog": True, "distractor": False}  # fmt: skip
    return {
        "task_id": task_id, "trial": 0, "domain": DOMAIN, "agent": "fc", "model": "scripted",
        "episode_id": f"ep-{number}", "status": "finished", "error": None, "elapsed_s": 0.1,
        "llm_calls": [{"input_tokens": 100, "output_tokens": 10}], "inputs": {"patient_id": "P1"},
        "outputs": {"insurance_status": "valid"},
        "gold_outputs": {"insurance_status": "valid" if success else "invalid"},
        "score": score.to_json(), "trajectory": {"calls": [call], "finished": True},
    }  # fmt: skip


def _append(run: Path, *rows: dict[str, Any]) -> None:
    with (run / "results.jsonl").open("ab") as out:
        for row in rows:
            out.write(orjson.dumps(row) + b"\n")


def _client(tmp_path: Path) -> tuple[TestClient, Path]:
    run = tmp_path / "runs" / "live"
    run.mkdir(parents=True)
    config = {"domains": [DOMAIN], "agent": "fc", "model": "scripted", "seed": 3,
              "task_count": 2, "trials": 2}  # fmt: skip
    (run / "config.json").write_bytes(orjson.dumps(config))
    return TestClient(create_app(RunCatalog([tmp_path / "runs"]))), run


@contextmanager
def _runner_holds(run: Path) -> Iterator[None]:
    """``run.lock`` held as a live runner process holds it (an exclusive flock)."""
    fd = os.open(run / "run.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        yield
    finally:
        os.close(fd)


def test_a_running_run_shows_its_progress_live(tmp_path: Path) -> None:
    client, run = _client(tmp_path)
    _append(run, _row(0, True))
    with _runner_holds(run):
        _shows_live_progress(client, run)


def _shows_live_progress(client: TestClient, run: Path) -> None:
    page = client.get("/runs/live")
    assert page.status_code == 200 and "running: 1 of 4 episodes recorded, about" in page.text
    progress = client.get("/api/runs/live/progress").json()
    eta = progress.pop("eta_s")
    assert progress == {
        "run_id": "live", "state": "running", "running": True, "recorded": 1, "success": 1,
        "planned": 4,
    }  # fmt: skip
    assert isinstance(eta, float) and eta >= 0
    with (run / "results.jsonl").open("ab") as out:
        out.write(orjson.dumps(_row(1, False))[:40])  # a row still being written
    assert client.get("/api/runs/live/progress").json()["recorded"] == 1
    (run / "results.jsonl").write_bytes(b"")
    _append(run, _row(0, True), _row(1, False))
    assert client.get("/api/runs/live/progress").json()["recorded"] == 2
    listing = client.get("/").text
    assert "live" in listing and "50.0%" in listing and "running" in listing  # partial TSR
    task = client.get("/runs/live/task", params={"domain": DOMAIN, "task": f"{DOMAIN}-001"})
    assert task.status_code == 200 and "wrong" in task.text and "&quot;invalid&quot;" in task.text


def test_a_run_no_runner_holds_shows_as_interrupted_not_running(tmp_path: Path) -> None:
    client, run = _client(tmp_path)
    _append(run, _row(0, True), _row(1, False))
    with _runner_holds(run):
        assert client.get("/api/runs/live/progress").json()["state"] == "running"
    # the runner died before its summary: the lock file stays, nobody holds it
    assert (run / "run.lock").exists()
    progress = client.get("/api/runs/live/progress").json()
    assert (progress["state"], progress["running"]) == ("interrupted", False)
    page = client.get("/runs/live").text
    assert "data-state='interrupted'" in page and "sopgym run --resume live" in page
    assert "running:" not in page and "updates live" not in page
    assert "50.0%" in page  # figures over the recorded episodes
    row = next(line for line in client.get("/").text.split("<tr>") if "/runs/live" in line)
    assert "interrupted" in row and "running" not in row
    summary = summarize(TaskScore(**_row(n, n == 0)["score"]) for n in range(2))
    (run / "summary.json").write_bytes(orjson.dumps(summary))
    assert client.get("/api/runs/live/progress").json()["state"] == "finished"
    assert "data-state='finished'" in client.get("/runs/live").text
    resumed = {**_row(0, True), "trial": 1}  # a resume recorded one more, then stopped
    _append(run, resumed)
    os.utime(run / "results.jsonl", ns=(time_before(run / "summary.json"),) * 2)
    assert client.get("/api/runs/live/progress").json()["state"] == "interrupted"


def test_a_task_page_shows_only_its_own_trials_injected_mistakes(tmp_path: Path) -> None:
    """injections.jsonl holds every trial's mistakes under the task's id: the page of trial 1
    shows the lines its trial seed (under the run's seed 3) sent, not trial 0's."""
    client, run = _client(tmp_path)
    _append(run, _row(1, False), {**_row(1, False), "trial": 1})
    task_id = f"{DOMAIN}-001"
    head = {"task_id": task_id, "domain": DOMAIN, "model": "scripted:noisy",
            "profile": "noisy"}  # fmt: skip

    def line(trial: int, kind: str, argument: object) -> bytes:
        call = {"name": "validate_insurance", "arguments": {"patient_id": argument}}
        record = {**head, "seed": 1000 + trial, "trial_seed": trial_seed(3, trial),
                  "kind": kind, "step": 0, "call": call, "expected": ["type"]}  # fmt: skip
        return orjson.dumps(record) + b"\n"

    (run / "injections.jsonl").write_bytes(line(0, "bad_type", 8) + line(1, "missing_arg", "Q"))
    params = {"domain": DOMAIN, "task": task_id}
    first = client.get("/runs/live/task", params={**params, "trial": 0}).text
    second = client.get("/runs/live/task", params={**params, "trial": 1}).text
    assert "bad_type" in first and "missing_arg" not in first
    assert "missing_arg" in second and "bad_type" not in second
    assert "injected in trial 1" in second


def time_before(path: Path) -> int:
    """A modification time (ns) earlier than ``path``'s: the state must not read mtimes."""
    return path.stat().st_mtime_ns - 1_000_000_000


def test_bad_requests_get_clear_answers(tmp_path: Path) -> None:
    client, run = _client(tmp_path)
    _append(run, _row(0, True))
    assert client.get("/runs/nope").status_code == 404
    missing = client.get("/runs/live/task", params={"domain": DOMAIN, "task": "x"})
    assert missing.status_code == 404 and "no episode of" in missing.text
    assert client.get("/runs/live/task").status_code == 422  # no task named
    assert client.get("/runs/live/task", params={"domain": DOMAIN, "task": "x",
                                                 "trial": "-1"}).status_code == 422  # fmt: skip
    assert client.get("/compare", params={"a": "live", "b": "nope"}).status_code == 404
    gone = client.get("/api/runs/nope/progress")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"
    with (run / "results.jsonl").open("ab") as out:
        out.write(b"not json\n")
    broken = client.get("/runs/live")
    assert broken.status_code == 422 and "results.jsonl" in broken.text and "line 2" in broken.text


def test_a_run_folder_given_directly_is_served(tmp_path: Path) -> None:
    _, run = _client(tmp_path)
    row = _row(0, True)
    _append(run, row)
    client = TestClient(create_app(RunCatalog([run])))
    (run / "summary.json").write_bytes(b'{"tasks": 1}')  # of another version: not trusted
    assert client.get("/runs/live").status_code == 200
    assert "1 / 1" not in client.get("/").text  # figures computed from the results instead
    summary = summarize([TaskScore(**row["score"])])
    (run / "summary.json").write_bytes(orjson.dumps(summary))
    page = client.get("/")
    assert page.status_code == 200 and "/runs/live" in page.text and "1 / 1" in page.text


def test_infra_errors_show_the_coverage_beside_the_headline_tsr(tmp_path: Path) -> None:
    """One episode played and solved, three failed by the infrastructure: TSR 100% is over
    1 of 4 planned, said on the run page and in the runs list, with TSR over all planned."""
    client, run = _client(tmp_path)
    lost = []
    for number in (1, 2, 3):
        row = _row(number, False)
        row["score"] = TaskScore(row["task_id"], DOMAIN, completed=False, success=False,
                                 infra_error="gateway unreachable").to_json()  # fmt: skip
        lost.append(row)
    _append(run, _row(0, True), *lost)
    page = client.get("/runs/live").text
    assert "TSR 100.0% over 1 of 4 planned; 3 infra errors; TSR over all planned 25.0%" in page
    assert "TSR over all planned" in page and "25.0%" in page
    assert "100.0% over 1 of 4 planned" in client.get("/").text


def test_the_favicon_the_empty_list_and_the_faults_column(tmp_path: Path) -> None:
    """``/favicon.ico`` is an icon (no 404 in the log); an empty viewer names the folder it
    read and how a run gets there; the runs list shows each run's faults."""
    empty = TestClient(create_app(RunCatalog([tmp_path / "nothing"])))
    icon = empty.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg")
    listing = empty.get("/").text
    assert str((tmp_path / "nothing").resolve()) in listing and "sopgym run" in listing
    client, run = _client(tmp_path)
    config = orjson.loads((run / "config.json").read_bytes())
    (run / "config.json").write_bytes(orjson.dumps({**config, "faults": "503=0.2"}))
    _append(run, _row(0, True))
    row = next(line for line in client.get("/").text.split("<tr>") if "/runs/live" in line)
    assert "<td>503=0.2</td>" in row and "<th>faults</th>" in client.get("/").text


def test_one_episode_is_said_in_the_singular() -> None:
    from sopgym.evaluation.stats import interval_text, tsr_intervals

    row = {"domain": DOMAIN, "task_id": "t", "trial": 0, "score": _row(0, True)["score"]}
    line = interval_text(tsr_intervals([row])["overall"])
    assert "1 episode over 1 task" in line and "1 episodes" not in line


def test_a_maze_task_page_shows_the_sop_steps_named(tmp_path: Path) -> None:
    """An SOP-Maze answer names a step by its number: the page shows that step of the SOP
    the gold names, and the one the answer named instead."""
    client, run = _client(tmp_path)
    maze = "maze/bank_cards"
    score = TaskScore("bank_cards-000-00", maze, completed=True, success=False,
                      fields={"step": False}, errors={"wrong_final": 1})  # fmt: skip
    row = {**_row(0, False), "task_id": "bank_cards-000-00", "domain": maze,
           "gold_outputs": {"step": "1.2", "reply": "r"},
           "outputs": {"step": "1.1", "reply": "r"}, "score": score.to_json()}  # fmt: skip
    _append(run, row)
    page = client.get("/runs/live/task", params={"domain": maze, "task": "bank_cards-000-00"})
    assert page.status_code == 200
    found = page.text.split("id='sop-step'")[1]
    assert "should have named: 1.2" in found and "Step 1.2:" in found
    assert "the answer named: 1.1" in found and "Step 1.1:" in found
    assert "Step 1.3:" not in found  # the steps named, not the whole SOP

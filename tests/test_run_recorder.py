"""Episodes played outside ``sopgym run`` land in a normal run folder: through the SDK with a
``RunRecorder`` (an episode object, or an id with the admin token as for MCP episodes), and
through ``sopgym env-serve --run-dir``; scored by the one score_episode, and read by show,
compare and the viewer like any run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from sopgym.cli import main
from sopgym.client import connect
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scoring import score_episode
from sopgym.orchestration.processes import ManagedProcess, free_port, sopgym_command
from sopgym.orchestration.recorder import RunRecorder
from sopgym.orchestration.runs import FINISHED, RUNNING, RunReader
from sopgym.orchestration.stack import Stack, embedded_stack
from sopgym.viewer.app import create_app
from sopgym.viewer.catalog import RunCatalog
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "patient_intake"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with embedded_stack([DOMAIN], tmp_path_factory.mktemp("rec") / "logs", DATA_ROOT) as running:
        yield running


def _rows(run: Path) -> list[Any]:
    return [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]


def test_sdk_episodes_are_recorded_scored_and_read_like_a_run(stack: Stack, tmp_path: Path) -> None:
    data = domain_data(DOMAIN)
    first, second, third = data.tasks[:3]
    client = connect(stack.gateway_url)
    run = tmp_path / "runs" / "harness"
    recorder = RunRecorder(run, [DOMAIN], agent="my-harness", model="m1", data_root=DATA_ROOT)
    assert RunReader(run).state() == RUNNING  # the recorder holds the run while it records
    for task, right in ((first, True), (second, False), (first, True)):
        gold = data.gold[task.id]
        episode = client.open(task.id, DOMAIN)
        for call in gold.calls:
            episode.call(call.name, call.arguments)
        episode.finish(gold.outputs if right else {**gold.outputs, "overall_risk": "none"})
        row = recorder.record(client, episode)
        record = client.record(episode.id, episode.token)
        scored = score_episode(data.domain, task, Trajectory.from_json(record), gold)
        assert row["score"] == scored.to_json()  # the one score_episode, on the gateway record
    mcp_like = client.open(third.id, DOMAIN)  # left unfinished; read with the admin token
    recorder.record(client, mcp_like.id, stack.admin_token)
    with pytest.raises(KeyError, match="no task 'nope'"):
        recorder.record_trajectory({"task_id": "nope", "domain": DOMAIN})
    summary = recorder.close()
    client.close()
    rows = _rows(run)
    assert [(r["task_id"], r["trial"], r["score"]["success"]) for r in rows] == [
        (first.id, 0, True), (second.id, 0, False), (first.id, 1, True), (third.id, 0, False)
    ]  # fmt: skip
    assert rows[3]["status"] == "failed" and not rows[3]["score"]["completed"]
    assert all(r["agent"] == "my-harness" and r["model"] == "m1" for r in rows)
    # trials: the most played task's count; second and third have a trial 1 nobody played
    assert (summary.tasks, summary.correct) == (6, 2)
    assert summary.trials["trials"] == 2
    config = orjson.loads((run / "config.json").read_bytes())
    assert config["source"] == {"kind": "sdk"} and config["task_count"] == 3
    assert RunReader(run).state() == FINISHED
    show = CliRunner().invoke(main, ["show", "harness", second.id, "--runs-dir", str(run.parent)])
    assert show.exit_code == 0 and "FAIL" in show.output.upper(), show.output
    page = TestClient(create_app(RunCatalog([run.parent]))).get("/runs/harness")
    assert page.status_code == 200 and second.id in page.text
    with pytest.raises(FileExistsError):
        RunRecorder(run, [DOMAIN], data_root=DATA_ROOT)


def test_env_serve_records_its_episodes_into_a_run_folder(stack: Stack, tmp_path: Path) -> None:
    data = domain_data(DOMAIN)
    port = free_port()
    run = tmp_path / "runs" / "env"
    argv = sopgym_command("env-serve", "--gateway", stack.gateway_url, "--domain", DOMAIN,
                          "--port", str(port), "--host", "127.0.0.1", "--data-root",
                          str(DATA_ROOT), "--run-dir", str(run))  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    server = ManagedProcess("env-server", argv, tmp_path / "env.log", ready_url=f"{url}/healthz")
    try:
        server.wait_ready(60)
        with httpx.Client(base_url=url, timeout=30) as http:
            for task in data.tasks[:2]:
                gold = data.gold[task.id]
                env_id = http.post("/reset", json={"task_id": task.id}).json()["env_id"]
                actions = [{"type": "tool", "name": c.name, "arguments": c.arguments}
                           for c in gold.calls]  # fmt: skip
                for action in [*actions, {"type": "finish", "outputs": gold.outputs}]:
                    stepped = http.post("/step", json={"env_id": env_id, "action": action})
                assert stepped.json()["reward"] == 1.0
            assert RunReader(run).state() == RUNNING
    finally:
        server.stop()
    rows = _rows(run)
    assert [r["task_id"] for r in rows] == [t.id for t in data.tasks[:2]]
    assert all(r["score"]["success"] and r["agent"] == "env" for r in rows)
    summary = orjson.loads((run / "summary.json").read_bytes())
    assert summary["tsr"] == 1.0 and summary["tasks"] == 2
    assert RunReader(run).state() == FINISHED
    compare = CliRunner().invoke(main, ["compare", str(run), str(run), "--data-root",
                                        str(DATA_ROOT)])  # fmt: skip
    assert compare.exit_code == 0, compare.output

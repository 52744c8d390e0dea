"""Issue 41, point 7: unbounded input gets a bounded, one-line refusal, never a traceback, a
hang or a memory blow-up: a huge trial index in a responses file, JSON nested 100,000 deep
(SOP-Maze import, ABCD import, SOP-Maze responses, our JSONL), a FIFO named ``*.json``, a gzip
bomb, binary and malformed WebSocket frames at OpenEnv's ``/ws``, a repeated ABCD
``convo_id``."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from sopgym.cli import main
from sopgym.cli.imports import import_group
from sopgym.core import jsonio
from tests.helpers import DATA_ROOT, domain_data
from tests.sopbench_helpers import isolated_home

ABCD = Path(__file__).parent / "fixtures" / "abcd"
MAZE = Path(__file__).parent / "fixtures" / "sopmaze" / "good"
DOMAIN = "maze/telecom_requests"
DEEP = b"[" * 100_000 + b"]" * 100_000


def _one_line_refusal(output: str) -> None:
    assert output.count("\n") == 1 and output.startswith("error: "), output
    assert "Traceback" not in output


def maze_folder(tmp: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, bytes]) -> Path:
    """A folder of SOP-Maze files to import, with an empty import registry."""
    isolated_home(tmp, monkeypatch)
    folder = tmp / "maze"
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_bytes(content)
    return folder


def _score(tmp: Path, responses: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [
        "score", DOMAIN, "--responses", str(responses), "--limit", "2", "--run-id", "r",
        "--runs-dir", str(tmp / "runs"), "--data-root", str(DATA_ROOT), *args,
    ])  # fmt: skip
    return result.exit_code, result.output


def test_a_huge_trial_index_is_refused_not_planned(tmp_path: Path) -> None:
    data = domain_data(DOMAIN)
    first = data.tasks[0].id
    lines = [
        {"task_id": first, "answer": data.gold[first].outputs},
        {"task_id": first, "trial": 1_000_000_000, "answer": data.gold[first].outputs},
    ]
    responses = tmp_path / "responses.jsonl"
    responses.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    code, output = _score(tmp_path, responses)
    assert code == 0, output
    summary = orjson.loads((tmp_path / "runs" / "r" / "summary.json").read_bytes())
    tally = summary["responses"]
    assert tally["scored"] == 1 and tally["unreadable"] == 1
    assert "trial 1000000000 is not 0..999" in tally["unreadable_listed"][0]
    assert summary["tasks"] == 2  # one trial of the two selected tasks, not a billion


def test_json_nested_100000_deep_is_one_line_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    maze = maze_folder(tmp_path, monkeypatch, {"DFS_deep_records_1.json": DEEP})
    result = CliRunner().invoke(import_group, ["sop-maze", str(maze)])
    assert result.exit_code == 2
    _one_line_refusal(result.output)
    assert "nested deeper than 100 levels" in result.output

    abcd = tmp_path / "abcd"
    shutil.copytree(ABCD, abcd)
    (abcd / "guidelines.json").write_bytes(DEEP)
    result = CliRunner().invoke(import_group, ["abcd", str(abcd)])
    assert result.exit_code == 2
    _one_line_refusal(result.output)
    assert "nested deeper than 100 levels" in result.output

    code, output = _score(tmp_path, maze / "DFS_deep_records_1.json", "--format", "sopmaze")
    assert code == 2
    _one_line_refusal(output)
    assert "nested deeper than 100 levels" in output

    deep_line = b'{"task_id": "x", "answer": {"a": ' + b"[" * 500 + b"]" * 500 + b"}}\n"
    (tmp_path / "deep.jsonl").write_bytes(deep_line)
    code, output = _score(tmp_path, tmp_path / "deep.jsonl", "--run-id", "deep")
    assert code == 0, output
    tally = orjson.loads((tmp_path / "runs" / "deep" / "summary.json").read_bytes())["responses"]
    assert tally["unreadable"] == 1 and "nested deeper" in tally["unreadable_listed"][0]


@pytest.mark.parametrize("command", ["sop-maze", "score"])
def test_a_fifo_named_json_is_refused_without_waiting(tmp_path: Path, command: str) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    shutil.copy(MAZE / "BFS_hotel_requests_3.json", folder)
    os.mkfifo(folder / "DFS_pipe_2.json")  # nobody ever writes to it
    env = {**os.environ, "SOPGYM_HOME": str(tmp_path / "home")}
    argv = (
        ["import", "sop-maze", str(folder)]
        if command == "sop-maze"
        else ["score", DOMAIN, "--responses", str(folder), "--format", "sopmaze",
              "--runs-dir", str(tmp_path / "runs"), "--data-root", str(DATA_ROOT)]
    )  # fmt: skip
    try:
        done = subprocess.run([sys.executable, "-m", "sopgym", *argv], capture_output=True,
                              text=True, timeout=60, env=env)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"sopgym {command} waited on the FIFO")
    assert done.returncode == 2, done.stderr
    _one_line_refusal(done.stderr)
    assert "DFS_pipe_2.json: not a regular file" in done.stderr


def test_a_gzip_bomb_is_refused_at_the_limit_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    monkeypatch.setattr(jsonio, "MAX_INPUT_BYTES", 2**20)  # 1 MiB: the bomb is 64 times that
    abcd = tmp_path / "abcd"
    shutil.copytree(ABCD, abcd)
    (abcd / "abcd_sample.json").unlink()
    (abcd / "abcd_v1.1.json.gz").write_bytes(gzip.compress(b" " * 64 * 2**20, 9))
    tracemalloc.start()
    try:
        result = CliRunner().invoke(import_group, ["abcd", str(abcd)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 2
    _one_line_refusal(result.output)
    assert "over the 1 MiB uncompressed input limit" in result.output
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB held to refuse it"


def test_a_repeated_convo_id_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home(tmp_path, monkeypatch)
    abcd = tmp_path / "abcd"
    shutil.copytree(ABCD, abcd)
    records = json.loads((abcd / "abcd_sample.json").read_text())
    twice = {"train": records, "dev": [records[0]]}  # the full corpus's shape: splits
    (abcd / "abcd_sample.json").write_text(json.dumps(twice))
    result = CliRunner().invoke(import_group, ["abcd", str(abcd)])
    assert result.exit_code == 2
    _one_line_refusal(result.output)
    assert f"convo_id {records[0]['convo_id']} appears more than once" in result.output


def test_openenv_ws_answers_bad_frames_with_an_error_and_closes_properly() -> None:
    from sopgym.env.openenv import openenv_app
    from sopgym.env.server import EnvPool

    pool = EnvPool(client=None, domains=[], data_root=None)  # type: ignore[arg-type]
    with TestClient(openenv_app(pool)) as client, client.websocket_connect("/ws") as socket:
        socket.send_bytes(b'{"type": "state"}')
        answer = socket.receive_json()
        assert answer["type"] == "error" and "binary frames" in answer["data"]["message"]
        for bad in ('{"type": "reset", "data": [1, 2]}', '{"type": "step", "data": "x"}'):
            socket.send_text(bad)
            answer = socket.receive_json()
            assert answer == {"type": "error", "data": {
                "code": "invalid_value", "message": "data must be a JSON object",
                "field": "data"}}, answer  # fmt: skip
        socket.send_text("[" * 5000 + "]" * 5000)
        assert socket.receive_json()["type"] == "error"
        socket.send_text("17")
        assert socket.receive_json()["data"]["code"] == "invalid_request"
        socket.send_text('{"type": "state"}')  # the session still answers
        assert socket.receive_json()["data"]["code"] == "not_found"
        socket.send_text('{"type": "close"}')
        closed = socket.receive()
        assert closed["type"] == "websocket.close" and closed.get("code", 1000) == 1000

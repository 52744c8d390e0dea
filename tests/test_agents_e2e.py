"""LLM agents end to end through real processes on loopback: `sopgym run` starts the tool
service, the gateway and the scripted model server, agent workers talk to them over HTTP, and
the run is scored.

* With the perfect profile every agent solves every task (TSR = 100%).
* With an error profile, every mistake the model server logs for a task shows up in that
  task's evaluator categories, and nothing else does.
* An agent addressed to the server only as ``openai:scripted --base-url`` (a name the server
  serves; an unknown one is refused up front, tests/test_model_latency.py) works unchanged.
* A model that cannot be used is one line before any task starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest

from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "patient_intake"
LIMIT = 16
PROFILE = (
    "scripted:wrong_tool=0.1,missing_arg=0.1,bad_type=0.1,wrong_value=0.1,skip_step=0.05,"
    "hallucinated_tool=0.1,blank=0.06,wrong_final=0.2,messy_format=0.5,seed=1"
)


def _run(tmp: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    domain_data(DOMAIN)  # generate once, outside the timed run
    command = [
        sys.executable,
        "-m",
        "sopgym",
        "run",
        DOMAIN,
        "--runs-dir",
        str(tmp),
        "--run-id",
        "r",
        "--data-root",
        str(DATA_ROOT),
        "--workers",
        "2",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


def _rows(tmp: Path) -> list[dict]:
    return [orjson.loads(line) for line in (tmp / "r" / "results.jsonl").read_bytes().splitlines()]


def _summary(tmp: Path) -> dict:
    return orjson.loads((tmp / "r" / "summary.json").read_bytes())


def test_no_flags_runs_an_llm_agent_on_the_scripted_model(tmp_path: Path) -> None:
    result = _run(tmp_path, "--limit", str(LIMIT))
    assert result.returncode == 0, result.stderr[-3000:]
    summary = _summary(tmp_path)
    assert (
        summary["config"]["agent"] in ("react", "fc") and summary["config"]["model"] == "scripted"
    )
    assert summary["tsr"] == 1.0 and summary["tasks"] == LIMIT, summary
    rows = _rows(tmp_path)
    calls = [c for r in rows for c in r["llm_calls"]]
    assert all(c["model"] == "scripted" and c["output_tokens"] > 0 for c in calls)
    assert all(r["score"]["tool_f1"] == 1.0 for r in rows)


def test_plan_agent_solves_every_task_with_the_perfect_model(tmp_path: Path) -> None:
    # react is the no-flags default above; fc runs through the OpenAI route below
    result = _run(tmp_path, "--agent", "plan", "--limit", str(LIMIT), "--no-trace")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = _summary(tmp_path)
    assert (summary["tsr"], summary["errors"]) == (1.0, {}), summary


MISTAKE_KINDS = {"wrong_tool", "missing_arg", "bad_type", "wrong_value", "skip_step",
                 "hallucinated_tool", "blank", "wrong_final"}  # fmt: skip


@pytest.mark.parametrize(
    ("agent", "options", "kinds_seen"),
    [
        ("react", [], MISTAKE_KINDS),
        ("plan", ["--tool-choice", "auto"], MISTAKE_KINDS),
        # plan forces its first tool turn by default: a model held to a call cannot answer
        # blank, so the scripted model draws no blank answer there (and logs none)
        ("plan", [], MISTAKE_KINDS - {"blank"}),
    ],
    ids=["react", "plan-auto", "plan-forced"],
)
def test_injected_mistakes_show_up_with_their_category(
    agent: str, options: list[str], kinds_seen: set[str], tmp_path: Path
) -> None:
    result = _run(tmp_path, "--agent", agent, "--model", PROFILE, "--limit", "30", "--no-trace",
                  *options)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    injected: dict[str, list[dict]] = {}
    for line in (tmp_path / "r" / "injections.jsonl").read_bytes().splitlines():
        record = orjson.loads(line)
        injected.setdefault(record["task_id"], []).append(record)
    kinds = Counter(r["kind"] for records in injected.values() for r in records)
    assert set(kinds) == kinds_seen, kinds
    gold = domain_data(DOMAIN).gold
    for row in _rows(tmp_path):
        records = injected.get(row["task_id"], [])
        expected = Counter(c for r in records for c in r["expected"])
        assert row["status"] == "finished", row["error"]
        assert Counter(row["score"]["errors"]) == expected, (row["task_id"], records)
        called = Counter(c["name"] for c in row["trajectory"]["calls"] if c["status"] < 400)
        for record in records:
            if record["kind"] == "skip_step":  # the skipped gold call is missing
                skipped = gold[row["task_id"]].calls[record["step"]].name
                needed = Counter(c.name for c in gold[row["task_id"]].calls)[skipped]
                assert called[skipped] < needed
        if not records:
            assert row["score"]["success"] and row["score"]["tool_f1"] == 1.0


def test_agent_addressed_as_an_openai_endpoint(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    with ProcessGroup() as group:
        group.start(
            "model",
            sopgym_command(
                "model-server",
                "--port",
                str(port),
                "--domain",
                DOMAIN,
                "--data-root",
                str(DATA_ROOT),
            ),
            tmp_path / "model.log",
            ready_url=f"http://127.0.0.1:{port}/readyz",
        ).wait_ready()
        result = _run(
            tmp_path,
            "--agent",
            "fc",
            "--model",
            "openai:scripted",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--limit",
            "8",
            "--no-trace",
            env=env,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = _summary(tmp_path)
    assert (summary["tsr"], summary["errors"]) == (1.0, {}), summary
    calls = [c for r in _rows(tmp_path) for c in r["llm_calls"]]
    assert calls and all(c["model"] == "openai:scripted" for c in calls)
    assert all(c["input_tokens"] > 0 and c["latency_s"] > 0 for c in calls)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "openai:gpt-4o-mini"], "OPENAI_API_KEY is not set"),
        (["--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1"], "cannot reach"),
    ],
)
def test_an_unusable_model_is_one_line_before_any_task(
    args: list[str], message: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    result = _run(tmp_path, "--agent", "fc", *args, env=env)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not (tmp_path / "r").exists()

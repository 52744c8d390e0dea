"""The loadtest's reports: figures over time, errors shown when there are none, a concurrency
sweep on one stack, the default report folder, and the loadtests of many pods gathered."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from sopgym.agents.metrics import episode_facts
from sopgym.orchestration.loadtest import LoadtestError, Outcome, Stats, gather, write_reports
from sopgym.runs.records import WorkerReport
from tests.helpers import DATA_ROOT

LLM_CALL = {"latency_s": 0.1, "input_tokens": 10, "output_tokens": 2, "error": None}
REPORT = WorkerReport(task_id="T1", domain="patient_intake", status="finished", elapsed_s=0.5,
                      llm_calls=[LLM_CALL])  # fmt: skip
RECORD = {"calls": [{"name": "a", "duration_ms": 2.0, "error_code": None}]}


def _part(folder: Path, started_at: float, ends: list[float], workers: int = 2) -> None:
    """A loadtest's reports as one pod writes them: episodes ending at ``ends`` seconds."""
    stats = Stats()
    for end in ends:
        stats.add(episode_facts(REPORT, RECORD), ended=stats.started + end)
    config = {"concurrency": workers, "agent": "fc", "model": "scripted"}
    outcome = Outcome(config, stats.figures(), Stats().figures(), 0, [], [], stats.over_time(),
                      started_at, stats.episode_rows())  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    write_reports(outcome, folder)


def test_reports_show_the_load_over_time_and_zero_errors(tmp_path: Path) -> None:
    _part(tmp_path, 1000.0, [0.5, 1.0, 1.5, 11.5, 12.0])
    outcome = orjson.loads((tmp_path / "loadtest.json").read_bytes())
    windows = outcome["over_time"]
    assert len(windows) == 12 and windows[0]["from_s"] == 0.0 and windows[-1]["to_s"] == 12.0
    # windows are [from, to): the episode ending at 1.0 s counts in the second; the last
    # window holds its end
    assert [w["episodes"] for w in windows] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    assert windows[1]["episodes_per_s"] == 2.0 and windows[1]["tool_latency_ms"]["p50"] == 2.0
    markdown = (tmp_path / "loadtest.md").read_text()
    assert "none (0 of 5)" in markdown  # an error rate of zero is shown, never blank
    assert "| episodes | none | 0 | 5 | 0.00% |" in markdown
    assert "| 1.0-2.0 | 2 | 2.00 |" in markdown
    assert "Episodes/s over time" in (tmp_path / "loadtest.html").read_text()


def test_the_loadtests_of_many_pods_gather_on_one_clock(tmp_path: Path) -> None:
    _part(tmp_path / "part-0", 1000.0, [1.0, 2.0, 3.0])
    _part(tmp_path / "part-1", 1002.0, [1.0, 2.0, 4.0], workers=3)  # started 2 s later
    with pytest.raises(LoadtestError, match="2 of 3 loadtest parts"):
        gather(tmp_path, 3)
    outcome = gather(tmp_path, 2)
    assert outcome.config["concurrency"] == 5 and outcome.config["parts"] == 2
    figures = outcome.figures
    assert figures["episodes"] == 6 and figures["tool_calls"] == 6
    assert figures["elapsed_s"] == 6.0  # from the first start to the last end, 1006 - 1000
    assert figures["episodes_per_s"] == 1.0


@pytest.mark.slow
def test_a_concurrency_sweep_runs_each_level_on_one_stack_into_the_runs_dir(
    tmp_path: Path,
) -> None:
    command = [sys.executable, "-m", "sopgym", "loadtest", "--concurrency", "1,2",
               "--tasks", "4", "--duration", "20", "--data-root", str(DATA_ROOT)]  # fmt: skip
    env = {**os.environ, "SOPGYM_RUNS_DIR": str(tmp_path / "mounted")}
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    (out,) = (tmp_path / "mounted").glob("loadtest-*")  # no --out: the runs dir
    sweep = orjson.loads((out / "sweep.json").read_bytes())
    assert [level["concurrency"] for level in sweep["levels"]] == [1, 2]
    for level in sweep["levels"]:
        assert level["figures"]["episodes"] == 4 == level["figures"]["finished"]
    assert (out / "c2" / "loadtest.html").exists() and "Concurrency sweep" in (
        out / "sweep.md"
    ).read_text()


def test_a_loadtest_waits_for_the_stack_then_says_it_did_not_answer(tmp_path: Path) -> None:
    from sopgym.orchestration.processes import free_port

    gone = f"http://127.0.0.1:{free_port()}"  # nothing listens: the stack never answers
    command = [sys.executable, "-m", "sopgym", "loadtest", "--gateway", gone, "--wait", "2",
               "--out", str(tmp_path / "lt")]  # fmt: skip
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "the stack did not answer" in result.stdout + result.stderr
    assert "the gateway's task list" in result.stdout + result.stderr
    assert time.monotonic() - started >= 2.0  # it waited before giving up

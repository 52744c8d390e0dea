"""The maze family through real processes: the usual agent path and the one-shot path score
every subtask identically, the scripted model's mistakes land where its injection log says,
and the report carries the SOP-Maze breakdown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.helpers import DATA_ROOT, domain_data

DOMAINS = ["maze/telecom_requests", "maze/insurance_claim"]
PROFILE = "scripted:wrong_final=0.3,invalid_final=0.3,seed=1"
GRADES = {"wrong_final": 0.2, "invalid_final": 0.0, None: 1.0}


def _sopgym(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sopgym", *args], capture_output=True, text=True, timeout=300
    )


def _run(tmp: Path, run_id: str, *args: str) -> dict[str, float]:
    for name in DOMAINS:
        domain_data(name)  # generated once, outside the run
    result = _sopgym("run", *DOMAINS, "--model", PROFILE, "--limit", "20", "--workers", "2",
                     "--runs-dir", str(tmp), "--run-id", run_id, "--data-root", str(DATA_ROOT),
                     *args)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = map(orjson.loads, (tmp / run_id / "results.jsonl").read_bytes().splitlines())
    return {r["task_id"]: r["score"]["scores"]["answer_schema"]["value"] for r in rows}


@pytest.mark.slow
def test_agent_and_one_shot_paths_grade_alike_and_as_the_injection_log_says(tmp_path: Path) -> None:
    agent = _run(tmp_path, "fc", "--agent", "fc")
    one_shot = _run(tmp_path, "oneshot", "--agent", "oneshot", "--no-trace")
    assert agent == one_shot and len(agent) == 40
    log = (tmp_path / "fc" / "injections.jsonl").read_bytes().splitlines()
    kinds = {r["task_id"]: r["kind"] for r in map(orjson.loads, log)}
    assert {task: GRADES[kinds.get(task)] for task in agent} == agent
    assert {0.2, 0.0, 1.0} == set(agent.values())
    report = _sopgym("report", str(tmp_path / "fc"), "--data-root", str(DATA_ROOT))
    assert report.returncode == 0, report.stderr[-3000:]
    text = (tmp_path / "fc" / "report.md").read_text()
    lrs = [v for t, v in agent.items() if t.startswith("telecom")]
    hrs = [v for t, v in agent.items() if t.startswith("insurance")]
    score = (sum(lrs) / len(lrs) + sum(hrs) / len(hrs)) / 2
    assert f"| SOP-Maze score | mean of LRS and HRS |  | {score:.3f} |" in text
    assert "| source | calculation |" in text and "| shape | HRS | 20 |" in text


def test_an_sop_variant_a_pack_lacks_is_refused_before_anything_starts(tmp_path: Path) -> None:
    result = _sopgym("run", "maze/bank_cards", "--sop", "terse", "--runs-dir", str(tmp_path))
    assert result.returncode == 2
    assert (
        "no SOP variant 'terse' in maze/bank_cards (its variants: clean, noisy, deciding, none)"
        in result.stderr
    )
    assert not any(tmp_path.iterdir())

"""The agent contract: EVERY registered agent (ours, the installed plug-ins, and the example
``examples.my_agent:MyAgent``) runs a couple of tasks of a small pack end to end, on the
scripted model where it uses one, and finishes each with an answer: an agent that crashes,
hangs or stops answering fails here by name, not silently in someone's run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sopgym.agents import agent_names, uses_model
from tests.helpers import DATA_ROOT, domain_data

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
EVERY_AGENT = [*agent_names(), "examples.my_agent:MyAgent"]
# the pack an agent is made for: oneshot answers without tools, so answer-only tasks
PACKS = {"oneshot": "maze/bank_cards"}
TASKS = 2


@pytest.mark.parametrize("agent", EVERY_AGENT)
def test_every_agent_runs_a_small_pack_and_answers_every_task(agent: str, tmp_path: Path) -> None:
    pack = PACKS.get(agent, "patient_intake")
    domain_data(pack)
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", pack, "--agent", agent, "--limit", str(TASKS),
         "--workers", "2", "--runs-dir", str(tmp_path), "--run-id", "r", "--no-trace",
         "--data-root", str(DATA_ROOT), "--task-timeout", "60"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    rows = [
        orjson.loads(line)
        for line in (tmp_path / "r" / "results.jsonl").read_bytes().split(b"\n")
        if line
    ]
    assert len(rows) == TASKS
    for row in rows:
        assert row["agent"] == agent
        assert row["status"] == "finished" and row["score"]["completed"], row["error"]
        assert bool(row["llm_calls"]) == uses_model(agent)  # a model agent's calls are recorded
    if agent == "oracle":
        assert all(row["score"]["success"] for row in rows)

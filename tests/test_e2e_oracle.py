"""End to end through real processes: the CLI starts each domain's tool service and the
gateway on loopback, agent workers replay the gold through HTTP, and the oracle must score
TSR = 100% on every task: in the default run on the first :data:`SAMPLE` tasks of each domain
(large packs such as the banking scenarios would take minutes), in the slow run on all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sopgym.core.registry import domain_names
from tests.helpers import DATA_ROOT, domain_data

SAMPLE = 30


@pytest.mark.parametrize("name", domain_names())
def test_oracle_scores_the_first_tasks(name: str, tmp_path: Path) -> None:
    oracle_scores_every_task(name, tmp_path, SAMPLE)


@pytest.mark.slow
@pytest.mark.parametrize("name", domain_names())
def test_oracle_scores_every_task(name: str, tmp_path: Path) -> None:
    if len(domain_data(name).tasks) <= SAMPLE:
        pytest.skip("the default run scored all of its tasks")
    oracle_scores_every_task(name, tmp_path, None)


def oracle_scores_every_task(name: str, tmp_path: Path, limit: int | None) -> None:
    tasks = min(len(domain_data(name).tasks), limit or len(domain_data(name).tasks))
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", name, "--agent", "oracle", "--workers", "2",
         "--runs-dir", str(tmp_path), "--run-id", "oracle", "--data-root", str(DATA_ROOT),
         *(["--limit", str(limit)] if limit else [])],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = orjson.loads((tmp_path / "oracle" / "summary.json").read_bytes())
    assert (summary["tasks"], summary["completed"]) == (tasks, tasks)
    assert summary["tsr"] == summary["ecr"] == summary["c_tsr"] == 1.0, summary
    assert summary["domains"][name]["tsr"] == 1.0
    assert summary["errors"] == {}
    rows = (tmp_path / "oracle" / "results.jsonl").read_bytes().splitlines()
    assert len(rows) == tasks

"""End to end through real processes: the CLI starts each domain's tool service and the
gateway on loopback, agent workers replay the gold through HTTP, and the oracle must score
TSR = 100% on every task."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sopgym.core.registry import domain_names
from tests.helpers import DATA_ROOT, domain_data


@pytest.mark.parametrize("name", domain_names())
def test_oracle_scores_every_task(name: str, tmp_path: Path) -> None:
    tasks = len(domain_data(name).tasks)
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", name, "--agent", "oracle", "--workers", "2",
         "--runs-dir", str(tmp_path), "--run-id", "oracle", "--data-root", str(DATA_ROOT)],
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

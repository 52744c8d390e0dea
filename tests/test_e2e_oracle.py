"""End to end through real processes: the CLI starts each domain's tool service and the
gateway on loopback, agent workers replay the gold through HTTP, and the oracle must score
TSR = 100% on every task. A family's packs run together, as ``sopgym run <family>`` does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sopgym.core.registry import domain_names, families, select_domains
from tests.helpers import DATA_ROOT, domain_data


def _selections() -> list[str]:
    """Each domain outside a family, and each family once (one stack serves all its packs)."""
    grouped = families()
    members = {name for names in grouped.values() for name in names}
    return [n for n in domain_names() if n not in members] + sorted(grouped)


@pytest.mark.parametrize("selection", _selections())
def test_oracle_scores_every_task(selection: str, tmp_path: Path) -> None:
    names = select_domains([selection])
    tasks = sum(len(domain_data(name).tasks) for name in names)
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", selection, "--agent", "oracle", "--workers", "2",
         "--runs-dir", str(tmp_path), "--run-id", "oracle", "--data-root", str(DATA_ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = orjson.loads((tmp_path / "oracle" / "summary.json").read_bytes())
    assert (summary["tasks"], summary["completed"]) == (tasks, tasks)
    assert summary["tsr"] == summary["ecr"] == summary["c_tsr"] == 1.0, summary
    assert all(summary["domains"][name]["tsr"] == 1.0 for name in names)
    assert summary["errors"] == {}
    rows = (tmp_path / "oracle" / "results.jsonl").read_bytes().splitlines()
    assert len(rows) == tasks

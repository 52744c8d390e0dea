"""End to end through real processes: the CLI starts each domain's tool service and the
gateway on loopback, agent workers replay the gold through HTTP, and the oracle must score
TSR = 100% on every task.

A family's packs (``banking/*``) run together, as ``sopgym run <family>`` runs them: one
stack for all of them, so the family costs one start-up, not one per pack; the default run
scores the first :data:`SAMPLE` tasks of each of its packs (the banking family's thousand
tasks would take minutes) and the slow run all of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sopgym.core.registry import domain_names, families
from tests.helpers import DATA_ROOT, domain_data

SAMPLE = 30


def _groups() -> dict[str, list[str]]:
    """What one ``sopgym run`` covers: a family, or a domain outside any family."""
    grouped = families()
    members = {name for names in grouped.values() for name in names}
    return grouped | {name: [name] for name in domain_names() if name not in members}


GROUPS = _groups()


FAMILIES = sorted(g for g, names in GROUPS.items() if len(names) > 1 or g != names[0])


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_oracle_scores_every_task(group: str, tmp_path: Path) -> None:
    oracle_scores_every_task(group, tmp_path, SAMPLE if group in FAMILIES else None)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_oracle_scores_every_task_of_a_family(family: str, tmp_path: Path) -> None:
    oracle_scores_every_task(family, tmp_path, None)


def oracle_scores_every_task(group: str, tmp_path: Path, limit: int | None) -> None:
    names = GROUPS[group]
    counts = {n: min(len(domain_data(n).tasks), limit or len(domain_data(n).tasks))
              for n in names}  # fmt: skip
    tasks = sum(counts.values())
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", group, "--agent", "oracle", "--workers", "2",
         "--runs-dir", str(tmp_path), "--run-id", "oracle", "--data-root", str(DATA_ROOT),
         *(["--limit", str(limit)] if limit else [])],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = orjson.loads((tmp_path / "oracle" / "summary.json").read_bytes())
    assert (summary["tasks"], summary["completed"]) == (tasks, tasks)
    assert summary["tsr"] == summary["ecr"] == summary["c_tsr"] == 1.0, summary
    for name, count in counts.items():
        assert (summary["domains"][name]["tasks"], summary["domains"][name]["tsr"]) == (count,
                                                                                       1.0)
    assert summary["errors"] == {}
    rows = (tmp_path / "oracle" / "results.jsonl").read_bytes().splitlines()
    assert len(rows) == tasks

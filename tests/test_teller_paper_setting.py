"""End to end: a banking run in TELLER's setting (abstract SOP, the whole catalog, the
scripted model making mistakes), then `sopgym report`: Tables 2, 4 and 5 with the paper's
definitions beside ours, and the tasks the two views judge differently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

CATALOG = 264  # loans' distractors: with its 20 APIs, the paper's 284 tools


def _sopgym(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sopgym", *args],
        capture_output=True, text=True, timeout=600, env=dict(os.environ),
    )  # fmt: skip


@pytest.mark.slow  # a stack start and six episodes over 284-tool catalogs: ~40 s
def test_report_of_a_banking_run_in_the_papers_setting(tmp_path: Path) -> None:
    runs, data = tmp_path / "runs", tmp_path / "data"
    done = _sopgym(
        "run", "banking/loans", "banking/loans_graph", "--agent", "fc",
        "--model", "scripted:noisy", "--sop", "abstract", "--distractors", str(CATALOG),
        "--limit", "3", "--runs-dir", str(runs), "--run-id", "teller", "--data-root", str(data),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary = orjson.loads((runs / "teller" / "summary.json").read_bytes())
    theirs = summary["paper"]["teller"]["scenarios"]["loans"]
    assert theirs["tasks"] == 3 and theirs["calls"] > 0
    # the noisy model retries refused calls: ours counts them against precision, the paper not
    assert summary["domains"]["banking/loans"]["tool_precision"] < theirs["tool_precision"]
    assert "sopbench" not in summary["paper"]  # no SOP-Bench-style pack in this run
    done = _sopgym("report", str(runs / "teller"), "--data-root", str(data))
    assert done.returncode == 0, done.stderr[-3000:]
    report = (runs / "teller" / "report.md").read_text()
    for title in (
        "## TELLER two-stage view (Table 2)",
        "## TELLER Table 2, stage 2, the paper's definitions beside ours",
        "## TELLER Table 5, tool-call errors",
        "## TELLER Table 4, API graph properties",
    ):
        assert title in report, title
    assert "| loans | 20 | 34 | 0.089 |" in report
    assert f"| {theirs['tool_precision']:.3f} |" in report
    assert "## Tasks the papers' definitions judge differently from ours" in report
    assert "| teller |" in report

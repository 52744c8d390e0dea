"""End to end: import fixtures, then `sopgym run sopbench/...` through the real tool services,
gateway and agent workers. The baseline agent runs the generic policy; its TSR is a baseline.
The benchmark's tools.py may be imported by the tool service only."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from sopgym.core.import_index import HOME_ENV
from sopgym.importers.adapter import NULL_WARNING
from tests.sopbench_helpers import (
    FIXTURES,
    TOOLS_LOG_ENV,
    copy_fixture,
    loaders_are_services_or_the_import,
    sopgym,
)


def test_baseline_runs_imported_benchmarks_through_the_stack(tmp_path: Path) -> None:
    env = {HOME_ENV: str(tmp_path / "home"), TOOLS_LOG_ENV: str(tmp_path / "imports.log")}
    for name in ("clean", "relayed_outputs", "tools_returning_none"):
        done = sopgym(env, "import", "sop-bench", str(FIXTURES / name))
        assert done.returncode == 0, done.stdout + done.stderr
    refused = sopgym(
        env, "run", "sopbench/clean", "--agent", "oracle", "--runs-dir", str(tmp_path / "runs")
    )
    assert refused.returncode == 2 and "no reference policy" in refused.stderr

    done = sopgym(
        env,
        "run",
        "sopbench/clean",
        "sopbench/relayed_outputs",
        "sopbench/tools_returning_none",
        "--agent",
        "baseline",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--run-id",
        "base",
        "--data-root",
        str(tmp_path / "data"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    summary = orjson.loads((tmp_path / "runs" / "base" / "summary.json").read_bytes())
    assert (summary["tasks"], summary["completed"]) == (15, 15)
    clean, relayed = (
        summary["domains"]["sopbench/clean"],
        summary["domains"]["sopbench/relayed_outputs"],
    )
    # the clean SOP needs a decision no tool returns; the other benchmark relays the answer
    assert (clean["tsr"], relayed["tsr"]) == (0.0, 1.0)
    assert summary["tool_f1"] is None and clean["tool_recall"] is None  # no gold calls to fake
    # a tool that returns None answers a successful null, as SOP-Bench's does: no tool_error,
    # and the call carries the warning that says so
    failing = summary["domains"]["sopbench/tools_returning_none"]
    assert "tool_error" not in summary["errors"], summary["errors"]
    # SOP-Bench's own figures beside ours, per SOP and as its mean of per-SOP percentages
    paper = summary["paper"]["sopbench"]
    assert sorted(paper["per_sop"]) == sorted(summary["domains"]) and paper["pooled"]["tasks"] == 15
    assert paper["unweighted_mean"]["tsr"] == pytest.approx(
        sum(m["tsr"] for m in paper["per_sop"].values()) / 3
    )
    assert failing["paper"]["sopbench"]["pooled"]["tasks"] == 5

    rows = [
        orjson.loads(line)
        for line in (tmp_path / "runs" / "base" / "results.jsonl").read_bytes().splitlines()
    ]
    by_task = {r["task_id"]: r for r in rows}
    warned = [
        c for r in rows if r["domain"] == "sopbench/tools_returning_none"
        for c in r["trajectory"]["calls"] if NULL_WARNING in c.get("warnings", [])
    ]  # fmt: skip
    assert warned and all(
        c["error_code"] is None and c["result"] == {"value": None} for c in warned
    )
    calls = by_task["sopbench-relayed_outputs-000"]["trajectory"]["calls"]
    assert [c["name"] for c in calls] == ["getOrderDetails", "checkReturnWindow", "decideRefund"]
    assert calls[1]["arguments"] == {
        "order_id": "A-100",
        "customer_tier": "standard",
        "days_since_purchase": 10,
    }
    assert by_task["sopbench-clean-000"]["gold_outputs"] == {"refund_decision": "full"}

    importers = (tmp_path / "imports.log").read_text().splitlines()
    assert loaders_are_services_or_the_import(importers), importers


@pytest.mark.slow  # the hung worker's grace and the hung service's stop take ~20 s
def test_task_timeout_holds_when_a_tool_hangs(tmp_path: Path) -> None:
    hanging = copy_fixture("clean", tmp_path).rename(tmp_path / "hanging_tool")
    (hanging / "tools.py").write_text(
        "import runpy, time\n"
        f"clean = runpy.run_path({str(FIXTURES / 'clean' / 'tools.py')!r})\n"
        "class ReturnsManager(clean['ReturnsManager']):\n"
        "    def getOrderDetails(self, order_id):\n"
        "        time.sleep(3600)\n"
    )
    env = {HOME_ENV: str(tmp_path / "home")}
    assert sopgym(env, "import", "sop-bench", str(hanging)).returncode == 0
    started = time.monotonic()
    done = sopgym(env, "run", "sopbench/hanging_tool", "--agent", "baseline", "--limit", "1",
                  "--task-timeout", "2", "--runs-dir", str(tmp_path / "runs"), "--run-id", "hang",
                  "--data-root", str(tmp_path / "data"))  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - started < 60, "bounded by the task timeout, not by the tool"
    results = (tmp_path / "runs" / "hang" / "results.jsonl").read_bytes().splitlines()
    (row,) = [orjson.loads(line) for line in results]
    assert row["status"] == "failed" and row["error"] == "no answer within --task-timeout 2 s"

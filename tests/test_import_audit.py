"""The audit finds each planted defect, names its rows and tools, and passes the clean one."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from sopgym.cli.imports import audit_group
from sopgym.importers.audit import AuditReport, audit_benchmark
from sopgym.importers.report import ranges
from tests.sopbench_helpers import EXPECTED_KINDS, FIXTURES, copy_fixture


def _audit(name: str) -> AuditReport:
    return audit_benchmark(FIXTURES / name)


@pytest.mark.parametrize("name", sorted(EXPECTED_KINDS))
def test_each_fixture_reports_exactly_its_planted_finding(name: str) -> None:
    report = _audit(name)
    assert {f.kind for f in report.findings} == EXPECTED_KINDS[name], report.to_json()


def test_the_clean_fixture_has_no_finding_and_relaying_is_information_only() -> None:
    assert _audit("clean").findings == []
    relayed = _audit("relayed_outputs")
    assert relayed.defect_count == 0
    (finding,) = relayed.findings
    assert (finding.severity, finding.tools, finding.columns, finding.rows) == (
        "info",
        ["decideRefund"],
        ["refund_decision"],
        [0, 1, 2, 3, 4],
    )


@pytest.mark.parametrize(
    ("name", "rows", "tools"),
    [
        ("malformed_rows", [2, 6], []),
        ("duplicate_keys", [1, 5], []),
        ("empty_expected_outputs", [3, 4], []),
        ("uncallable_tools", [], ["escalateToManager"]),
        ("tools_returning_none", [3, 4], ["checkReturnWindow"]),
        ("nondeterministic_tools", [0, 1, 2, 3, 4], ["getOrderDetails"]),
        ("unknown_input_ids", [3, 4], ["checkReturnWindow", "getOrderDetails"]),
        ("schema_mismatches", [0, 1, 2, 3, 4], ["checkReturnWindow"]),
    ],
)
def test_findings_name_their_rows_and_tools(name: str, rows: list[int], tools: list[str]) -> None:
    (finding,) = _audit(name).findings
    assert (finding.rows, finding.tools) == (rows, tools)
    assert finding.details or finding.tools  # something a user can go and look at


def test_a_tools_py_that_exits_on_import_is_a_bad_file(tmp_path: Path) -> None:
    folder = copy_fixture("clean", tmp_path)
    (folder / "tools.py").write_text("import sys\nsys.exit(3)\n")
    (finding,) = audit_benchmark(folder).findings
    assert finding.kind == "bad_file" and "SystemExit" in finding.message


def test_cli_writes_json_and_markdown_per_benchmark(tmp_path: Path) -> None:
    out = tmp_path / "audit"
    result = CliRunner().invoke(audit_group, ["sop-bench", str(FIXTURES), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "clean: 0 defect(s), 0 info  [clean]" in result.output
    for name in EXPECTED_KINDS:
        data = json.loads((out / f"{name}.json").read_text())
        assert {f["kind"] for f in data["findings"]} == EXPECTED_KINDS[name]
        assert f"# SOP-Bench audit: {name}" in (out / f"{name}.md").read_text()
    summary = json.loads((out / "summary.json").read_text())["benchmarks"]
    assert summary["clean"]["defects"] == 0 and summary["unknown_input_ids"]["defects"] == 1
    assert "| [clean](clean.md) | 5 | 0 | 0 | - |" in (out / "summary.md").read_text()


def test_a_hanging_tools_py_costs_its_benchmark_its_time_limit_only(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    copy_fixture("clean", suite)
    hanging = copy_fixture("clean", tmp_path).rename(suite / "hanging")
    (hanging / "tools.py").write_text("import time\ntime.sleep(3600)\n")
    out = tmp_path / "audit"
    started = time.monotonic()
    result = CliRunner().invoke(
        audit_group, ["sop-bench", str(suite), "--out", str(out), "--timeout", "3"]
    )
    assert time.monotonic() - started < 30
    assert result.exit_code == 0, result.output
    assert "hanging: audit failed: IsolatedTimeout: no answer within 3 s (killed)" in result.output
    assert "clean: 0 defect(s), 0 info  [clean]" in result.output, "the others are audited"


def test_cli_refuses_a_path_with_no_benchmark_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(audit_group, ["sop-bench", str(tmp_path)])
    assert result.exit_code == 2 and "no SOP-Bench benchmark folder" in result.output
    assert "Traceback" not in result.output


def test_ranges() -> None:
    assert ranges([5, 0, 1, 2, 7, 8]) == "0-2, 5, 7-8"
    assert ranges([]) == ""

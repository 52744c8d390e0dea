"""Reports and comparisons of evaluation results: Markdown and self-contained HTML agree,
render edge cases (no traces at all, missing latencies), and ``compare`` finds the deltas and
the tasks that flipped."""

from __future__ import annotations

import copy
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from sopgym.cli import main as cli
from sopgym.evaluation import compare, report, svg
from sopgym.evaluation.evaluator import TaskSet, evaluate, metrics
from sopgym.observability.otlp import SpanBatch
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "patient_intake"


def untraced_run(tasks: int = 3) -> dict[str, Any]:
    """An evaluation in which no task left a trace: every task incomplete, none dropped."""
    expected = [(DOMAIN, t.id, 0) for t in domain_data(DOMAIN).tasks[:tasks]]
    return evaluate(SpanBatch(), TaskSet(DATA_ROOT), expected, ("r1", "agent"), source="run-a")


def _solved(result: dict[str, Any], index: int) -> dict[str, Any]:
    """A copy of ``result`` in which task ``index`` succeeded, with a trace and timings."""
    better = copy.deepcopy(result)
    row = better["per_task"][index]
    row["score"].update(completed=True, success=True, errors={}, tool_f1=1.0)
    row.update(trace_id="ab" * 16, latency_s=0.5, tool_latency_ms=[1.0, 2.0, 40.0])
    better.update(metrics(better["per_task"]), source="run-b")
    better["domains"][DOMAIN] = metrics(better["per_task"])
    better["incomplete"] = [i for i in better["incomplete"] if i["task_id"] != row["task_id"]]
    return better


def test_no_trace_means_incomplete_tasks_listed_not_dropped() -> None:
    result = untraced_run()
    assert result["tasks"] == 3 and result["ecr"] == 0.0 and result["spans"] == 0
    assert [i["reason"] for i in result["incomplete"]] == ["no trace of this task"] * 3
    assert result["latency_s"]["p50"] is None


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [v for k, v in attrs if k in ("href", "src") and v]


def test_markdown_and_html_reports(tmp_path: Path) -> None:
    result = _solved(untraced_run(), 1)
    paths = report.write_reports(result, tmp_path, "http://jaeger.local:16686/")
    markdown, html = (p.read_text() for p in paths)
    trace_url = "http://jaeger.local:16686/trace/" + "ab" * 16
    assert f"[{'ab' * 16}]({trace_url})" in markdown
    assert "| Incomplete episodes" not in markdown and "## Incomplete episodes" in markdown
    assert markdown.count("no trace of this task") == 2
    checker = _Checker()
    checker.feed(html)
    assert checker.tags.count("svg") == 3 and "script" not in checker.tags
    assert checker.links == [trace_url]  # self-contained: the only link is the Jaeger one
    assert "TSR per domain" in html and "n=3" in html  # the latency histogram saw 3 calls


def test_svg_charts_handle_empty_and_flat_data() -> None:
    assert "no data" in svg.bar_chart([], "t") and "no data" in svg.percentile_chart([], "t")
    flat = svg.percentile_chart([1.0, 1.0, 1.0], "t")
    assert flat.count("<rect") == 6 and "n=3" in flat and flat.count(">1 ms</text>") == 6


def test_latency_chart_shows_percentiles_on_a_log_axis() -> None:
    # 98 calls of 1 ms and two of 1,000 ms: a linear axis would flatten the body to nothing
    chart = svg.percentile_chart([1.0] * 98 + [1000.0, 1000.0], "latency")
    labels = re.findall(r">(p\d+|max)</text>", chart)
    assert labels == ["p50", "p75", "p90", "p95", "p99", "max"]
    widths = [float(w) for w in re.findall(r'<rect x="200" y="[\d.]+" width="([\d.]+)"', chart)]
    assert widths[0] > 0 and widths[-1] > 0  # the 1 ms body has a visible bar
    # bars at log10(value / floor), floor = half the smallest value: 1 ms -> log10(2)
    assert abs(widths[-1] / widths[0] / (math.log10(2000) / math.log10(2)) - 1) < 0.01
    assert ">1e+03 ms</text>" in chart and "log axis" in chart
    bars = svg.bar_chart([("a", 0.5), ("<b>", 1.0)], "TSR", maximum=1)
    assert "&lt;b&gt;" in bars and "50%" in bars


def test_compare_reports_deltas_and_flips() -> None:
    before = untraced_run()
    after = _solved(before, 1)
    deltas = compare.compare(before, after)
    task_id = after["per_task"][1]["task_id"]
    assert deltas["fixed"] == [f"{DOMAIN}/{task_id}"] and deltas["broken"] == []
    assert deltas["overall"]["tsr"]["delta"] == 1 / 3
    assert deltas["overall"]["latency_p50"] == {"a": None, "b": 0.5, "delta": None}
    text = compare.to_markdown(deltas, "A", "B")
    assert "| TSR | 0.0% | 33.3% | +33.3% |" in text and f"**fixed in B** (1): {DOMAIN}/" in text
    assert compare.compare(after, before)["broken"] == deltas["fixed"]


def test_eval_command_reads_a_trace_file(tmp_path: Path) -> None:
    store = tmp_path / "empty.jsonl"
    store.write_text("")
    result = CliRunner().invoke(cli, ["eval", str(store), "--out", "-"])
    assert result.exit_code == 0, result.output
    assert '"tasks":0' in result.stdout
    usage = CliRunner().invoke(cli, ["eval"])
    assert usage.exit_code != 0 and "either a run folder" in usage.output


def test_compare_keeps_trials_apart() -> None:
    before = untraced_run(1)
    second = copy.deepcopy(before["per_task"][0])
    second["trial"] = 1
    before["per_task"].append(second)
    after = _solved(before, 1)  # trial 1 fixed, trial 0 still failing
    task_id = before["per_task"][0]["task_id"]
    deltas = compare.compare(before, after)
    assert deltas["fixed"] == [f"{DOMAIN}/{task_id}#1"] and deltas["broken"] == []


def test_compare_counts_only_the_shared_tasks_and_warns_when_the_sets_differ() -> None:
    before = _solved(untraced_run(3), 0)  # tasks 0-2, task 0 solved: TSR 1/3
    after = _solved(untraced_run(4), 1)  # tasks 0-3, task 1 solved ...
    dropped = after["per_task"].pop(0)  # ... without task 0: tasks 1-3, TSR 1/3
    after.update(metrics(after["per_task"]))
    assert before["tsr"] == after["tsr"] == 1 / 3  # the whole runs: no change at all
    deltas = compare.compare(before, after)
    only_b = after["per_task"][-1]["task_id"]
    assert deltas["only_a"] == [f"{DOMAIN}/{dropped['task_id']}"]
    assert deltas["only_b"] == [f"{DOMAIN}/{only_b}"] and deltas["shared"] == 2
    # over tasks 1 and 2, the ones both scored: A solved none, B one of two
    assert deltas["overall"]["tsr"] == {"a": 0.0, "b": 0.5, "delta": 0.5}
    assert deltas["domains"][DOMAIN]["tsr"]["delta"] == 0.5
    assert deltas["overall"]["ecr"] == {"a": 0.0, "b": 0.5, "delta": 0.5}
    warning = deltas["warning"]
    assert "2 episodes in both, 1 only in A, 1 only in B" in warning and "shared" in warning
    text = compare.to_markdown(deltas, "A", "B")
    assert f"> **Warning**: {warning}." in text and "| TSR | 0.0% | 50.0% | +50.0% |" in text
    same = compare.compare(before, before)
    assert same["warning"] is None and same["overall"]["tsr"]["a"] == before["tsr"]
    assert "Both runs scored the same 3 episodes." in compare.to_markdown(same, "A", "A")


def test_scenarios_domains_and_tasks_sort_naturally() -> None:
    """Scenario names with numbers read l1, l2, l10 (not l1, l10, l2): the SOP-Maze
    breakdown, the summary's domains and the report's per-task table."""
    from sopgym.evaluation.breakdown import breakdown
    from sopgym.evaluation.scoring import TaskScore, summarize

    names = ["sopmaze/l10", "sopmaze/l2", "sopmaze/l1"]
    rows: list[dict[str, Any]] = [
        {"task_id": f"{name.split('/')[1]}-{n}", "domain": name, "trial": 0,
         "tags": {"shape": "LRS"}, "score": {"scores": {"answer_schema": {"value": 1.0}}}}
        for name in names for n in (10, 9)
    ]  # fmt: skip
    found = breakdown(rows)
    assert found is not None
    assert list(found["scenario"]) == ["sopmaze/l1", "sopmaze/l2", "sopmaze/l10"]
    scores = [TaskScore(r["task_id"], r["domain"], True, True) for r in rows]
    assert list(summarize(scores)["domains"]) == ["sopmaze/l1", "sopmaze/l2", "sopmaze/l10"]
    ordered = sorted(rows, key=report.task_order)
    assert [r["task_id"] for r in ordered[:3]] == ["l1-9", "l1-10", "l2-9"]


def test_the_fault_split_says_it_is_not_the_faults_cost() -> None:
    """TSR of the episodes that met a fault beside the others' reads as the faults' cost; the
    episodes that met one are the long ones, so the terminal and the report say plainly what
    the split is not, and where the cost is measured (the same seed without --faults)."""
    from sopgym.cli.summary import fault_split_line

    robust = {"faults_injected": 9, "episodes_with_faults": 3, "tsr_with_faults": 2 / 3,
              "tsr_without_faults": 15 / 17}  # fmt: skip
    line = fault_split_line(robust)
    assert "66.7% over the episodes that met a fault, 88.2% over those that met none" in line
    assert "not the faults' cost" in line and "without --faults" in line
    table = report.robustness_table({"robustness": robust})
    assert table is not None and "not the faults' cost" in table.title
    assert "TSR with faults" not in table.headers

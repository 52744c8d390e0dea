"""The run viewer (``sopgym view``) in a real browser, and the traces behind it.

Two real runs through real processes (the scripted model with injected mistakes): ``cap``
with the model's messages captured on its chat spans, ``plain`` without. Headless Chromium
(Debian's package, driven by Playwright) opens the viewer the way a user does: runs list, a
run filtered to its failures, a failed task's wrong field (expected and given) and its
refused call's arguments. Every check reads the page, so a page that loses its content fails.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from playwright.sync_api import Browser, Page, expect

from sopgym.cli import main as cli
from sopgym.evaluation.sources import load_spans
from sopgym.observability import semconv as sc
from sopgym.observability.task_spans import SPAN_NAME
from tests.helpers import DATA_ROOT

DOMAIN = "patient_intake"
# seed 4 of the noisy profile: three of the first six tasks fail, patient_intake-003 with a
# refused call among its steps (the run's other mistakes are recovered from)
RUN = ["--agent", "fc", "--model", "scripted:noisy", "--seed", "4", "--data-root", str(DATA_ROOT)]
pytestmark = pytest.mark.slow  # two real runs (about 10 s on a quiet machine) and a browser


def _run(runs: Path, run_id: str, *options: str) -> Path:
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", DOMAIN, *RUN, "--runs-dir", str(runs),
         "--run-id", run_id, *options],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return runs / run_id


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs")
    _run(folder, "cap", "--limit", "6", "--capture-messages")
    _run(folder, "plain", "--limit", "3")
    return folder


def _rows(run: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]


@pytest.fixture(scope="module")
def viewer(runs: Path) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "sopgym", "view", "--no-open", "--runs-dir", str(runs),
         "--jaeger-ui", "http://jaeger.example:16686"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+/", line)
    assert found, line
    yield found.group(0).rstrip("/")
    process.terminate()
    process.wait(10)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    opened = browser.new_page()
    yield opened
    opened.close()


def test_runs_list_shows_each_run_with_its_figures(page: Page, viewer: str, runs: Path) -> None:
    page.goto(viewer + "/")
    for run_id, tasks in (("cap", 6), ("plain", 3)):
        row = page.locator("#runs tbody tr", has=page.get_by_role("link", name=run_id))
        expect(row).to_contain_text(f"{tasks} / {tasks}")
        expect(row).to_contain_text("scripted:noisy")
        summary = orjson.loads((runs / run_id / "summary.json").read_bytes())
        expect(row).to_contain_text(f"{summary['tsr']:.1%}")


def test_a_failed_task_shows_its_wrong_field_and_its_refused_call(
    page: Page, viewer: str, runs: Path
) -> None:
    rows = _rows(runs / "cap")
    failed = [r for r in rows if not r["score"]["success"]]
    assert failed, "the seeded noisy run has a failed task"
    page.goto(viewer + "/runs/cap")
    expect(page.locator("#tasks tbody tr:visible")).to_have_count(len(rows))
    page.select_option("#f-outcome", "failed")
    visible = page.locator("#tasks tbody tr:visible")
    expect(visible).to_have_count(len(failed))
    assert set(visible.evaluate_all("rows => rows.map(r => r.dataset.outcome)")) == {"failed"}
    assert "outcome=failed" in page.url  # the filter is in the address, to share or reload

    row = next(r for r in failed if any(c["error_code"] for c in r["trajectory"]["calls"]))
    page.get_by_role("link", name=row["task_id"]).click()
    expect(page.locator("#outcome")).to_have_text("failed")
    for field, ok in row["score"]["fields"].items():
        if ok:
            continue
        wrong = page.locator(f"#answer tr.wrong[data-field='{field}']")
        expected, given = row["gold_outputs"][field], row["outputs"][field]
        expect(wrong.locator(".expected")).to_have_text(orjson.dumps(expected).decode())
        expect(wrong.locator(".given")).to_have_text(orjson.dumps(given).decode())
    refused = next(c for c in row["trajectory"]["calls"] if c["error_code"])
    step = page.locator(".step.call.failed").first
    expect(step).to_contain_text(refused["name"])
    expect(step.locator(".error-code")).to_have_text(refused["error_code"])
    expect(step.locator(".arguments")).to_have_text(orjson.dumps(refused["arguments"]).decode())
    expect(page.locator("#scores")).to_contain_text("wrong or missing")
    expect(page.get_by_role("link", name=re.compile("in Jaeger"))).to_have_attribute(
        "href", re.compile(r"^http://jaeger\.example:16686/trace/[0-9a-f]{32}$")
    )


def test_steps_show_the_model_messages_only_when_captured(page: Page, viewer: str) -> None:
    page.goto(viewer + f"/runs/cap/task?domain={DOMAIN}&task={DOMAIN}-004")
    chats = page.locator("#steps .step.chat")
    expect(chats.first.locator(".message.input").first).to_contain_text(
        "Standard Operating Procedure", ignore_case=True
    )
    expect(chats.first.locator(".message.output")).to_contain_text("→ validate_insurance")
    page.goto(viewer + f"/runs/plain/task?domain={DOMAIN}&task={DOMAIN}-000")
    expect(page.locator("#steps .step.chat").first).to_contain_text("messages not captured")
    expect(page.locator("#steps .message")).to_have_count(0)
    expect(page.locator("#steps .step.call").first).to_contain_text("validate_insurance")


def test_search_and_sort_the_task_table(page: Page, viewer: str) -> None:
    page.goto(viewer + "/runs/cap")
    page.fill("#f-search", "-004")
    expect(page.locator("#tasks tbody tr:visible")).to_have_count(1)
    page.fill("#f-search", "")
    page.get_by_role("columnheader", name="task").click()
    page.get_by_role("columnheader", name="task").click()  # descending
    expect(page.locator("#tasks tbody tr").first).to_contain_text(f"{DOMAIN}-005")


def test_compare_counts_only_shared_tasks(page: Page, viewer: str) -> None:
    page.goto(viewer + "/compare?a=cap&b=plain")
    expect(page.locator("#shared")).to_contain_text("over the 3 episodes both runs recorded")
    expect(page.locator("#pairs tbody tr")).to_have_count(3)
    expect(page.locator("#only-a")).to_contain_text(f"{DOMAIN}/{DOMAIN}-005#0")
    expect(page.locator("#only-b")).to_have_text("none")


def test_the_run_page_shows_the_task_table_first_within_the_window(
    page: Page, viewer: str
) -> None:
    """The task table comes right under the headline figures, above the family tables,
    charts and per-domain breakdowns, and no table pushes the page wider than the window."""
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(viewer + "/runs/cap")

    def top(selector: str) -> float:
        return page.locator(selector).first.evaluate(
            "e => e.getBoundingClientRect().top + window.scrollY"
        )

    tasks = top("#tasks")
    assert tasks < 900, f"the task table starts {tasks} px down, below the first screen"
    for later in ("#domains", ".plots", "#errors"):
        assert tasks < top(later), later
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400


def test_the_compare_page_gives_the_paired_verdict_and_the_config_differences(
    page: Page, viewer: str, runs: Path
) -> None:
    """Like ``sopgym compare``: whether the difference is real (the paired test, overall
    and per domain) before the deltas, and which config keys the two runs differ in."""
    page.goto(viewer + "/compare?a=plain&b=cap")
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text("paired episodes of 3 tasks")
    expect(verdict).to_contain_text(re.compile(r"no detectable difference|B is (better|worse)"))
    rows = page.locator("#significance tbody tr")
    expect(rows).to_have_count(2)  # overall and the one domain
    expect(rows.nth(1)).to_contain_text(DOMAIN)
    assert top_of(page, "#verdict") < top_of(page, "#deltas")
    expect(page.locator("#differs")).to_contain_text("capture_messages")
    expect(page.locator("#differs")).to_contain_text("limit")
    expect(page.locator("#config-diff tr.differs")).to_have_count(2)


def top_of(page: Page, selector: str) -> float:
    return page.locator(selector).first.evaluate(
        "e => e.getBoundingClientRect().top + window.scrollY"
    )


def test_task_pages_lead_to_the_next_failed_task_and_back_to_the_filtered_table(
    page: Page, viewer: str, runs: Path
) -> None:
    """From the table filtered to its failures: a failed task's page links the next failed
    task, that one's the previous, and the way back keeps the filter."""
    failed = sorted(r["task_id"] for r in _rows(runs / "cap") if not r["score"]["success"])
    assert len(failed) >= 2, "the seeded noisy run fails several tasks"
    page.goto(viewer + "/runs/cap?outcome=failed")
    page.get_by_role("link", name=failed[0], exact=True).click()
    expect(page.locator("h1")).to_contain_text(failed[0])
    page.locator("a.next-failed").click()
    expect(page.locator("h1")).to_contain_text(failed[1])
    expect(page.locator("a.prev-failed")).to_contain_text(failed[0])
    page.get_by_role("link", name="run cap").click()
    assert "outcome=failed" in page.url
    expect(page.locator("#tasks tbody tr:visible")).to_have_count(len(failed))


def test_one_trace_per_task_with_its_outcome_on_the_root(runs: Path) -> None:
    for run_id, captured in (("cap", True), ("plain", False)):
        run = runs / run_id
        rows = {r["episode_id"]: r for r in _rows(run)}
        spans = load_spans(run).spans
        roots = [s for s in spans if s.name == SPAN_NAME and s.scope == sc.SCOPE_RUNNER]
        assert len(roots) == len(rows) == len({r.trace_id for r in roots})
        for root in roots:
            assert root.parent_id == ""
            row = rows[root.attributes[sc.EPISODE_ID]]
            score = row["score"]
            assert root.attributes[sc.TASK_SUCCESS] is score["success"]
            assert root.attributes[sc.TASK_OUTCOME] == ("success" if score["success"] else "failed")
            errors = sorted(k for k, v in score["errors"].items() if v)
            assert list(root.attributes.get(sc.TASK_ERROR_CLASSES, [])) == errors
            in_trace = [s for s in spans if s.trace_id == root.trace_id]
            (agent,) = [s for s in in_trace if s.scope == sc.SCOPE_AGENT]
            assert agent.parent_id == root.span_id
            # the runner's read of the episode record is in the task's trace, not apart
            assert any(s.name == "GET /v1/episodes/{episode_id}" for s in in_trace)
            chats = [s for s in in_trace if s.scope == sc.SCOPE_AGENT_LLM]
            assert chats
            for chat in chats:
                assert chat.attributes[sc.GEN_AI_CONVERSATION_ID] == row["episode_id"]
                assert chat.attributes[sc.SERVER_ADDRESS] == "127.0.0.1"
                assert chat.attributes[sc.SERVER_PORT] > 0
                assert (sc.GEN_AI_INPUT_MESSAGES in chat.attributes) is captured
                assert (sc.GEN_AI_OUTPUT_MESSAGES in chat.attributes) is captured
        # every span of an episode's trace hangs under that trace's root
        traced = {s.trace_id for s in roots}
        by_id = {s.span_id: s for s in spans}
        assert all(s.parent_id in by_id for s in spans if s.trace_id in traced and s.parent_id)


def test_report_of_an_untraced_run_has_its_summary_figures_and_drilldown(
    runs: Path, tmp_path: Path
) -> None:
    copied = tmp_path / "cap"  # the run folder copied without its traces: a --no-trace run
    shutil.copytree(runs / "cap", copied, ignore=shutil.ignore_patterns("traces"))
    result = CliRunner().invoke(cli, ["report", str(copied), "--data-root", str(DATA_ROOT)])
    assert result.exit_code == 0, result.output
    evaluated = orjson.loads((copied / "eval.json").read_bytes())
    summary = orjson.loads((copied / "summary.json").read_bytes())
    assert evaluated["untraced"] and summary["tsr"] < 1
    for key in ("tasks", "completed", "ecr", "c_tsr", "tsr", "tool_f1", "errors"):
        assert evaluated[key] == summary[key], key
    markdown = (copied / "report.md").read_text()
    assert "results.jsonl" in markdown and f"| {summary['tsr']:.1%} |" in markdown
    failed = [r for r in _rows(copied) if not r["score"]["success"]]
    wrong = next(r for r in failed if not all(r["score"]["fields"].values()))
    field = next(f for f, ok in wrong["score"]["fields"].items() if not ok)
    expected = orjson.dumps(wrong["gold_outputs"][field]).decode()
    given = orjson.dumps(wrong["outputs"][field]).decode()
    assert f"wrong `{field}`: expected `{expected}`, given `{given}`" in markdown
    with_refusal = next(r for r in failed if any(c["error_code"] for c in r["trajectory"]["calls"]))
    refused = next(c for c in with_refusal["trajectory"]["calls"] if c["error_code"])
    call = f"{refused['name']}({orjson.dumps(refused['arguments']).decode()}) → "
    assert call + refused["error_code"] in markdown
    html = (copied / "report.html").read_text()
    assert all("<details><summary>" + r["task_id"] in html for r in failed)

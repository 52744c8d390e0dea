"""Why a task failed, in the viewer, for every family, in a real browser.

Four real runs through real processes with the scripted model's seeded mistakes: banking
loans (a task whose six fields all match but whose write-back call was never made, so its
final state is wrong), tod/live (a dialogue with the simulated customer), tod/next_action
(an action sequence that departs from the procedure) and patient_intake in three trials
(pass^k). Headless Chromium (Debian's package, driven by Playwright) opens each page as a
user does; every check reads the page. The screenshots in docs/images are taken here when
``SOPGYM_SCREENSHOTS`` names a folder.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.helpers import DATA_ROOT

SHOTS = os.environ.get("SOPGYM_SCREENSHOTS")  # a folder: the pages are saved there as PNG
MODEL = ["--agent", "fc", "--model", "scripted:noisy", "--data-root", str(DATA_ROOT)]
RUNS = {  # run id: its domain and options
    "loans": ["banking/loans", "--limit", "12", "--seed", "1"],
    "live": ["tod/live", "--limit", "6"],
    "actions": ["tod/next_action", "--limit", "12"],
    "trials": ["patient_intake", "--limit", "6", "--trials", "3", "--seed", "4"],
}
pytestmark = pytest.mark.slow  # four real runs and a browser


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs")
    for run_id, (domain, *options) in RUNS.items():
        result = subprocess.run(
            [sys.executable, "-m", "sopgym", "run", domain, *MODEL, *options,
             "--runs-dir", str(folder), "--run-id", run_id],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        # off a terminal and without --verbose, no line per model turn (the scripted model
        # is never slow), and the run ends with its failed tasks and the next commands
        assert "step task=" not in result.stderr
        assert f"next: sopgym view {run_id}" in result.stderr
    return folder


def _rows(run: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]


@contextmanager
def _serving(folder: Path) -> Iterator[str]:
    """``sopgym view`` over ``folder``: its address."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sopgym", "view", "--no-open", "--runs-dir", str(folder)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert found, line
        yield found.group(0).rstrip("/")
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
def viewer(runs: Path) -> Iterator[str]:
    with _serving(runs) as address:
        yield address


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    opened = browser.new_page(viewport={"width": 1280, "height": 900})
    yield opened
    opened.close()


def _shot(page: Page, name: str, at: str | None = None) -> None:
    """The page as a user sees it (scrolled to ``at``, a selector), saved under SHOTS."""
    if SHOTS:
        if at:
            page.locator(at).evaluate("e => e.scrollIntoView()")
        page.screenshot(path=str(Path(SHOTS) / name), full_page=False)


def _task_url(viewer: str, run: str, row: dict[str, Any]) -> str:
    return (
        f"{viewer}/runs/{run}/task?domain={row['domain']}&task={row['task_id']}"
        f"&trial={row.get('trial') or 0}"
    )


def test_a_banking_state_failure_shows_expected_beside_actual_and_the_missing_call(
    page: Page, viewer: str, runs: Path
) -> None:
    rows = _rows(runs / "loans")
    # the failure the issue names: every field right, the final state wrong
    row = next(
        r for r in rows
        if not r["score"]["success"] and all(r["score"]["fields"].values())
        and r["score"]["scores"]["final_state"]["value"] == 0.0
    )  # fmt: skip
    page.goto(viewer + "/runs/loans")
    task_row = page.locator("#tasks tbody tr", has=page.get_by_role("link", name=row["task_id"]))
    expect(task_row).to_contain_text("final_state: gold call(s) not made")
    page.select_option("#f-outcome", "failed")
    _shot(page, "viewer-run.png", at="h2:has-text('Tasks')")
    page.get_by_role("link", name=row["task_id"]).click()

    expect(page.locator("#because li[data-scorer='final_state']")).to_contain_text(
        "update_loan_application"
    )
    expect(page.locator("#because")).not_to_contain_text("output_fields")
    status = page.locator("#state-diff tr[data-path='$.application.status']")
    gold = row["score"]["scores"]["final_state"]["metrics"]["expected"]["$.application.status"]
    actual = row["trajectory"]["final_state"]["application"]["status"]
    assert gold != actual
    expect(status.locator(".expected")).to_have_text(orjson.dumps(gold).decode())
    expect(status.locator(".actual")).to_have_text(orjson.dumps(actual).decode())
    missing = page.locator("#missing-calls li[data-tool='update_loan_application']")
    expect(missing).to_contain_text(f'application_id="{row["inputs"]["application_id"]}"')
    expect(page.locator("#extra-calls li").first).to_be_visible()
    expect(page.locator("#answer tr.ok")).to_have_count(len(row["score"]["fields"]))
    _shot(page, "viewer-task.png")


def test_a_tod_live_task_shows_the_dialogue(page: Page, viewer: str, runs: Path) -> None:
    row = next(r for r in _rows(runs / "live") if r["trajectory"]["messages"])
    page.goto(_task_url(viewer, "live", row))
    turns = page.locator("#dialogue .turn")
    expect(turns).to_have_count(len(row["trajectory"]["messages"]))
    for turn, message in zip(turns.all(), row["trajectory"]["messages"], strict=True):
        expect(turn.locator(".role")).to_have_text(message["role"])
        expect(turn.locator("pre")).to_have_text(message["content"])
    # the instructions are text with their lines, not a JSON string of \n
    instructions = page.locator("#inputs pre.text", has_text="- always: ").first
    expect(instructions).to_be_visible()
    assert instructions.evaluate("e => e.textContent.split('\\n').length") > 2
    expect(page.locator("#inputs")).not_to_contain_text("\\n")
    _shot(page, "viewer-dialogue.png")


def test_a_tod_action_failure_shows_the_aligned_diff(page: Page, viewer: str, runs: Path) -> None:
    row = next(
        r for r in _rows(runs / "actions")
        if "gold" in (r["score"]["scores"]["actions"].get("metrics") or {})
        and r["score"]["scores"]["actions"]["metrics"]["made"]
    )  # fmt: skip
    page.goto(_task_url(viewer, "actions", row))
    metrics = row["score"]["scores"]["actions"]["metrics"]
    diff = page.locator("#actions-diff tbody tr")
    expect(diff.first).to_be_visible()
    departures = page.locator("#actions-diff tr:not([data-kind='same'])")
    assert departures.count() >= 1
    # each side of the diff holds the calls in order, one per row, none as a Python list
    made = [t for t in diff.locator(".made").all_text_contents() if t]
    gold = [t for t in diff.locator(".expected").all_text_contents() if t]
    assert len(made) == len(metrics["made"]) and len(gold) == len(metrics["gold"])
    assert [t.split("(")[0] for t in gold] == [c["name"] for c in metrics["gold"]]
    expect(page.locator("#because li[data-scorer='actions']")).to_contain_text("step ")
    expect(page.locator("#scores")).not_to_contain_text("[{'name'")
    # sections are judged by section_top1, never "not scored"
    expect(page.locator("#answer tr[data-field='sections']")).to_contain_text("section_top1")
    _shot(page, "viewer-actions.png")


def test_trials_show_pass_hat_k_and_a_failed_in_all_trials_filter(
    page: Page, viewer: str, runs: Path
) -> None:
    summary = orjson.loads((runs / "trials" / "summary.json").read_bytes())
    page.goto(viewer + "/runs/trials")
    expect(page.locator("[data-figure='pass^3'] b")).to_have_text(
        f"{summary['trials']['pass_hat_k']['3']:.1%}"
    )
    family = page.locator("#family table").first
    expect(family).to_contain_text("pass^2")
    expect(family).to_contain_text(f"{summary['trials']['pass_at_k']['3']:.1%}")
    rows = _rows(runs / "trials")
    every: dict[str, list[bool]] = {}
    for row in rows:
        every.setdefault(row["task_id"], []).append(row["score"]["success"])
    all_failed = [t for t, results in every.items() if not any(results)]
    if all_failed:
        page.select_option("#f-trials", "failed in all trials")
        expect(page.locator("#tasks tbody tr:visible")).to_have_count(3 * len(all_failed))
    _shot(page, "viewer-trials.png")


def test_a_compare_of_runs_that_share_no_task_says_so(page: Page, viewer: str, runs: Path) -> None:
    page.goto(viewer + "/")
    # no two of these runs share a task: nothing is preselected to compare
    expect(page.locator("#compare-form select[name='a']")).to_have_value("")
    _shot(page, "viewer-runs.png")
    page.goto(viewer + "/compare?a=loans&b=live")
    expect(page.locator("#shared")).to_contain_text("These runs share no tasks")
    expect(page.locator("#sides")).to_contain_text("agent=fc model=scripted:noisy")
    own = page.locator("#own")
    for run_id in ("loans", "live"):
        tsr = orjson.loads((runs / run_id / "summary.json").read_bytes())["tsr"]
        expect(own).to_contain_text(f"{tsr:.1%}")
    expect(page.locator("#deltas")).to_have_count(0)
    _shot(page, "viewer-compare.png")


def test_report_and_show_take_a_run_id_and_say_why(runs: Path) -> None:
    row = next(r for r in _rows(runs / "loans") if not r["score"]["success"])
    report = subprocess.run(
        [sys.executable, "-m", "sopgym", "report", "loans", "--runs-dir", str(runs),
         "--data-root", str(DATA_ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-2000:]
    markdown = (runs / "loans" / "report.md").read_text()
    assert f"### {row['task_id']} (banking/loans, trial 0): final_state: gold call(s)" in markdown
    assert "- gold call not made: update_loan_application(" in markdown
    shown = subprocess.run(
        [sys.executable, "-m", "sopgym", "show", "loans", row["task_id"], "--runs-dir",
         str(runs), "--full"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "failed because" in shown.stdout and "not made: update_loan_application(" in shown.stdout
    # --full prints a long call whole: the longest arguments appear unbroken on one line
    longest = max(row["trajectory"]["calls"], key=lambda c: len(orjson.dumps(c["arguments"])))
    assert orjson.dumps(longest["arguments"]).decode() in shown.stdout.replace("\n", "")


def test_a_running_run_adds_rows_in_place_keeping_the_sort(
    page: Page, runs: Path, tmp_path: Path
) -> None:
    """A run still being written (its runner holds run.lock): new episodes appear as rows
    without a reload, the chosen sort stays, and the planned total and time left show."""
    source = runs / "trials"
    run = tmp_path / "runs" / "growing"
    run.mkdir(parents=True)
    (run / "config.json").write_bytes((source / "config.json").read_bytes())
    lines = (source / "results.jsonl").read_bytes().splitlines(keepends=True)
    (run / "results.jsonl").write_bytes(b"".join(lines[:3]))
    lock = os.open(run / "run.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a live runner holds it
    try:
        with _serving(tmp_path / "runs") as address:
            page.goto(address + "/runs/growing")
            expect(page.locator("#progress")).to_contain_text(f"3 of {len(lines)} episodes")
            expect(page.locator("#progress")).to_contain_text("left")
            header = page.locator("#tasks th", has_text="latency s")
            header.click()
            header.click()  # descending
            expect(header).to_have_class(re.compile("desc"))
            page.evaluate("window.__same_page = true")  # gone if the page reloads
            with (run / "results.jsonl").open("ab") as out:
                out.write(b"".join(lines[3:9]))
            expect(page.locator("#tasks tbody tr")).to_have_count(9, timeout=15_000)
            expect(page.locator("#progress")).to_contain_text(f"9 of {len(lines)} episodes")
            assert page.evaluate("window.__same_page === true")
            expect(header).to_have_class(re.compile("desc"))
            latencies = [float(t) for t in page.locator("#tasks tbody tr td:nth-child(10)")
                         .all_text_contents()]  # fmt: skip
            assert latencies == sorted(latencies, reverse=True)
    finally:
        os.close(lock)


def test_report_of_trials_and_compare_of_disjoint_runs_in_the_terminal(runs: Path) -> None:
    report = subprocess.run(
        [sys.executable, "-m", "sopgym", "report", "trials", "--runs-dir", str(runs),
         "--data-root", str(DATA_ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-2000:]
    summary = orjson.loads((runs / "trials" / "summary.json").read_bytes())
    markdown = (runs / "trials" / "report.md").read_text()
    assert "## Trials: pass^k" in markdown
    assert f"| all | {summary['trials']['pass_hat_k']['1']:.1%} |" in markdown
    compared = subprocess.run(
        [sys.executable, "-m", "sopgym", "compare", "loans", "live", "--runs-dir", str(runs),
         "--data-root", str(DATA_ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr[-2000:]
    assert "the runs share no tasks" in compared.stderr
    assert "A: fc/scripted:noisy; B: fc/scripted:noisy" in compared.stdout
    assert "each run's own figures" in compared.stdout
    tsr = [orjson.loads((runs / r / "summary.json").read_bytes())["tsr"] for r in ("loans", "live")]
    row = next(line for line in compared.stdout.splitlines() if line.startswith("│ TSR "))
    assert [c.strip() for c in row.split("│")[2:4]] == [f"{tsr[0]:.1%}", f"{tsr[1]:.1%}"], row

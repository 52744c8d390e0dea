"""The command line over run folders (``sopgym runs | show | export``), task selection
(``--tasks``, ``--match``, ``--sample``), the run banner, ``--resume`` against the stored
config, and the help of every option.

Run folders here are written by the runner's own code (``Runner.prepare`` writes the config,
``Runner.result_row`` scores each episode against the gold, ``write_summary`` the summary) on
the ``crm`` test pack; the slow test makes one real noisy run end to end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import orjson
import pytest
from click.testing import CliRunner

from sopgym.cli import main
from sopgym.core.jsonio import dumps
from sopgym.core.registry import DOMAIN_PACKAGES_ENV
from sopgym.core.tasks import Task
from sopgym.orchestration.runner import Runner
from sopgym.orchestration.runs import FINISHED, INTERRUPTED, RUNNING, read_run
from sopgym.orchestration.selection import SelectionError, select_tasks
from sopgym.runs.records import RunConfig, WorkerReport
from tests.helpers import DATA_ROOT, domain_data

PACKS = "tests.testpacks"


@pytest.fixture(autouse=True)
def _test_packs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DOMAIN_PACKAGES_ENV, PACKS)


def _invoke(*args: str) -> click.testing.Result:
    return CliRunner().invoke(main, [*args], catch_exceptions=False)


# ---- a run folder written by the runner's code ----
def _record(task: Task, runner: Runner, index: int, wrong: bool) -> dict:
    """The gateway's record of an episode that makes the gold calls and answers the gold,
    or (``wrong``) a refused first call and a wrong answer."""
    gold = runner.data[task.domain].gold[task.id]
    calls = [
        {"name": c.name, "arguments": c.arguments, "status": 200, "result": {"ok": True}}
        for c in gold.calls
    ]
    outputs = dict(gold.outputs)
    if wrong:
        calls.insert(0, {"name": gold.calls[0].name, "arguments": {"account_id": 7},
                         "status": 400, "error_code": "type_mismatch",
                         "error_field": "account_id"})  # fmt: skip
        outputs = {k: f"not-{v}" for k, v in outputs.items()}
    return {"task_id": task.id, "episode_id": f"ep-{index}", "calls": calls, "finished": True,
            "outputs": outputs, "catalog": [c.name for c in gold.calls]}  # fmt: skip


def _write_run(
    runs: Path, run_id: str, recorded: int, summary: bool, hold: bool = False, **config: object
) -> Runner:
    """A crm run of the first 4 tasks (unless ``config`` selects others) with ``recorded``
    episodes, the second one wrong; its summary written when ``summary``; its runner keeps
    holding the run's lock when ``hold`` (as a runner process does while it lives)."""
    settings = {"agent": "react", "model": "scripted:noisy", "limit": 4, **config}
    runner = Runner(RunConfig(domains=["crm"], **settings), runs / run_id, DATA_ROOT)  # type: ignore[arg-type]
    tasks = runner.prepare()
    rows = []
    for index, task in enumerate(tasks[:recorded]):
        report = WorkerReport(task_id=task.id, episode_id=f"ep-{index}", status="finished",
                              elapsed_s=0.5,
                              llm_calls=[{"input_tokens": 100, "output_tokens": 10}])  # fmt: skip
        rows.append(runner.result_row(task, report, _record(task, runner, index, index == 1)))
    runner.paths.results.write_bytes(b"".join(dumps(r) + b"\n" for r in rows))
    if summary:
        runner.write_summary(tasks)
    if not hold:  # the runner's process has ended
        runner.release()
    return runner


def test_runs_lists_each_run_with_its_state_figures_and_tokens(tmp_path: Path) -> None:
    _write_run(tmp_path, "done", 4, summary=True)
    _write_run(tmp_path, "stopped", 2, summary=False)
    holder = _write_run(tmp_path, "busy", 1, summary=False, hold=True)
    (tmp_path / "loadtest-x").mkdir()  # a folder that is not a run
    assert [read_run(tmp_path / r).state for r in ("done", "stopped", "busy")] == [
        FINISHED, INTERRUPTED, RUNNING]  # fmt: skip
    done = read_run(tmp_path / "done")
    assert (done.recorded, done.planned, done.tsr, done.tokens) == (4, 4, 0.75, 440)
    stopped = read_run(tmp_path / "stopped")
    assert (stopped.tsr, stopped.tsr_partial) == (0.5, True)  # over what is recorded
    result = _invoke("runs", "--runs-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if "│ " in line}
    assert {"done", "stopped", "busy"} <= set(lines) and "loadtest-x" not in result.stdout
    assert "finished" in lines["done"] and "4/4" in lines["done"] and "75.0%" in lines["done"]
    assert "440" in lines["done"] and "scripted:noisy" in lines["done"]
    assert "interrupted" in lines["stopped"] and "2/4" in lines["stopped"]
    assert "50.0%*" in lines["stopped"] and "running" in lines["busy"]
    assert "recorded so far" in result.stderr
    assert holder.paths.lock.exists()


def test_a_copied_run_folder_is_finished_whatever_its_files_mtimes(tmp_path: Path) -> None:
    """``cp -r`` stamps each copy with the time it was copied: the state reads the files'
    contents, so a copy whose results.jsonl is newer than its summary is still finished, its
    TSR the summary's (unmarked); a row recorded or replaced after the summary is not."""
    runner = _write_run(tmp_path / "machine", "done", 4, summary=True)
    shutil.copytree(tmp_path / "machine" / "done", tmp_path / "copy" / "done",
                    copy_function=shutil.copy)  # fmt: skip (like cp -r: new mtimes)
    copied = tmp_path / "copy" / "done"
    summary = (copied / "summary.json").stat().st_mtime
    os.utime(copied / "results.jsonl", (summary + 60, summary + 60))
    assert read_run(copied).state == FINISHED
    assert not read_run(copied).tsr_partial
    result = _invoke("runs", "--runs-dir", str(tmp_path / "copy"))
    line = next(line for line in result.stdout.splitlines() if " done " in line)
    assert "finished" in line and "75.0%" in line and "75.0%*" not in line
    # the failed task run again (a resume's rerun) and recorded, the summary not rewritten
    task = runner.data["crm"].tasks[1]
    report = WorkerReport(task_id=task.id, episode_id="ep-9", status="finished", elapsed_s=0.5)
    rerun = runner.result_row(task, report, _record(task, runner, 9, False))
    rows = copied.joinpath("results.jsonl").read_bytes().splitlines()
    rows[1] = dumps(rerun)
    copied.joinpath("results.jsonl").write_bytes(b"".join(line + b"\n" for line in rows))
    os.utime(copied / "results.jsonl", (1, 1))  # older than the summary: mtimes decide nothing
    assert read_run(copied).state == INTERRUPTED


def test_a_resume_that_did_not_finish_is_interrupted(tmp_path: Path) -> None:
    """A summary written over 2 of 4 tasks (the others missing) is finished; a resume that
    recorded one more row and stopped before its summary is interrupted."""
    runner = _write_run(tmp_path, "half", 2, summary=True)
    assert read_run(tmp_path / "half").state == FINISHED
    task = runner.data["crm"].tasks[2]
    report = WorkerReport(task_id=task.id, episode_id="ep-2", status="finished", elapsed_s=0.5)
    row = runner.result_row(task, report, _record(task, runner, 2, False))
    with runner.paths.results.open("ab") as results:
        results.write(dumps(row) + b"\n")
    os.utime(runner.paths.results, (1, 1))  # older than the summary: mtimes decide nothing
    assert read_run(tmp_path / "half").state == INTERRUPTED


def test_show_prints_the_input_the_failing_call_and_the_wrong_field(tmp_path: Path) -> None:
    runner = _write_run(tmp_path, "r", 4, summary=True)
    task = runner.data["crm"].tasks[1]
    gold = runner.data["crm"].gold[task.id]
    result = _invoke("show", "r", task.id, "--runs-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "FAILED" in out and task.inputs["account_id"] in out
    assert "400 type_mismatch field account_id" in out and '{"account_id":7}' in out
    field, expected = next(iter(gold.outputs.items()))
    row = next(line for line in out.splitlines() if f"│ {field} " in line)
    assert expected in row and f"not-{expected}" in row and "wrong" in row
    assert "output_fields" in out and "fields wrong or missing" in out
    assert "2 model calls" not in out and "model calls: 1 (0 failed), 110 tokens" in out
    first = runner.data["crm"].tasks[0]
    rows = [orjson.loads(line) for line in runner.paths.results.read_bytes().splitlines()]
    del rows[0]["inputs"]  # a run from before rows recorded them: read from the dataset
    runner.paths.results.write_bytes(b"".join(dumps(r) + b"\n" for r in rows))
    by_path = _invoke("show", str(tmp_path / "r"), first.id, "--data-root", str(DATA_ROOT))
    assert by_path.exit_code == 0 and "SUCCESS" in by_path.stdout
    lines = by_path.stdout.splitlines()
    assert orjson.loads(lines[lines.index("input") + 1]) == first.inputs
    for args, says in (
        (["show", "r", "crm-999"], "has no result for task crm-999 trial 0"),
        (["show", "r", task.id, "--trial", "2"], "(its trials: 0)"),
        (["show", "nope", task.id], "no run 'nope'"),
    ):
        missing = _invoke(*args, "--runs-dir", str(tmp_path))
        assert missing.exit_code == 2 and says in missing.output, missing.output


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_writes_one_flat_row_per_task(tmp_path: Path, fmt: str) -> None:
    import pandas as pd

    runner = _write_run(tmp_path, "r", 4, summary=True)
    out = tmp_path / f"out.{fmt}"
    result = _invoke("export", "r", "--format", fmt, "--out", str(out), "--runs-dir", str(tmp_path))
    if fmt == "parquet" and not _has_parquet_engine():
        assert result.exit_code == 1 and "needs pyarrow" in result.output
        return
    assert result.exit_code == 0, result.output
    if fmt == "csv":
        frame = pd.read_csv(out)
    else:
        frame = pd.read_json(out, lines=True) if fmt == "jsonl" else pd.read_parquet(out)
    tasks = runner.data["crm"].tasks[:4]
    assert list(frame["task_id"]) == [t.id for t in tasks]
    assert list(frame["success"]) == [True, False, True, True]
    assert list(frame["errors.type"]) == [0, 1, 0, 0]  # absent kinds are 0, not empty
    field, expected = next(iter(runner.data["crm"].gold[tasks[1].id].outputs.items()))
    wrong = frame.iloc[1]
    assert not wrong[f"field_ok.{field}"]
    assert (wrong[f"gold.{field}"], wrong[f"output.{field}"]) == (expected, f"not-{expected}")
    assert list(frame["score.output_fields"]) == [1.0, 0.0, 1.0, 1.0]
    assert list(frame["input_tokens"]) == [100] * 4


def _has_parquet_engine() -> bool:
    import importlib.util

    return any(importlib.util.find_spec(e) for e in ("pyarrow", "fastparquet"))


def test_export_to_stdout(tmp_path: Path) -> None:
    _write_run(tmp_path, "r", 2, summary=False)
    result = _invoke("export", "r", "--format", "jsonl", "--out", "-", "--runs-dir", str(tmp_path))
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [r["episode_id"] for r in rows] == ["ep-0", "ep-1"]
    refused = _invoke("export", "r", "--format", "parquet", "--out", "-", "--runs-dir",
                      str(tmp_path))  # fmt: skip
    assert refused.exit_code == 2 and "give --out PATH" in refused.output


# ---- task selection ----
def test_selection_by_ids_glob_sample_and_limit() -> None:
    tasks = {"crm": domain_data("crm").tasks, "triage": domain_data("triage").tasks}
    ids = [t.id for t in select_tasks(tasks, task_ids=["crm-003", "triage-001", "crm-001"])]
    assert ids == ["crm-001", "crm-003", "triage-001"]  # in the domains' own order
    assert [t.id for t in select_tasks(tasks, match="crm-00[2-4]")] == [
        "crm-002", "crm-003", "crm-004"]  # fmt: skip
    drawn = select_tasks(tasks, sample=3, seed=7)
    assert [t.domain for t in drawn] == ["crm"] * 3 + ["triage"] * 3  # N per domain
    assert drawn == select_tasks(tasks, sample=3, seed=7)  # the same seed, the same draw
    others = {tuple(t.id for t in select_tasks(tasks, sample=3, seed=s)) for s in range(8)}
    assert len(others) > 1  # other seeds draw others
    assert len(select_tasks(tasks, match="crm-*", sample=50)) == 12  # at most what there is
    assert [t.id for t in select_tasks(tasks, match="crm-*", limit=2)] == ["crm-000", "crm-001"]
    with pytest.raises(SelectionError, match="no task crm-999, nope in crm, triage"):
        select_tasks(tasks, task_ids=["crm-001", "crm-999", "nope"])
    with pytest.raises(SelectionError, match="no task id matches"):
        select_tasks(tasks, match="zzz*")


def test_a_selection_is_stored_and_a_bad_one_refused_before_the_folder(tmp_path: Path) -> None:
    runner = _write_run(tmp_path, "s", 0, summary=False, limit=None, sample=3, seed=5)
    stored = orjson.loads(runner.paths.config.read_bytes())
    assert (stored["sample"], stored["seed"], stored["task_count"]) == (3, 5, 3)
    again = Runner(RunConfig.read(runner.paths.config), tmp_path / "s2", DATA_ROOT)
    assert again.prepare() == runner.prepare()  # a resume selects the same tasks
    result = _invoke("run", "crm", "--tasks", "crm-001,crm-999", "--runs-dir", str(tmp_path),
                     "--run-id", "bad", "--data-root", str(DATA_ROOT))  # fmt: skip
    assert result.exit_code == 2 and "--tasks: no task crm-999 in crm" in result.output
    assert not (tmp_path / "bad").exists()
    both = _invoke("run", "crm", "--limit", "2", "--sample", "2", "--runs-dir", str(tmp_path))
    assert both.exit_code == 2 and "give one" in both.output


# ---- resume against the stored config ----
def test_resume_refuses_options_that_contradict_the_stored_config(tmp_path: Path) -> None:
    _write_run(tmp_path, "r", 4, summary=True, seed=3, sample=None)
    base = ["run", "--resume", "r", "--runs-dir", str(tmp_path), "--data-root", str(DATA_ROOT)]
    for extra, says in (
        (["--model", "scripted"], "--model scripted contradicts the run's stored model "
                                  "scripted:noisy"),
        (["--seed", "4"], "--seed 4 contradicts the run's stored seed 3"),
        (["--no-trace"], "--no-trace False contradicts the run's stored trace True"),
        (["--tasks", "crm-001"], "--tasks crm-001 contradicts the run's stored task_ids none"),
        (["triage"], "DOMAINS triage contradicts the run's stored domains crm"),
        (["--run-id", "other"], "--run-id names a new run"),
    ):  # fmt: skip
        result = _invoke(*base, *extra)
        assert result.exit_code == 2, result.output
        assert says in " ".join(result.output.split()), result.output
    # the stored values themselves, and --workers, are no contradiction: the run finishes
    same = _invoke(*base, "crm", "--model", "scripted:noisy", "--seed", "3", "--workers", "1")
    assert same.exit_code == 0, same.output
    assert "0 to run" in same.output and "workers=1" in same.output


def test_the_banner_states_the_whole_config() -> None:
    from sopgym.orchestration.runs import describe_config

    config = RunConfig(domains=["crm"], agent="fc", model="scripted:noisy", distractors=3,
                       sop_variant="noisy", transport="grpc", seed=9, trials=2,
                       faults="503=0.1", match="crm-0*", sample=4)  # fmt: skip
    line = describe_config(config)
    for part in ("agent=fc", "model=scripted:noisy", "sop=noisy", "distractors=3",
                 "transport=grpc", "seed=9", "trials=2", "faults=503=0.1",
                 "tasks=matching crm-0* sample 4/domain"):  # fmt: skip
        assert part in line, line
    assert "model=none" in describe_config(RunConfig(domains=["crm"], agent="oracle"))


def test_the_report_states_the_whole_config_in_both_formats(tmp_path: Path) -> None:
    from sopgym.orchestration.runs import RunReader

    runner = _write_run(tmp_path, "r", 4, summary=True, trace=False, seed=7, distractors=2,
                        sop_variant="noisy", faults="503=0.1")  # fmt: skip
    result = _invoke("report", str(runner.paths.root), "--data-root", str(DATA_ROOT))
    assert result.exit_code == 0, result.output
    line = RunReader(runner.paths.root).describe()
    for part in ("agent=react", "model=scripted:noisy", "sop=noisy", "distractors=2",
                 "seed=7", "faults=503=0.1", "trace=off", "tasks=first 4/domain"):  # fmt: skip
        assert part in line, line
    markdown = (runner.paths.root / "report.md").read_text()
    html = (runner.paths.root / "report.html").read_text()
    assert f"Run config: `{line}`" in markdown.split("## ")[0]  # in the header
    header = html.split("<h2>")[0]
    assert f"<p id='run-config'>Run config: <code>{line}</code></p>" in header


def test_compare_of_runs_over_different_tasks_warns_with_the_counts(tmp_path: Path) -> None:
    a = _write_run(tmp_path, "a", 4, summary=True, trace=False)
    b = _write_run(tmp_path, "b", 3, summary=True, trace=False, limit=3)
    args = ("compare", str(a.paths.root), str(b.paths.root), "--data-root", str(DATA_ROOT))
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    warning = "3 episodes in both, 1 only in A, 0 only in B"
    assert result.stderr.count(warning) == 1 and warning not in result.stdout  # said once
    # over tasks 0-2 of both (A's whole run, with its fourth task right, has TSR 75%)
    row = next(line for line in result.stdout.splitlines() if line.startswith("│ TSR "))
    assert [cell.strip() for cell in row.split("│")[2:5]] == ["66.7%", "66.7%", "0.0%"], row
    as_json = orjson.loads(_invoke(*args, "--json").stdout)
    assert as_json["shared"] == 3 and len(as_json["only_a"]) == 1 and as_json["only_b"] == []


# ---- help and list ----
def _options(command: click.Command, path: str) -> list[tuple[str, click.Option]]:
    found = [(path, p) for p in command.params if isinstance(p, click.Option) and not p.hidden]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found += _options(sub, f"{path} {name}")
    return found


def test_every_option_of_every_command_has_help() -> None:
    options = _options(main, "sopgym")
    assert len(options) > 100  # the walk reached the subcommands
    missing = [f"{path} {'/'.join(o.opts)}" for path, o in options if not (o.help or "").strip()]
    assert not missing, missing


def test_commands_that_run_agents_default_to_the_same_one_or_say_why() -> None:
    agents = {path: o for path, o in _options(main, "sopgym") if o.name == "agent"}
    assert set(agents) == {"sopgym run", "sopgym agent-worker", "sopgym loadtest",
                           "sopgym run-service"}  # fmt: skip
    for path, option in agents.items():
        assert "baseline (" in (option.help or "")  # every agent is named
        if option.default != agents["sopgym run"].default:
            assert "default differs from sopgym run's" in (option.help or ""), path


def test_list_details_shows_tools_and_no_free_text_values() -> None:
    result = _invoke(
        "list", "crm", "triage", "apigraph", "--details", "--data-root", str(DATA_ROOT)
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "get_account, count_products" in out  # the tools --details promises
    assert "priority: 6, private: 3, standard: 3" in out  # a label by count
    assert "numbers 0 to" in out  # a number by its range
    assert "distinct values (free text or structured: not listed)" in out
    nodes = {n for g in domain_data("apigraph").gold.values() for n in g.outputs["nodes"]}
    assert not any(str(n) in out for n in nodes if len(str(n)) > 6)


# ---- one real run ----
@pytest.mark.slow
def test_a_real_noisy_run_is_listed_shown_exported_and_resumed(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "sopgym", "run", "crm", "--agent", "fc", "--model",
               "scripted:wrong_final=0.5", "--sample", "4", "--seed", "3", "--no-trace",
               "--runs-dir", str(tmp_path), "--run-id", "n",
               "--data-root", str(DATA_ROOT)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    banner = " ".join(done.stderr.split())  # wrapped at spaces to the console's width
    assert "seed=3" in banner and "tasks=sample 4/domain" in banner
    results = tmp_path / "n" / "results.jsonl"
    recorded = results.read_bytes()
    rows = [orjson.loads(line) for line in recorded.splitlines()]
    drawn = select_tasks({"crm": domain_data("crm").tasks}, sample=4, seed=3)
    assert sorted(r["task_id"] for r in rows) == sorted(t.id for t in drawn)
    failed = next(r for r in rows if not r["score"]["success"])
    shown = _invoke("show", "n", failed["task_id"], "--runs-dir", str(tmp_path))
    assert "FAILED" in shown.stdout and "wrong" in shown.stdout
    listed = _invoke("runs", "--runs-dir", str(tmp_path))
    assert "finished" in listed.stdout and "4/4" in listed.stdout
    exported = _invoke("export", "n", "--out", "-", "--runs-dir", str(tmp_path))
    assert exported.stdout.count("\n") == 5  # a header and a row per task
    resume = [sys.executable, "-m", "sopgym", "run", "--resume", "n", "--runs-dir", str(tmp_path)]
    resumed = subprocess.run([*resume, "--seed", "4"],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert resumed.returncode == 2 and "--seed 4 contradicts" in resumed.stderr
    assert results.read_bytes() == recorded


@pytest.mark.parametrize("width", [80, 120])
def test_tables_show_every_number_and_state_whole_at_80_and_120_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    width: int,
) -> None:
    """``sopgym runs``, ``sopgym compare`` and the run's summary tables at a narrow
    terminal: no cell is cut with ``…`` and no line is wider than the terminal; a table too
    wide is folded into several (its first column repeated), so every figure, state and
    model name is there whole."""
    from sopgym.cli.summary import print_summary

    monkeypatch.setenv("COLUMNS", str(width))
    _write_run(tmp_path, "a-long-run-name", 4, summary=True, trace=False, seed=12345,
               faults="503=0.2,get_account:drop=0.3")  # fmt: skip
    _write_run(tmp_path, "b", 2, summary=False, trace=False, model="scripted")
    outputs = []
    for args in (["runs"], ["compare", "a-long-run-name", "b"]):
        result = _invoke(*args, "--runs-dir", str(tmp_path))
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout)
    summary = orjson.loads((tmp_path / "a-long-run-name" / "summary.json").read_bytes())
    print_summary(summary)
    outputs.append(capsys.readouterr().out)
    for out in outputs:
        assert "…" not in out, out
        assert max(map(len, out.splitlines())) <= width, out
    runs, compared, tables = outputs
    for whole in ("finished", "interrupted", "scripted:noisy", "scripted", "75.0%", "50.0%*",
                  "4/4", "2/4", "503=0.2,get_account:drop=0.3", "12345", "440"):  # fmt: skip
        assert whole in runs, (whole, runs)
    assert "no detectable difference" in compared and "-50.0%" in compared
    assert "75.0%" in tables and "100.0%" in tables and "wrong_final=1" in tables


def test_a_mistyped_domain_is_one_line_with_what_was_meant() -> None:
    """A typo names the closest domains or families and where the whole list is, on its
    error line, exit 2, without printing all the names."""
    result = _invoke("run", "bankin", "--limit", "1")
    assert result.exit_code == 2
    said = next(line for line in result.output.splitlines() if "unknown domain" in line)
    assert "did you mean banking" in said and "sopgym list" in said
    assert "patient_intake" not in said  # not the whole list


def test_a_base_url_without_its_scheme_is_refused_with_the_fix(tmp_path: Path) -> None:
    result = _invoke("run", "crm", "--model", "openai:some-model", "--base-url",
                     "localhost:8000/v1", "--runs-dir", str(tmp_path))  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "did you mean http://localhost:8000/v1" in result.output
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_the_report_opens_with_the_headline_then_the_failed_tasks(tmp_path: Path) -> None:
    """The drill-down into the failed tasks comes right after the overall and per-domain
    tables (it was last, 8,500 px down), and without --jaeger-ui no trace links anywhere."""
    runner = _write_run(tmp_path, "r", 4, summary=True, trace=False)
    result = _invoke("report", str(runner.paths.root), "--data-root", str(DATA_ROOT))
    assert result.exit_code == 0, result.output
    for name in ("report.md", "report.html"):
        text = (runner.paths.root / name).read_text()
        drilldown = text.index("Failed tasks: wrong fields and calls")
        assert text.index("By domain") < drilldown < text.index("By agent / model"), name
        assert "16686" not in text and "/trace/" not in text


@pytest.mark.slow  # a real run (start-up, three tasks) per width
@pytest.mark.parametrize("width", [80, 120])
def test_a_real_run_prints_every_line_within_the_terminal(tmp_path: Path, width: int) -> None:
    """``sopgym run --limit 3`` with a noisy model, its output read at 80 and 120 columns:
    no line wider than the terminal (but a next command, whole on its own line) and no table
    cell cut with ``…``."""
    env = {**os.environ, "COLUMNS": str(width), DOMAIN_PACKAGES_ENV: PACKS}
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", "crm", "--model", "scripted:noisy", "--seed", "4",
         "--limit", "3", "--no-trace", "--runs-dir", str(tmp_path), "--run-id", "r",
         "--data-root", str(DATA_ROOT)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = (result.stdout + result.stderr).splitlines()
    # a next command is printed whole on its own line (to copy), whatever its length
    wide = [line for line in lines if len(line) > width and "sopgym " not in line[:14]]
    assert lines and not wide, "\n".join(wide)
    table_lines = [line for line in lines if line.startswith(("│", "┃"))]
    assert table_lines and not any("…" in line for line in table_lines)
    assert any(line.startswith("│ all ") and "%" in line for line in table_lines)

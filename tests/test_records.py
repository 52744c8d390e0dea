"""The typed records (:mod:`sopgym.runs.records`) write the JSON the dicts before them
wrote, and read what those wrote.

The literals under ``tests/fixtures/records/`` were written by the code before the records
(commit aaaf1e3): ``summary.json`` is that runner's ``write_summary`` over the stored run
``tests/fixtures/traced_run_latest`` (whose ``config.json`` that runner wrote too);
``worker_reports.jsonl`` holds the worker's report of a finished episode and of one the agent
failed (with ``error_record`` and ``traceback``; ``elapsed_s`` and the traceback's text fixed),
then a shard file's line (the token left out, ``record_error`` added); ``jobs.jsonl`` two job
lines (every optional key, then none). A figure changed on purpose means writing the summary
literal again; a key, its order or a value changed by the records is what these tests catch.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import orjson
import pytest

from sopgym.core.jsonio import dumps
from sopgym.orchestration.runner import Runner
from sopgym.runs.records import FORMAT_VERSION, Job, RunConfig, RunSummary, WorkerReport, given
from tests.helpers import DATA_ROOT

FIXTURES = Path(__file__).parent / "fixtures"
LITERALS = FIXTURES / "records"
STORED_RUN = FIXTURES / "traced_run_latest"


def test_a_config_json_of_the_old_runner_reads_and_writes_back_byte_for_byte() -> None:
    literal = (STORED_RUN / "config.json").read_bytes()
    stored = orjson.loads(literal)
    config = RunConfig.read(STORED_RUN / "config.json")
    runner_keys = {k: stored[k] for k in ("created", "task_count", "provenance")}
    assert dumps({**config.to_json(), **runner_keys}) == literal  # what prepare() writes


def test_the_runner_writes_config_json_with_the_old_keys_in_order(tmp_path: Path) -> None:
    config = RunConfig.read(STORED_RUN / "config.json")
    Runner(config, tmp_path / "run", DATA_ROOT).prepare()
    written = orjson.loads((tmp_path / "run" / "config.json").read_bytes())
    stored = orjson.loads((STORED_RUN / "config.json").read_bytes())
    assert list(written) == [*stored, "format_version"]  # the old keys, then the format's
    assert written["format_version"] == FORMAT_VERSION
    assert {k: written[k] for k in config.to_json()} == config.to_json()


def test_an_old_minimal_config_reads_with_the_defaults() -> None:
    config = RunConfig.read(FIXTURES / "traced_run" / "config.json")  # the oldest stored run
    assert (config.agent, config.limit, config.workers, config.seed) == ("react", 8, 2, 0)


def test_a_config_of_the_wrong_shape_is_refused_with_where(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(orjson.dumps({"domains": ["crm"], "workers": "two", "created": "x"}))
    with pytest.raises(ValueError, match=r"not a run config: .*workers"):
        RunConfig.read(path)
    newer = {"domains": ["crm"], "a_later_option": 1}  # a newer version's key: ignored
    assert RunConfig.from_json(newer) == RunConfig(domains=["crm"])


def test_the_runner_writes_the_old_summary_of_a_stored_run(tmp_path: Path) -> None:
    """The stored run scored again through the records: the old runner's summary.json, byte
    for byte (its keys, their order, every figure)."""
    run = tmp_path / STORED_RUN.name
    run.mkdir()
    for name in ("config.json", "results.jsonl"):
        shutil.copy(STORED_RUN / name, run / name)
    runner = Runner(RunConfig.read(run / "config.json"), run, DATA_ROOT)
    summary = runner.write_summary(runner.prepare())
    assert isinstance(summary, RunSummary) and summary.tsr == 0.75
    written = orjson.loads((run / "summary.json").read_bytes())
    assert list(written)[:3] == ["run_id", "config", "format_version"]  # the one key added
    assert written.pop("format_version") == FORMAT_VERSION
    assert dumps(written) == (LITERALS / "summary.json").read_bytes()


def test_a_summary_reads_and_writes_back_byte_for_byte() -> None:
    literal = (LITERALS / "summary.json").read_bytes()
    summary = RunSummary.read(LITERALS / "summary.json")
    assert isinstance(summary.config, RunConfig) and summary.config.agent == "react"
    assert dumps(summary.to_json()) == literal


def test_the_keys_a_command_adds_come_last_and_run_dir_is_never_written() -> None:
    summary = RunSummary.read(LITERALS / "summary.json")
    old_keys = list(orjson.loads((LITERALS / "summary.json").read_bytes()))
    summary.run_dir = "runs/x"
    assert list(summary.to_json()) == old_keys
    # sopgym merge added these, in this order, after the runner's keys
    summary.unfinished_shards, summary.unfinished_shard_states = [1], {"1": "stuck"}
    summary.unknown_task_rows, summary.duplicate_task_rows = 0, 2
    merged = summary.to_json()
    assert list(merged) == [*old_keys, "unfinished_shards", "unfinished_shard_states",
                            "unknown_task_rows", "duplicate_task_rows"]  # fmt: skip
    assert merged["duplicate_task_rows"] == 2


def worker_lines() -> list[bytes]:
    return (LITERALS / "worker_reports.jsonl").read_bytes().splitlines()


@pytest.mark.parametrize("index", [0, 1])
def test_a_worker_report_of_the_old_worker_reads_and_writes_back(index: int) -> None:
    line = worker_lines()[index]
    report = WorkerReport.from_json(orjson.loads(line))
    assert orjson.dumps(report.to_json()) == line


def test_the_worker_error_crosses_as_a_typed_record() -> None:
    finished, failed = (WorkerReport.from_json(orjson.loads(x)) for x in worker_lines()[:2])
    assert finished.error_type is None and given(finished.token) == "tok"
    assert failed.error == "StepLimitExceeded: 12 steps"  # the text result rows keep
    assert failed.error_type == "StepLimitExceeded"
    assert given(failed.error_record) == {
        "kind": "agent",
        "type": "StepLimitExceeded",
        "message": "12 steps",
    }
    typo = {**orjson.loads(worker_lines()[1]), "error_record": {"kind": "agent"}}
    with pytest.raises(msgspec.ValidationError, match="error_record"):
        WorkerReport.from_json(typo)  # a record missing its class is refused, not guessed


def test_a_shard_line_of_the_old_shards_reads_and_writes_back() -> None:
    line = worker_lines()[2]
    stored = orjson.loads(line)
    report = WorkerReport.from_json(stored["report"])
    assert given(report.token) is None
    assert given(report.record_error) == "GET /v1/episodes/e1/record: 404 unknown_episode"
    assert orjson.dumps({"report": report.to_json(), "record": stored["record"]}) == line


def test_the_invalid_job_answer_reads_as_a_report_with_the_defaults() -> None:
    report = WorkerReport.from_json({"task_id": None, "status": "failed", "error": "invalid"})
    assert (report.episode_id, report.trial, report.llm_calls) == (None, 0, [])


def test_the_job_line_is_the_old_one() -> None:
    task = {"id": "t1", "domain": "patient_intake", "inputs": {"patient_id": "P-1"},
            "kind": "tool_use"}  # fmt: skip
    every, bare = (LITERALS / "jobs.jsonl").read_bytes().splitlines()
    job = Job(task, "r", 2, 7, 3, "clean", {"calls": []}, "00-ab-cd-01")
    assert orjson.dumps(job.to_json()) == every
    assert orjson.dumps(Job(task, "r").to_json()) == bare
    assert msgspec.structs.replace(job, trial=0).to_json()["seed"] == 7  # trial 0: the run's


# written by `sopgym run patient_intake --limit 2 --run-id before-format-version --no-trace` at
# commit 3e1fab6, the last before the run folder's format_version (config, results, summary)
BEFORE_VERSIONS = FIXTURES / "run_before_format_version"


def test_a_run_folder_written_before_format_version_still_reads(tmp_path: Path) -> None:
    from sopgym.orchestration.runs import FINISHED, RunReader

    run = tmp_path / BEFORE_VERSIONS.name
    shutil.copytree(BEFORE_VERSIONS, run)
    assert "format_version" not in orjson.loads((run / "config.json").read_bytes())
    summary = RunSummary.read(run / "summary.json")
    assert (summary.format_version, summary.tasks, summary.tsr) == (0, 2, 1.0)
    assert dumps(summary.to_json()) == (run / "summary.json").read_bytes()  # as it was written
    folder = RunReader(run)
    assert folder.run_config() == RunConfig(domains=["patient_intake"], agent="react", limit=2,
                                            trace=False, concurrency=2)  # fmt: skip
    assert folder.state() == FINISHED and folder.summary()["tsr"] == 1.0
    assert [row["score"]["success"] for row in folder.rows()] == [True, True]


def test_a_resumed_old_run_keeps_its_config_and_stamps_its_new_summary(tmp_path: Path) -> None:
    run = tmp_path / BEFORE_VERSIONS.name
    shutil.copytree(BEFORE_VERSIONS, run)
    config_before = (run / "config.json").read_bytes()
    runner = Runner(RunConfig.read(run / "config.json"), run, DATA_ROOT)
    summary = runner.write_summary(runner.prepare())
    runner.release()
    assert (run / "config.json").read_bytes() == config_before  # a resume rewrites no config
    assert summary.format_version == FORMAT_VERSION and summary.tsr == 1.0
    assert orjson.loads((run / "summary.json").read_bytes())["format_version"] == FORMAT_VERSION

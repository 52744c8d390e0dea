"""Issue 41, point 6: every file that carries the gold is owner-only (0600) on every path that
writes it: ``sopgym score``, a resume's rewrite (``--retry-infra``), ``merge``, ``report``,
``eval`` and every export format, whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from sopgym.cli import main
from sopgym.core.jsonio import JsonlAppender, write_atomic
from sopgym.core.outcomes import INFRA_ERROR
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "maze/telecom_requests"


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most accounts have: files would be 0644 unless made owner-only."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _scored_run(tmp: Path) -> Path:
    data = domain_data(DOMAIN)
    lines = [orjson.dumps({"task_id": t.id, "answer": data.gold[t.id].outputs})
             for t in data.tasks[:3]]  # fmt: skip
    responses = tmp / "responses.jsonl"
    responses.write_bytes(b"\n".join(lines) + b"\n")
    result = CliRunner().invoke(main, [
        "score", DOMAIN, "--responses", str(responses), "--limit", "3", "--run-id", "r",
        "--runs-dir", str(tmp / "runs"), "--data-root", str(DATA_ROOT),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    return tmp / "runs" / "r"


def test_write_atomic_is_owner_only_even_over_a_readable_file(tmp_path: Path) -> None:
    target = tmp_path / "results.jsonl"
    target.write_bytes(b"old\n")
    target.chmod(0o644)
    leftover = tmp_path / f".results.jsonl.tmp{os.getpid()}"  # a dead process's, world-readable
    leftover.write_bytes(b"x")
    leftover.chmod(0o644)
    write_atomic(target, b"new\n")
    assert target.read_bytes() == b"new\n" and _mode(target) == 0o600
    assert not leftover.exists()


def test_an_appender_narrows_a_results_file_made_readable_before(tmp_path: Path) -> None:
    target = tmp_path / "results.jsonl"
    target.write_bytes(b"")
    target.chmod(0o644)
    appender = JsonlAppender(target)
    appender.append({"a": 1})
    appender.close()
    assert _mode(target) == 0o600


def test_score_report_eval_and_every_export_are_owner_only(tmp_path: Path) -> None:
    run = _scored_run(tmp_path)
    for name in ("results.jsonl", "summary.json", "config.json"):
        assert _mode(run / name) == 0o600, name
    runner = CliRunner()
    for args in (["report", str(run)], ["eval", str(run)]):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
    for fmt in ("csv", "jsonl"):
        result = runner.invoke(main, ["export", str(run), "--format", fmt])
        assert result.exit_code == 0, result.output
    for name in ("report.md", "report.html", "eval.json", "export.csv", "export.jsonl"):
        assert _mode(run / name) == 0o600, name


def test_the_parquet_and_hf_exports_are_owner_only(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")  # the parquet extra
    run = _scored_run(tmp_path)
    for fmt in ("parquet", "hf"):
        result = CliRunner().invoke(main, ["export", str(run), "--format", fmt])
        assert result.exit_code == 0, result.output
    for path in (run / "export.parquet", run / "export-hf" / "README.md",
                 run / "export-hf" / "data" / "train-00000-of-00001.parquet"):  # fmt: skip
        assert _mode(path) == 0o600, path


def test_a_retry_infra_rewrite_and_a_merge_are_owner_only(tmp_path: Path) -> None:
    from sopgym.orchestration.runner import Runner
    from sopgym.orchestration.shards import merge
    from sopgym.runs.records import RunConfig

    run = _scored_run(tmp_path)
    rows = [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]
    rows[0]["status"] = INFRA_ERROR
    (run / "results.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    (run / "results.jsonl").chmod(0o644)  # as an older sopgym left it
    config = orjson.loads((run / "config.json").read_bytes())
    runner = Runner(RunConfig.from_json(config), run, DATA_ROOT)
    try:
        runner.prepare()
        assert runner.drop_infra_errors() == 1  # what --resume --retry-infra does first
    finally:
        runner.release()
    assert _mode(run / "results.jsonl") == 0o600

    merged = tmp_path / "merged"
    shard = merged / "shards"
    shard.mkdir(parents=True)
    meta = {"domains": ["patient_intake"], "agent": "oracle", "model": "scripted", "count": 1,
            "shard": 0, "distractors": 0, "sop_variant": "clean", "limit": 1,
            "finished_at": 1.0}  # fmt: skip
    (shard / "shard-0000-of-0001.json").write_bytes(orjson.dumps(meta))
    merge(merged, shards=1, data_root=DATA_ROOT, log=lambda _: None)
    for name in ("results.jsonl", "summary.json", "config.json"):
        assert _mode(merged / name) == 0o600, name

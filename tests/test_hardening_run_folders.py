"""Hardening (issue 36, point 7): run folders holding valid JSON of the wrong shape. Every
reader checks rows against the typed record (sopgym.runs.records), names file and
line, `--repair` drops them, the viewer lists the other runs; a task recorded twice or one the
run did not select is refused, not silently kept; a truncated config.json or one naming an
unknown domain is one clear line, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from sopgym.cli import main
from sopgym.core.jsonio import CorruptRow
from sopgym.core.registry import DOMAIN_PACKAGES_ENV
from sopgym.orchestration.runner import Runner
from sopgym.runs.records import RunConfig, read_results, result_row_problem
from sopgym.viewer.app import create_app
from sopgym.viewer.catalog import RunCatalog
from tests.helpers import DATA_ROOT
from tests.test_runs_cli import _write_run


@pytest.fixture(autouse=True)
def _test_packs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DOMAIN_PACKAGES_ENV, "tests.testpacks")


def _rows(run: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]


def _rewrite(run: Path, rows: list[dict[str, Any]]) -> None:
    (run / "results.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


def _no_task_id(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "task_id"}


def _score_lacking_success(row: dict) -> dict:
    return {**row, "score": {k: v for k, v in row["score"].items() if k != "success"}}


BROKEN = [_no_task_id, _score_lacking_success]


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(main, [*args], catch_exceptions=True)


@pytest.mark.parametrize("breaks", BROKEN)
def test_every_reader_names_file_and_line_of_a_row_of_the_wrong_shape(
    tmp_path: Path, breaks: Any
) -> None:
    good = _write_run(tmp_path, "good", 3, summary=True)
    bad = _write_run(tmp_path, "bad", 3, summary=False)
    rows = _rows(bad.paths.root)
    rows[1] = breaks(rows[1])
    _rewrite(bad.paths.root, rows)
    where = f"{bad.paths.results}, line 2"
    assert result_row_problem(rows[1]) is not None and result_row_problem(rows[0]) is None
    with pytest.raises(CorruptRow, match="line 2"):
        read_results(bad.paths.results)
    # show and report: one line naming file and line, no traceback
    task = rows[0]["task_id"]
    shown = _invoke("show", "bad", task, "--runs-dir", str(tmp_path))
    assert shown.exit_code == 1 and where in shown.output and "Traceback" not in shown.output
    assert not isinstance(shown.exception, CorruptRow | KeyError | TypeError)
    evaluated = _invoke("eval", str(bad.paths.root), "--data-root", str(DATA_ROOT), "--out", "-")
    assert evaluated.exit_code == 1 and where in evaluated.output, evaluated.output
    # the viewer: its home lists every run, the bad one said unreadable; its page is no 500
    client = TestClient(create_app(RunCatalog([tmp_path])), raise_server_exceptions=False)
    home = client.get("/")
    assert home.status_code == 200 and "good" in home.text and "unreadable" in home.text
    assert client.get("/runs/bad").status_code == 422
    assert client.get("/runs/good").status_code == 200
    # a resume refuses it naming file and line; --repair drops it and the task runs again
    runner = Runner(RunConfig.read(bad.paths.config), bad.paths.root, DATA_ROOT)
    tasks = runner.prepare()
    with pytest.raises(CorruptRow, match="line 2"):
        runner.pending(tasks)
    runner.repair()
    assert len(_rows(bad.paths.root)) == 2
    assert len(runner.pending(tasks)) == len(tasks) - 2
    assert good.paths.results.exists()


def test_a_task_recorded_twice_or_foreign_is_refused_and_repair_keeps_the_first(
    tmp_path: Path,
) -> None:
    run = _write_run(tmp_path, "r", 3, summary=False)
    rows = _rows(run.paths.root)
    foreign = {
        **rows[2],
        "task_id": "not-this-run",
        "score": {**rows[2]["score"], "task_id": "not-this-run"},
    }
    _rewrite(run.paths.root, [*rows, {**rows[0], "elapsed_s": 9.0}, foreign])  # fmt: skip
    with pytest.raises(CorruptRow, match=r"line 4.*recorded twice"):
        read_results(run.paths.results)
    runner = Runner(RunConfig.read(run.paths.config), run.paths.root, DATA_ROOT)
    tasks = runner.prepare()
    with pytest.raises(CorruptRow, match="line 4"):
        runner.pending(tasks)
    runner.repair()
    kept = _rows(run.paths.root)
    assert kept == rows  # the first of the twice-recorded kept, the foreign one dropped


def test_a_truncated_config_or_an_unknown_domain_is_one_line(tmp_path: Path) -> None:
    run = _write_run(tmp_path, "cut", 2, summary=True)
    whole = run.paths.config.read_bytes()
    run.paths.config.write_bytes(whole[: len(whole) // 2])
    evaluated = _invoke("eval", str(run.paths.root), "--data-root", str(DATA_ROOT), "--out", "-")
    assert evaluated.exit_code == 1 and "config.json is not JSON" in evaluated.output
    run.paths.config.write_bytes(whole.replace(b'"crm"', b'"no_such_domain"'))
    resumed = _invoke("run", "--resume", "cut", "--runs-dir", str(tmp_path),
                      "--data-root", str(DATA_ROOT))  # fmt: skip
    assert resumed.exit_code == 2 and "no_such_domain" in resumed.output, resumed.output
    assert resumed.exception is None or isinstance(resumed.exception, SystemExit)

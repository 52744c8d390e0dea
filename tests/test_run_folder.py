"""The run folder every writer writes through (:mod:`sopgym.runs.folder`): one writer at a
time, config.json once and stamped with the format, rows appended whole, the summary stamped."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from sopgym.runs.folder import RunFolder, RunLocked
from sopgym.runs.records import FORMAT_VERSION, RunConfig
from tests.test_records import LITERALS


def test_a_second_writer_is_refused_until_the_first_lets_go(tmp_path: Path) -> None:
    first, second = RunFolder(tmp_path / "run"), RunFolder(tmp_path / "run")
    first.lock()
    with pytest.raises(RunLocked, match=r"run run is in use by another runner \(pid \d+\)"):
        second.lock()
    first.release()
    second.lock()  # the lock is free again
    second.release()


def test_config_is_written_once_with_the_format_and_updated_in_place(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.lock()
    folder.write_config(RunConfig(domains=["patient_intake"]), created="then", task_count=3)
    folder.write_config(RunConfig(domains=["other"]), created="later")  # a resume: kept
    folder.update_config(source={"kind": "sdk"})
    written = orjson.loads(folder.paths.config.read_bytes())
    assert written["domains"] == ["patient_intake"] and written["created"] == "then"
    assert list(written)[-3:] == ["task_count", "format_version", "source"]
    assert written["format_version"] == FORMAT_VERSION
    folder.release()


def test_rows_are_appended_and_the_summary_is_stamped(tmp_path: Path) -> None:
    from sopgym.runs.records import RunSummary

    folder = RunFolder(tmp_path / "run")
    folder.lock()
    folder.append_result({"task_id": "t-1"})
    folder.append_result({"task_id": "t-2"})
    folder.release()  # closes the appender too
    lines = folder.paths.results.read_bytes().splitlines()
    assert [orjson.loads(line)["task_id"] for line in lines] == ["t-1", "t-2"]
    summary = RunSummary.read(LITERALS / "summary.json")
    assert summary.format_version == 0  # written before the key
    folder.write_summary(summary)
    assert orjson.loads(folder.paths.summary.read_bytes())["format_version"] == FORMAT_VERSION

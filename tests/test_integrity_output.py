"""Issue 41, point 9: what sopgym prints and writes is inert where it is shown. Control
characters in a task id or an imported file's name reach no terminal raw (no fake green
"TSR 100.0%" line); CSV cells never start a formula; a model name is text in the dataset card
and the Markdown report."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from sopgym.cli import main
from sopgym.cli.evaluate import scored
from sopgym.cli.imports import import_group
from sopgym.evaluation.compare import compare, to_markdown
from tests.helpers import DATA_ROOT, domain_data
from tests.test_integrity_inputs import MAZE, maze_folder

DOMAIN = "maze/telecom_requests"
FAKE = "\x1b[1;32mTSR 100.0%\x1b[0m"  # what a hostile id paints on a terminal
MODEL = '<img src=x onerror="alert(1)">\x1b[32m'
FORMULA = '=HYPERLINK("http://127.0.0.1:9/","open")'


def _no_fake_line(output: str) -> None:
    assert "\x1b" not in output and "\r" not in output
    assert not any(line.lstrip().startswith("TSR 100.0%") for line in output.splitlines())


def _scored(tmp: Path, *extra: dict) -> Path:
    data = domain_data(DOMAIN)
    first = data.tasks[0].id
    answer = {**data.gold[first].outputs, "step": FORMULA}
    lines = [{"task_id": first, "answer": answer}, *extra]
    responses = tmp / "responses.jsonl"
    responses.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    result = CliRunner().invoke(main, [
        "score", DOMAIN, "--responses", str(responses), "--limit", "1", "--run-id", "r",
        "--model", MODEL, "--runs-dir", str(tmp / "runs"), "--data-root", str(DATA_ROOT),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    _no_fake_line(result.output)
    return tmp / "runs" / "r"


def test_helpers() -> None:
    from sopgym.core.untrusted import csv_cell, markdown_code, markdown_text, printable

    assert printable(f"a{FAKE}\nb\u202ec") == "a\\x1b[1;32mTSR 100.0%\\x1b[0m\\x0ab\\u202ec"
    assert [csv_cell(v) for v in ("=1", "+1", "-1", "@a", "\t=1", "\r=1", "a=1", -1, 2.5)] == [
        "'=1", "'+1", "'-1", "'@a", "'\t=1", "'\r=1", "a=1", -1, 2.5]  # fmt: skip
    assert markdown_text(MODEL + "|[x](javascript:y)") == (
        '\\<img src=x onerror="alert(1)"\\>\\\\x1b\\[32m\\|\\[x\\](javascript:y)'
    )
    assert markdown_code("a`b") == "``a`b``"


def test_a_hostile_task_id_paints_nothing_on_the_terminal(tmp_path: Path) -> None:
    _scored(tmp_path, {"task_id": f"x{FAKE}\n{FAKE}\rTSR 100.0%", "answer": {}})


def test_a_hostile_file_name_paints_nothing_on_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = MAZE / "BFS_hotel_requests_3.json"
    folder = maze_folder(
        tmp_path, monkeypatch, {f"BFS_hotel{FAKE}\nTSR 100.0%_3.json": good.read_bytes()}
    )
    result = CliRunner().invoke(import_group, ["sop-maze", str(folder)])
    assert result.exit_code == 0, result.output
    assert "\\x1b[1;32mTSR 100.0%" in result.output
    _no_fake_line(result.output)


def test_csv_cells_never_start_a_formula(tmp_path: Path) -> None:
    run = _scored(tmp_path)
    for out in (["--out", str(run / "x.csv")], ["--out", "-"]):
        result = CliRunner().invoke(main, ["export", str(run), "--format", "csv", *out])
        assert result.exit_code == 0, result.output
    text = (run / "x.csv").read_text()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["output.step"] == "'" + FORMULA
    for row in rows:
        assert not any(v.startswith(("=", "+", "@", "\t", "\r")) for v in row.values())


def test_the_dataset_card_and_the_report_show_a_model_name_as_text(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")  # the hf export's parquet
    run = _scored(tmp_path)
    runner = CliRunner()
    assert runner.invoke(main, ["export", str(run), "--format", "hf"]).exit_code == 0
    assert runner.invoke(main, ["report", str(run)]).exit_code == 0
    for page in (run / "export-hf" / "README.md", run / "report.md"):
        text = re.sub(r"(`+).*?\1", "", page.read_text())  # code spans show HTML as typed
        assert re.search(r"(?<!\\)<img", text) is None, page  # only an escaped \<img
        assert "\\<img" in text, page


def test_compare_shows_run_text_as_text(tmp_path: Path) -> None:
    run = _scored(tmp_path)
    result = CliRunner().invoke(main, ["compare", str(run), str(run)])
    assert result.exit_code == 0, result.output
    # the terminal's tables: the model's escape sequence shown as text, never played
    assert "\x1b" not in result.output and "\\x1b[32m" in result.output
    # the Markdown form (reports): HTML and links shown as text
    scores = scored(run, DATA_ROOT)
    markdown = to_markdown(compare(scores, scores), str(run), str(run))
    assert re.search(r"(?<!\\)<img", markdown) is None and "\\<img" in markdown

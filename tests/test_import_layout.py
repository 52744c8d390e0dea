"""Parsing the SOP-Bench layout: discovery, typed CSV values, and bad files as findings."""

from __future__ import annotations

from pathlib import Path

from sopgym.importers.csvfile import read_csv
from sopgym.importers.layout import CHECKOUT_DATA, find_benchmarks, read_benchmark
from sopgym.importers.tasks import build_tasks, columns_schema, input_columns_for
from tests.sopbench_helpers import EXPECTED_KINDS, FIXTURES


def test_discovers_a_folder_of_benchmarks_a_single_one_and_a_checkout(tmp_path: Path) -> None:
    assert [p.name for p in find_benchmarks(FIXTURES)] == sorted(EXPECTED_KINDS)
    assert find_benchmarks(FIXTURES / "clean") == [FIXTURES / "clean"]
    data = tmp_path / "SOP-Bench" / CHECKOUT_DATA
    data.mkdir(parents=True)
    for name in ("clean", "bad_json"):
        (data / name).symlink_to(FIXTURES / name, target_is_directory=True)
    assert [p.name for p in find_benchmarks(tmp_path / "SOP-Bench")] == ["bad_json", "clean"]


def test_csv_values_are_typed_like_pandas_and_literals_parsed(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "id,count,flag,tags,note,empty\n"
        "A1,3,True,\"['x', 'y']\",plain,\n"
        'A2,4,False,[],"with, comma",\n'
    )
    table = read_csv(path)
    assert table.rows[0] == {
        "id": "A1",
        "count": 3,
        "flag": True,
        "tags": ["x", "y"],
        "note": "plain",
        "empty": None,
    }
    assert table.rows[1]["tags"] == [] and table.rows[1]["note"] == "with, comma"


def test_malformed_rows_are_counted_not_shifted(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3,4,5\n\n6\n7,8\n")
    table = read_csv(path)
    assert sorted(table.rows) == [0, 3] and sorted(table.malformed) == [1, 2]
    assert table.rows[3] == {"a": 7, "b": 8}
    assert table.lines[1] == 3  # the file line, for the report


def test_tasks_carry_exactly_the_input_columns() -> None:
    bench = read_benchmark(FIXTURES / "clean")
    inputs = input_columns_for(bench)
    tasks, expected, unscorable = build_tasks(bench, inputs)
    assert [t.id for t in tasks][:2] == ["sopbench-clean-000", "sopbench-clean-001"]
    assert unscorable == {}
    assert tasks[0].domain == "sopbench/clean"
    assert tasks[0].inputs == {"order_id": "A-100", "customer_tier": "standard"}
    assert expected["sopbench-clean-000"] == {"refund_decision": "full"}
    schema = columns_schema(bench, inputs)
    assert schema["properties"]["order_id"] == {"type": "string"}


def test_rows_with_an_empty_expected_output_are_kept_and_flagged() -> None:
    bench = read_benchmark(FIXTURES / "empty_expected_outputs")
    tasks, expected, empty = build_tasks(bench, input_columns_for(bench))
    assert empty == {3: ["refund_decision"], 4: ["refund_decision"]}
    assert [t.id for t in tasks] == [f"sopbench-empty_expected_outputs-00{r}" for r in range(5)]
    assert expected["sopbench-empty_expected_outputs-003"] == {"refund_decision": None}


def test_bad_files_become_findings_and_never_raise() -> None:
    for name in ("bad_json", "bad_csv", "missing_columns", "invalid_tool_spec"):
        bench = read_benchmark(FIXTURES / name)
        assert {f.kind for f in bench.problems} == EXPECTED_KINDS[name], name
    bad_json = read_benchmark(FIXTURES / "bad_json")
    assert (
        "line 48" in bad_json.problems[0].message and bad_json.problems[0].file == "toolspecs.json"
    )
    bad_csv = read_benchmark(FIXTURES / "bad_csv")
    assert "line 4" in bad_csv.problems[0].message and bad_csv.table is None


def test_missing_files_and_repeated_json_keys(tmp_path: Path) -> None:
    folder = tmp_path / "partial"
    folder.mkdir()
    (folder / "metadata.json").write_text(
        '{"name": "x", "output_columns": ["o"], "output_columns": ["o"], "input_columns": ["i"]}'
    )
    bench = read_benchmark(folder)
    messages = [f.message for f in bench.problems]
    assert "sop.txt is missing" in messages and "tools.py is missing" in messages
    assert any(f.kind == "duplicate_keys" and "output_columns" in f.message for f in bench.problems)

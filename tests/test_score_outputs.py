"""``sopgym score``: responses produced elsewhere become a normal run folder, scored by the one
``score_episode``: answers as objects or text, tool-call trajectories, every problem counted
and listed, a gate nobody could judge never passed, and every reader of run folders reading it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient

from sopgym.cli import main
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.external import (
    READERS,
    JsonlReader,
    Response,
    Unreadable,
    register_reader,
)
from sopgym.evaluation.scoring import score_episode, summarize
from sopgym.viewer.app import create_app
from sopgym.viewer.catalog import RunCatalog
from tests.helpers import DATA_ROOT, domain_data

MAZE = "maze/telecom_requests"


def _write(path: Path, records: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else orjson.dumps(r).decode() for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def _score(tmp: Path, *args: str) -> Result:
    return CliRunner().invoke(
        main, ["score", *args, "--runs-dir", str(tmp / "runs"), "--data-root", str(DATA_ROOT)]
    )


def _rows(run: Path) -> dict[str, Any]:
    return {
        r["task_id"]: r
        for r in map(orjson.loads, (run / "results.jsonl").read_bytes().splitlines())
    }


def _maze_responses(tmp: Path) -> tuple[Path, list[str]]:
    data = domain_data(MAZE)
    ids = [t.id for t in data.tasks[:6]]
    gold = [data.gold[i].outputs for i in ids]
    wrong = {**gold[2], "step": "1.13" if gold[2]["step"] != "1.13" else "1.12"}
    records: list[Any] = [
        {"task_id": ids[0], "answer": gold[0], "usage": {"input_tokens": 7, "output_tokens": 3}},
        {
            "task_id": ids[1],
            "answer": "Looking at it.\nFinal Answer: " + orjson.dumps(gold[1]).decode(),
        },
        {"task_id": ids[2], "answer": wrong},
        {"task_id": ids[3], "answer": "I am not sure what to do."},
        {"task_id": ids[0], "answer": wrong},  # a second response for the same task
        {"task_id": "no-such-task", "answer": gold[0]},
        "{not json",
        {"task_id": ids[4], "answer": 42},
        # ids[5]: nobody answered it
    ]
    return _write(tmp / "responses.jsonl", records), ids


def test_answers_as_objects_and_text_are_scored_and_every_problem_is_counted(
    tmp_path: Path,
) -> None:
    path, ids = _maze_responses(tmp_path)
    result = _score(tmp_path, MAZE, "--responses", str(path), "--limit", "6", "--run-id", "r",
                    "--model", "vendor:m1")  # fmt: skip
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs" / "r"
    rows = _rows(run)
    assert set(rows) == {ids[0], ids[1], ids[2], ids[3]}
    assert rows[ids[0]]["score"]["success"] and rows[ids[1]]["score"]["success"]
    assert rows[ids[0]]["llm_calls"][0]["input_tokens"] == 7
    assert rows[ids[0]]["llm_calls"][0]["model"] == rows[ids[0]]["model"] == "vendor:m1"
    assert rows[ids[2]]["score"]["scores"]["answer_schema"]["value"] == 0.2  # valid but wrong
    assert rows[ids[2]]["score"]["errors"] == {"wrong_final": 1}
    unread = rows[ids[3]]
    assert unread["status"] == "failed" and not unread["score"]["completed"]
    assert unread["score"]["scores"]["answer_schema"]["value"] == 0.0
    summary = orjson.loads((run / "summary.json").read_bytes())
    tally = summary["responses"]
    assert (tally["read"], tally["scored"]) == (8, 4)
    assert tally["unknown"] == 1 and "no-such-task" in tally["unknown_listed"][0]
    assert tally["duplicates"] == 1 and tally["duplicates_listed"] == [
        f"responses.jsonl:5: {ids[0]}"
    ]
    assert tally["unreadable"] == 3  # a text with no answer, a line not JSON, a number
    assert tally["missing"] == 2  # ids[4] (its response unreadable) and ids[5]
    assert {f"{MAZE} {ids[4]}", f"{MAZE} {ids[5]}"} == set(tally["missing_listed"])
    # the missing tasks count as unanswered in the figures
    assert (summary["tasks"], summary["correct"], summary["completed"]) == (6, 2, 3)
    assert summary["missing"] == sorted([ids[4], ids[5]])
    config = orjson.loads((run / "config.json").read_bytes())
    assert config["agent"] == "external" and config["source"]["format"] == "jsonl"
    assert config["source"]["path"] == str(path.resolve())
    assert "responses: 8 read, 4 scored" in result.output


def test_a_scored_folder_reads_in_report_show_export_compare_and_the_viewer(tmp_path: Path) -> None:
    path, ids = _maze_responses(tmp_path)
    for run_id in ("a", "b"):
        assert _score(tmp_path, MAZE, "--responses", str(path), "--limit", "6",
                      "--run-id", run_id).exit_code == 0  # fmt: skip
    run = tmp_path / "runs" / "a"
    cli = CliRunner()
    report = cli.invoke(main, ["report", str(run), "--data-root", str(DATA_ROOT)])
    assert report.exit_code == 0, report.output
    assert ids[0] in (run / "report.md").read_text()
    show = cli.invoke(main, ["show", "a", ids[2], "--runs-dir", str(tmp_path / "runs")])
    assert show.exit_code == 0 and "valid but wrong" in show.output, show.output
    export = cli.invoke(main, ["export", "a", "--runs-dir", str(tmp_path / "runs"),
                               "--format", "jsonl"])  # fmt: skip
    assert export.exit_code == 0, export.output
    exported = (run / "export.jsonl").read_bytes().splitlines()
    assert len(exported) == 4
    compare = cli.invoke(main, ["compare", str(run), str(tmp_path / "runs" / "b"),
                                "--data-root", str(DATA_ROOT)])  # fmt: skip
    assert compare.exit_code == 0 and "broken in B (0)" in compare.output, compare.output
    client = TestClient(create_app(RunCatalog([tmp_path / "runs"])))
    page = client.get("/runs/a")
    assert page.status_code == 200 and ids[2] in page.text
    task = client.get("/runs/a/task", params={"domain": MAZE, "task": ids[2], "trial": 0})
    assert task.status_code == 200 and "valid but wrong" in task.text


def test_a_tool_trajectory_is_scored_and_a_state_nobody_saw_is_never_passed(tmp_path: Path) -> None:
    """patient_intake keeps no state: the gold calls and answer succeed. tod/next_action keeps
    one: the same right calls leave its final_state gate unjudged, the episode is no success,
    and the summary counts it as undecided with the bound had it passed."""
    records: list[dict[str, Any]] = []
    for name in ("patient_intake", "tod/next_action"):
        data = domain_data(name)
        task = data.tasks[0]
        gold = data.gold[task.id]
        calls = [{"name": c.name, "arguments": c.arguments} for c in gold.calls]
        records.append({"task_id": task.id, "domain": name, "answer": gold.outputs,
                        "calls": calls})  # fmt: skip
    path = _write(tmp_path / "tools.jsonl", records)
    result = _score(tmp_path, "patient_intake", "tod/next_action", "--responses", str(path),
                    "--limit", "1", "--run-id", "t")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = _rows(tmp_path / "runs" / "t")
    intake = rows[records[0]["task_id"]]["score"]
    assert intake["success"] and intake["tool_f1"] == 1.0 and not intake["unjudged"]
    tod = rows[records[1]["task_id"]]["score"]
    assert tod["scores"]["actions"]["value"] == 1.0
    assert tod["scores"]["final_state"]["value"] is None
    assert "not applicable" in tod["scores"]["final_state"]["explanation"]
    assert not tod["success"] and tod["undecided"] and tod["unjudged"] == ["final_state"]
    assert "wrong_final" not in tod["errors"]
    summary = orjson.loads((tmp_path / "runs" / "t" / "summary.json").read_bytes())
    assert (summary["correct"], summary["undecided"], summary["tsr"]) == (1, 1, 0.5)
    assert summary["tsr_if_undecided_pass"] == 1.0
    assert "undecided: 1 episode(s)" in result.output and "TSR 50.0%, 100.0%" in result.output


def test_an_unjudged_gate_with_a_failed_one_is_a_wrong_answer_not_undecided() -> None:
    data = domain_data("tod/next_action")
    task = data.tasks[0]
    gold = data.gold[task.id]
    trajectory = Trajectory(task.id, "x", calls=[], finished=True, outputs=gold.outputs,
                            state_observed=False)  # fmt: skip
    score = score_episode(data.domain, task, trajectory, gold)
    assert gold.calls and score.scores["actions"]["value"] == 0.0
    assert not score.success and not score.undecided
    # the answer is the gold's, the state unjudged: the calls (actions) are what failed
    assert score.errors.get("wrong_procedure") == 1 and "wrong_final" not in score.errors
    assert summarize([score])["undecided"] == 0
    observed = score_episode(data.domain, task, Trajectory(task.id, "x", finished=True,
                                                           outputs=gold.outputs), gold)  # fmt: skip
    assert observed.scores["final_state"]["value"] == 0.0  # a recorded episode with no state
    assert Trajectory.from_json(trajectory.to_json()).state_observed is False


def test_user_mistakes_are_one_line_and_write_nothing(tmp_path: Path) -> None:
    path, _ = _maze_responses(tmp_path)
    cases = [
        (["--responses", str(tmp_path / "nowhere.jsonl")], "cannot read"),
        (["--responses", str(path), "--format", "yaml"], "unknown format 'yaml'"),
        (["--responses", str(path), "--tasks", "nope"], "nope"),
    ]
    for args, said in cases:
        result = _score(tmp_path, MAZE, *args, "--run-id", "x")
        assert result.exit_code == 2 and said in result.output, result.output
        assert not (tmp_path / "runs" / "x" / "config.json").exists()
    assert _score(tmp_path, MAZE, "--responses", str(path), "--run-id", "x").exit_code == 0
    again = _score(tmp_path, MAZE, "--responses", str(path), "--run-id", "x")
    assert again.exit_code == 2 and "exists" in again.output


def test_a_format_is_one_more_reader(tmp_path: Path) -> None:
    """A reader registered by name is used by --format, its unreadable items listed."""
    data = domain_data(MAZE)
    task = data.tasks[0]

    class CsvAnswers:
        name = "test-csv"
        help = "task_id,step"

        def read(self, path: Path) -> Iterator[Response | Unreadable]:
            for number, line in enumerate(path.read_text().splitlines(), 1):
                task_id, _, step = line.partition(",")
                if not step:
                    yield Unreadable(f"{path.name}:{number}", "no step")
                    continue
                answer = {**data.gold[task_id].outputs, "step": step}
                yield Response(task_id, f"{path.name}:{number}", answer=answer)

    register_reader(CsvAnswers())
    try:
        path = tmp_path / "a.csv"
        path.write_text(f"{task.id},{data.gold[task.id].outputs['step']}\nx\n")
        result = _score(tmp_path, MAZE, "--responses", str(path), "--format", "test-csv",
                        "--tasks", task.id, "--run-id", "c")  # fmt: skip
        assert result.exit_code == 0, result.output
        summary = orjson.loads((tmp_path / "runs" / "c" / "summary.json").read_bytes())
        assert summary["correct"] == 1 and summary["responses"]["unreadable"] == 1
    finally:
        del READERS["test-csv"]


def test_trials_are_scored_each_and_the_missing_ones_listed(tmp_path: Path) -> None:
    data = domain_data(MAZE)
    first, second = (t.id for t in data.tasks[:2])
    gold = data.gold[first].outputs
    path = _write(tmp_path / "t.jsonl", [
        {"task_id": first, "trial": 0, "answer": gold},
        {"task_id": first, "trial": 1, "answer": gold},
        {"task_id": second, "trial": 0, "answer": data.gold[second].outputs},
    ])  # fmt: skip
    result = _score(tmp_path, MAZE, "--responses", str(path), "--limit", "2", "--run-id", "k")
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs" / "k"
    summary = orjson.loads((run / "summary.json").read_bytes())
    assert summary["tasks"] == 4 and summary["correct"] == 3
    assert summary["responses"]["missing_listed"] == [f"{MAZE} {second} trial 1"]
    assert orjson.loads((run / "config.json").read_bytes())["trials"] == 2
    assert summary["trials"]["trials"] == 2


@pytest.mark.parametrize("bad", [{"task_id": 3}, {"task_id": "a", "trial": -1},
                                 {"task_id": "a", "calls": [{"arguments": {}}]},
                                 {"task_id": "a", "calls": [{"name": "f", "status": "ok"}]},
                                 {"task_id": "a", "calls": [{"name": "f", "error_code": 3}]},
                                 {"task_id": "a", "messages": [{"content": "hi"}]},
                                 {"task_id": "a", "usage": [1]},
                                 {"task_id": "a", "answer": [1]}])  # fmt: skip
def test_a_record_of_the_wrong_shape_is_unreadable_with_why(bad: Any) -> None:
    found = JsonlReader().response(orjson.dumps(bad), "f:1")
    assert isinstance(found, Unreadable) and found.where == "f:1" and found.why


def test_a_folder_of_response_files_is_read_whole(tmp_path: Path) -> None:
    data = domain_data(MAZE)
    first, second = data.tasks[:2]
    folder = tmp_path / "responses"
    (folder / "part").mkdir(parents=True)
    _write(folder / "a.jsonl", [{"task_id": first.id, "answer": data.gold[first.id].outputs}])
    _write(folder / "part" / "b.jsonl", [{"task_id": second.id, "answer": {"step": "1.1"}}])
    (folder / "notes.txt").write_text("not responses")
    result = _score(tmp_path, MAZE, "--responses", str(folder), "--limit", "2", "--run-id", "f")
    assert result.exit_code == 0, result.output
    summary = orjson.loads((tmp_path / "runs" / "f" / "summary.json").read_bytes())
    assert (summary["responses"]["read"], summary["responses"]["scored"]) == (2, 2)
    assert summary["responses"]["missing"] == 0 and summary["correct"] == 1


def test_a_reader_may_match_records_by_their_place_in_a_domain(tmp_path: Path) -> None:
    """Formats that name no task id (SOP-Maze's published files) give the record's position
    in its domain; a record placed on a task outside the selection is listed, not scored."""
    data = domain_data(MAZE)

    class ByPosition:
        name = "test-position"
        help = "one answer object per line, in the domain's task order"

        def read(self, path: Path) -> Iterator[Response | Unreadable]:
            for number, line in enumerate(path.read_bytes().splitlines()):
                yield Response(f"record {number}", f"{path.name}:{number + 1}", domain=MAZE,
                               answer=orjson.loads(line), position=number)  # fmt: skip

    register_reader(ByPosition())
    try:
        answers = [data.gold[t.id].outputs for t in data.tasks[:2]]
        path = _write(tmp_path / "p.jsonl", [answers[1], answers[1], answers[0]])
        result = _score(tmp_path, MAZE, "--responses", str(path), "--format", "test-position",
                        "--limit", "2", "--run-id", "p")  # fmt: skip
        assert result.exit_code == 0, result.output
        rows = _rows(tmp_path / "runs" / "p")
        first, second = (t.id for t in data.tasks[:2])
        assert not rows[first]["score"]["success"] and rows[second]["score"]["success"]
        tally = orjson.loads((tmp_path / "runs" / "p" / "summary.json").read_bytes())["responses"]
        assert tally["not_selected"] == 1 and "record 2" in tally["not_selected_listed"][0]
    finally:
        del READERS["test-position"]

"""`sopgym import sop-maze` / `sopgym audit sop-maze` on our own fixtures in the published
shape: import and scoring (a verbatim-gold answer scores 1.0 on every scorable item; the
published scorer's leniencies), each audit finding triggered by its fixture, unscorable items
flagged and excluded, and bad input as one line naming file and record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sopgym.cli.imports import audit_group, import_group
from sopgym.core.answers import extract_final_answer
from sopgym.core.dataset import derive_gold
from sopgym.core.tables import Tables
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.breakdown import breakdown, tags
from sopgym.evaluation.scoring import score_episode
from sopgym.importers.resolve import load_imported
from sopgym.importers.sopmaze import domain_name, read_file
from tests.sopbench_helpers import isolated_home

FIXTURES = Path(__file__).parent / "fixtures" / "sopmaze"


def _grades(name: str, answer_of) -> dict[str, float | None]:
    domain = load_imported(name)
    data = domain.generate(domain.seed, FIXTURES)
    grades = {}
    for task in data.tasks:
        gold = derive_gold(domain, Tables({}), FIXTURES, task)
        run = Trajectory(task.id, "ep", [], True, answer_of(gold.outputs))
        grades[task.id] = score_episode(domain, task, run, gold).scores["answer_schema"]["value"]
    return grades


def test_fixtures_import_and_a_verbatim_gold_answer_scores_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolated_home(tmp_path, monkeypatch)
    result = CliRunner().invoke(import_group, ["sop-maze", str(FIXTURES / "good")])
    assert result.exit_code == 0, result.output
    assert "imported sopmaze/bfs_hotel_requests: 3 items, LRS" in result.output
    assert "imported sopmaze/dfs_visa_renewal: 2 items, HRS" in result.output
    again = CliRunner().invoke(import_group, ["sop-maze", str(FIXTURES / "good")])
    assert again.exit_code == 0, again.output  # a re-import is idempotent
    assert set(json.loads((home / "imports.json").read_text())["imports"]) == {
        "sopmaze/bfs_hotel_requests",
        "sopmaze/dfs_visa_renewal",
    }
    for name in ("sopmaze/bfs_hotel_requests", "sopmaze/dfs_visa_renewal"):
        assert set(_grades(name, dict).values()) == {1.0}
        assert set(_grades(name, lambda gold: {}).values()) == {0.0}  # required keys missing


def test_the_published_scorers_leniencies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home(tmp_path, monkeypatch)
    CliRunner().invoke(import_group, ["sop-maze", str(FIXTURES / "good")])

    def lenient(gold: dict) -> dict:
        answer = {**gold, "extra": "ignored: only the target's keys count"}
        if "documents" in answer:
            answer["documents"] = list(reversed(answer["documents"]))  # lists unordered
            answer["explanation"] = "free text, never compared"
        if "offer" in answer:
            answer["offer"] = {"kind": "  late   CHECKOUT ", "note": "another note"}
        if "reply" in answer and answer["step"] != "1":
            answer["reply"] = "different words"  # no_required_eval_acc_keys
        return answer

    assert set(_grades("sopmaze/dfs_visa_renewal", lenient).values()) == {1.0}
    grades = _grades("sopmaze/bfs_hotel_requests", lenient)
    assert set(grades.values()) == {1.0}
    wrong = _grades("sopmaze/bfs_hotel_requests", lambda gold: {**gold, "step": "3"})
    assert set(wrong.values()) == {0.2}  # valid against the schema, wrong
    # near-JSON repair happens where answers are read: single quotes, a trailing comma
    assert extract_final_answer("{'step': '2.1', 'reply': 'ok',}") == {"step": "2.1", "reply": "ok"}


def test_every_audit_finding_has_a_fixture_that_triggers_it(tmp_path: Path) -> None:
    out = tmp_path / "audit"
    result = CliRunner().invoke(
        audit_group, ["sop-maze", str(FIXTURES / "findings"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())["files"]
    assert {name: found["kinds"] for name, found in summary.items()} == {
        "dfs_target_invalid": ["target_invalid"],
        "bfs_empty_target": ["empty_expected_outputs"],
        "bfs_duplicates": ["duplicate_keys"],
        "dfs_unknown_keywords": ["unknown_schema_keywords"],
        "dfs_malformed": ["bad_file"],
        "bfs_count_off": ["record_count_mismatch"],
    }
    assert summary["dfs_target_invalid"]["scorable"] == 1
    assert summary["dfs_target_invalid"]["excluded"] == [
        {"record": 1, "reason": "target invalid in a compared key: $.next_step: 'three' is not "
         "of type 'integer' (a compared value)"}
    ]  # fmt: skip
    unknown = json.loads((out / "dfs_unknown_keywords.json").read_text())["findings"][0]
    assert unknown["details"] == ["propertyOrder", "unit"]  # our x- annotation is not one
    clean = CliRunner().invoke(audit_group, ["sop-maze", str(FIXTURES / "good"), "--out", str(out)])
    assert "[clean]" in clean.output and clean.output.count("[clean]") == 2


def test_unscorable_items_are_flagged_and_excluded_never_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    for name in ("DFS_target_invalid_2.json", "BFS_empty_target_2.json", "BFS_duplicates_3.json"):
        result = CliRunner().invoke(import_group, ["sop-maze", str(FIXTURES / "findings" / name)])
        assert result.exit_code == 0 and "unscorable: run sopgym audit" in result.output
    domain = load_imported("sopmaze/dfs_target_invalid")
    data = domain.generate(domain.seed, FIXTURES)
    rows: list[dict[str, Any]] = []
    for task in data.tasks:
        gold = derive_gold(domain, Tables({}), FIXTURES, task)
        score = score_episode(domain, task, Trajectory(task.id, "e", [], True, gold.outputs), gold)
        rows.append(
            {
                "task_id": task.id,
                "domain": domain.name,
                "score": score.to_json(),
                "tags": tags(gold),
            }
        )
    flagged = rows[1]["score"]["scores"]["answer_schema"]
    assert flagged["value"] is None and flagged["explanation"].startswith("unscorable: target")
    assert rows[0]["score"]["scores"]["answer_schema"]["value"] == 1.0
    found = breakdown(rows)
    assert found is not None and found["unscorable"] == [rows[1]["task_id"]]
    assert found["shape"] == {"HRS": {"tasks": 1, "mean": 1.0}}


@pytest.mark.parametrize(
    ("folder", "line"),
    [
        ("not_json", "BFS_not_json_1.json: not a JSON file"),
        ("no_target", "BFS_no_target_2.json: record 1: no 'target'"),
        ("bad_schema", "DFS_bad_schema_1.json: record 0: 'json_schema' does not compile"),
    ],
)
def test_bad_input_is_one_line_naming_file_and_record_and_nothing_is_written(
    folder: str, line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolated_home(tmp_path, monkeypatch)
    result = CliRunner().invoke(import_group, ["sop-maze", str(FIXTURES / "bad" / folder)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and result.output.startswith(f"error: {line}")
    assert not (home / "imports.json").exists()


def test_names_are_ascii_and_marked_files_carry_their_shape() -> None:
    published = Path("BFS_酒店预订_120.json")
    assert domain_name(published).startswith("sopmaze/bfs_") and domain_name(published).isascii()
    assert domain_name(Path("DFS_visa_renewal_2.json")) == "sopmaze/dfs_visa_renewal"
    found = read_file(FIXTURES / "good" / "BFS_hotel_requests_3.json")
    assert found.shape == "LRS" and len(found.scorable) == 3

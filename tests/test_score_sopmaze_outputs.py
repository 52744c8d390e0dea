"""``sopgym score`` on SOP-Maze's published model outputs (``data_with_model_response/``: the
raw-data records, each with one model's ``model_response``), matched to the imported
``sopmaze/*`` domains by file name and record position, graded item by item as the official
scorer grades them, with every place where our grade differs listed (docs/sop-maze-import.md)
and pinned here, one test per difference.

The official rule is written out below (:func:`official_grade`) from its published
description, independently of our scorers: the reply read by ``json-repair`` exactly as the
published ``txt_to_json`` reads it (``repair_json(text, ensure_ascii=False)``, then
``json_repair.loads`` of that), validated whole against the record's schema by
``jsonschema.validate``'s rule (the draft the schema names, else the latest; 0 when invalid or
when the reading raises), then only the target's keys
compared, at every depth (a key of ``no_required_eval_acc_keys`` skipped), strings after
lower-casing and collapsing whitespace, lists as the set of their items' JSON text (same
length required; skipped keys dropped from each item's top level), anything else with
``==``: 1.0 when nothing differs, 0.2 otherwise.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import json_repair
import orjson
import pytest
from click.testing import CliRunner, Result
from jsonschema.validators import validator_for

from sopgym.cli import main
from sopgym.cli.imports import import_group
from sopgym.core.import_index import HOME_ENV
from sopgym.evaluation.external import detect_format, text_protocol
from sopgym.importers.maze_names import domain_name

FIXTURES = Path(__file__).parent / "fixtures" / "sopmaze"
RAW = FIXTURES / "raw_data"
OUTPUTS = FIXTURES / "data_with_model_response"
TWIN = "熟_【已清洗】👋✅动线机器人2.json"  # the second L3 file: no raw-data counterpart


# ---- the official rule, written out independently ----
def _text(value: str) -> str:
    return re.sub(r"\s+", " ", value.strip()).lower()


def _dropped(item: Any, skipped: set[str]) -> Any:
    return {k: v for k, v in item.items() if k not in skipped} if isinstance(item, dict) else item


def _canonical(item: Any) -> Any:
    if isinstance(item, dict):
        return {k: _canonical(v) for k, v in item.items()}
    if isinstance(item, list):
        items = [_canonical(v) for v in item]
        return sorted(items, key=lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True))
    return item


def _same(reply: Any, target: Any, skipped: set[str]) -> bool:
    if isinstance(target, dict) and isinstance(reply, dict):
        return all(
            key in reply and _same(reply[key], value, skipped)
            for key, value in target.items()
            if key not in skipped
        )
    if isinstance(target, list) and isinstance(reply, list):
        if len(reply) != len(target):
            return False

        def texts(items: list[Any]) -> set[str]:
            return {
                json.dumps(_canonical(_dropped(i, skipped)), ensure_ascii=False, sort_keys=True)
                for i in items
            }

        return texts(reply) == texts(target)
    if isinstance(target, str) and isinstance(reply, str):
        return _text(reply) == _text(target)
    return bool(reply == target)


def official_grade(record: dict[str, Any]) -> float:
    """The official scorer's grade of ``record["model_response"]`` (1.0 / 0.2 / 0)."""
    try:
        text = json_repair.repair_json(record["model_response"], ensure_ascii=False)
        reply = json_repair.loads(text)
    except Exception:  # the rule: a reply the repairer cannot read is 0
        return 0.0
    schema = record["json_schema"]
    if not validator_for(schema)(schema).is_valid(reply):
        return 0.0
    skipped = set(record.get("no_required_eval_acc_keys") or [])
    return 1.0 if _same(reply, record["target"], skipped) else 0.2


# ---- helpers ----
@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    monkeypatch.setenv("SOPGYM_DATA", str(tmp_path / "data"))
    return tmp_path


def _import(folder: Path) -> None:
    result = CliRunner().invoke(import_group, ["sop-maze", str(folder)])
    assert result.exit_code == 0, result.output


def _score(tmp: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["score", *args, "--runs-dir", str(tmp / "runs")])


def _run(tmp: Path, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    run = tmp / "runs" / run_id
    rows = {
        r["task_id"]: r
        for r in map(orjson.loads, (run / "results.jsonl").read_bytes().splitlines())
    }
    return rows, orjson.loads((run / "summary.json").read_bytes())


def _items(folder: Path) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    for file in sorted(folder.glob("*.json")):
        for index, record in enumerate(json.loads(file.read_bytes())):
            yield file, index, record


def _task_id(file: Path, index: int) -> str:
    return f"{domain_name(file).removeprefix('sopmaze/')}-{index:04d}"


def _grade(row: dict[str, Any], scorer: str = "answer_schema") -> float | None:
    """A row's grade by ``scorer``: ours (``answer_schema``) unless named."""
    value = row["score"]["scores"][scorer]["value"]
    return value if value is None else float(value)


# ---- acceptance ----
def test_published_outputs_get_the_official_grade_item_by_item(home: Path) -> None:
    """The fixtures are the raw-data records plus one model's reply each (fenced JSON, prose
    around it, single quotes, a trailing comma, a truncated end, reasoning first, no JSON,
    an empty reply, wrong enum values and types, a too long never-compared reply, spaces
    around compared text, a list in another order): the folder is recognised by its
    ``model_response`` and every item gets the official grade, but for the items the import
    found unscorable, which are n/a (a listed difference)."""
    _import(RAW)
    assert detect_format(OUTPUTS) == "sopmaze"
    result = _score(home, "sopmaze", "--responses", str(OUTPUTS), "--run-id", "published")
    assert result.exit_code == 0, result.output
    rows, summary = _run(home, "published")
    compared, unscorable = [], []
    for file, index, record in _items(OUTPUTS):
        if file.name == TWIN:
            continue
        row = rows[_task_id(file, index)]
        official = official_grade(record)
        # the official grade beside ours, on every item (the unscorable one included)
        assert row["score"]["scores"]["answer_official"]["value"] == official, (file.name, index)
        ours = _grade(row)
        if ours is None:  # difference: unscorable items are excluded, not graded
            assert row["score"]["scores"]["answer_schema"]["explanation"].startswith("unscorable")
            unscorable.append((file.name, index, official))
            continue
        assert ours == official, (file.name, index, record["model_response"], ours, official)
        compared.append(ours)
    assert sorted(set(compared)) == [0.0, 0.2, 1.0]  # every grade occurs
    assert len(compared) == 22 and [u[:2] for u in unscorable] == [
        ("熟_【已清洗】👋 ✅ 景区票务处理专员v1-2.json", 1)
    ]
    maze = summary["paper"]["sop_maze"]
    graded = [official_grade(r) for f, _, r in _items(OUTPUTS) if f.name != TWIN]
    assert maze["official_tally"] == {
        label: sum(g == value for g in graded) for label, value in (("1.0", 1.0), ("0.2", 0.2),
                                                                     ("0", 0.0))
    }  # fmt: skip
    assert sum(maze["official_tally"].values()) == 23  # every item, the unscorable one too
    assert abs(maze["overall_official"] - 100 * sum(graded) / len(graded)) < 1e-9
    tally = summary["responses"]
    assert (tally["read"], tally["scored"], tally["unknown"], tally["missing"]) == (25, 23, 2, 0)
    assert all(TWIN in item for item in tally["unknown_listed"])
    config = orjson.loads((home / "runs" / "published" / "config.json").read_bytes())
    assert config["source"]["format"] == "sopmaze"


def test_a_file_or_record_with_no_imported_counterpart_is_listed_not_scored(
    home: Path,
) -> None:
    """Records are matched by file name and position, and only scored against the same
    record: another record at that place, a record past the imported file's end, a file no
    domain came from, and a record with no ``model_response`` are all listed."""
    _import(RAW)
    outputs = home / "outputs"
    shutil.copytree(OUTPUTS, outputs)
    changed = outputs / "熟_【已清洗】👋✅ 意图识别分析师2.json"
    records = json.loads(changed.read_bytes())
    records[0]["input"] += "（另一版）"  # not the imported record 0
    records.append({**records[1]})  # record 2: the imported file has two
    del records[1]["model_response"]
    changed.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    result = _score(home, "sopmaze", "--responses", str(outputs), "--format", "sopmaze",
                    "--run-id", "partial")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows, summary = _run(home, "partial")
    tally = summary["responses"]
    assert (tally["unknown"], tally["unreadable"], tally["missing"]) == (4, 3, 2)
    listed = "\n".join(tally["unknown_listed"])
    assert f"{changed.name} record 0: no counterpart" in listed
    assert f"{changed.name} record 2: no counterpart" in listed
    assert any("record 1: not a record with 'model_response'" in u
               for u in tally["unreadable_listed"])  # fmt: skip
    l6 = "sopmaze/l6_intention_recognition_analysis"
    assert sorted(tally["missing_listed"]) == [f"{l6} {_task_id(changed, i)}" for i in (0, 1)]
    assert _task_id(changed, 0) not in rows


def test_files_of_domains_outside_the_selection_are_listed_as_not_selected(home: Path) -> None:
    _import(RAW)
    result = _score(home, "sopmaze/h1_*", "--responses", str(OUTPUTS), "--run-id", "h1")
    assert result.exit_code == 0, result.output
    rows, summary = _run(home, "h1")
    assert len(rows) == 3 and all(r["domain"].startswith("sopmaze/h1_") for r in rows.values())
    tally = summary["responses"]
    assert (tally["scored"], tally["not_selected"], tally["unknown"]) == (3, 20, 2)


def test_a_single_published_file_scores_and_our_jsonl_is_not_taken_for_it(home: Path) -> None:
    _import(RAW)
    file = OUTPUTS / "熟_【已清洗】👋✅ DFS客服回访场景2.json"
    assert detect_format(file) == "sopmaze"
    result = _score(home, "sopmaze", "--responses", str(file), "--run-id", "one")
    assert result.exit_code == 0, result.output
    rows, _ = _run(home, "one")
    assert [_grade(rows[_task_id(file, i)]) for i in (0, 1)] == [1.0, 0.0]  # truncated; prose
    jsonl = home / "answers.jsonl"
    jsonl.write_text('{"task_id": "x", "answer": {}}\n')
    assert detect_format(jsonl) == "jsonl" and detect_format(RAW) == "jsonl"


def test_sopmaze_text_answers_in_our_jsonl_are_read_with_the_official_leniency(
    home: Path,
) -> None:
    """The family's text protocol is ``parse_reply``: a truncated reply is repaired, as the
    official scorer repairs it, whichever format carried it."""
    _import(RAW)
    assert text_protocol("sopmaze/l3_flow_line_track")('{"类别": "咨询"', {}) == {"类别": "咨询"}
    assert text_protocol("maze/telecom_requests") is not text_protocol("sopmaze/x")
    answers = home / "answers.jsonl"
    answer = {"task_id": "l3_flow_line_track-0000", "answer": '答：{"类别": "咨询"'}
    answers.write_text(json.dumps(answer, ensure_ascii=False) + "\n", encoding="utf-8")
    result = _score(home, "sopmaze/l3_*", "--responses", str(answers), "--run-id", "j")
    assert result.exit_code == 0, result.output
    rows, _ = _run(home, "j")
    assert _grade(rows["l3_flow_line_track-0000"]) == 1.0


# ---- the differences, one test each (docs/sop-maze-import.md lists them) ----
_CATEGORY = {"type": "string", "enum": ["咨询", "投诉", "其他"]}
DIFFERENCES: dict[str, tuple[dict[str, Any], str, float, float]] = {
    # name: (record without model_response, model_response, our grade, official grade)
    "reply_with_several_objects": (
        {"json_schema": {"type": "object", "properties": {"类别": _CATEGORY}},
         "target": {"类别": "咨询"}},
        '[{"类别": "咨询"}]',
        1.0, 0.0,
    ),
    "extra_key_in_a_nested_object": (
        {"json_schema": {"type": "object", "properties": {"订单": {"type": "object"}}},
         "target": {"订单": {"类型": "团购"}}},
        '{"订单": {"类型": "团购", "备注": "加急"}}',
        0.2, 1.0,
    ),
    "key_case_in_a_nested_object": (
        {"json_schema": {"type": "object", "properties": {"订单": {"type": "object"}}},
         "target": {"订单": {"Type": "团购"}}},
        '{"订单": {"type": "团购"}}',
        1.0, 0.2,
    ),
    "strings_inside_lists_normalised": (
        {"json_schema": {"type": "object",
                         "properties": {"实体": {"type": "array", "items": {"type": "string"}}}},
         "target": {"实体": ["iPhone 15", "杭州"]}},
        '{"实体": ["IPHONE  15", "杭州"]}',
        1.0, 0.2,
    ),
    "lists_as_multisets_not_sets": (
        {"json_schema": {"type": "object",
                         "properties": {"实体": {"type": "array", "items": {"type": "string"}}}},
         "target": {"实体": ["小王", "小王", "杭州"]}},
        '{"实体": ["小王", "杭州", "杭州"]}',
        0.2, 1.0,
    ),
    "numbers_in_text_compared_by_value": (
        {"json_schema": {"type": "object", "properties": {"金额": {"type": "string"}}},
         "target": {"金额": "1,200"}},
        '{"金额": "1200"}',
        1.0, 0.2,
    ),
    "case_folded_not_lower_cased": (
        {"json_schema": {"type": "object", "properties": {"街道": {"type": "string"}}},
         "target": {"街道": "Hauptstraße"}},
        '{"街道": "HAUPTSTRASSE"}',
        1.0, 0.2,
    ),
    "skipped_keys_inside_list_items_at_any_depth": (
        {"json_schema": {"type": "object", "properties": {"明细": {"type": "array"}}},
         "target": {"明细": [{"名称": "套餐A", "详情": {"理由": "便宜"}}]},
         "no_required_eval_acc_keys": ["理由"]},
        '{"明细": [{"名称": "套餐A", "详情": {"理由": "好吃"}}]}',
        1.0, 0.2,
    ),
    "unscorable_items_excluded": (
        {"json_schema": {"type": "object", "properties": {"类别": _CATEGORY}},
         "target": {}},
        '{"类别": "投诉"}',
        -1.0, 1.0,  # ours: n/a (None), shown as -1 here
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def differences(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[float | None, float | None]]:
    """Our grade and our official one of each difference's reply: one imported file per
    difference, scored once."""
    tmp = tmp_path_factory.mktemp("differences")
    raw, outputs = tmp / "raw", tmp / "outputs"
    raw.mkdir()
    outputs.mkdir()
    files = {}
    for name, (record, reply, _, _) in DIFFERENCES.items():
        full = {"input": f"## SOP\n{name}", "no_required_eval_acc_keys": None, **record}
        file_name = f"熟_【已清洗】👋✅ 差异_{name}_1.json"
        (raw / file_name).write_text(json.dumps([full], ensure_ascii=False), encoding="utf-8")
        published = [{**full, "model_response": reply}]
        (outputs / file_name).write_text(json.dumps(published, ensure_ascii=False), "utf-8")
        files[name] = raw / file_name
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(HOME_ENV, str(tmp / "home"))
        patch.setenv("SOPGYM_DATA", str(tmp / "data"))
        _import(raw)
        result = _score(tmp, "sopmaze", "--responses", str(outputs), "--run-id", "d")
        assert result.exit_code == 0, result.output
    rows, _ = _run(tmp, "d")
    return {
        name: (_grade(rows[_task_id(file, 0)]), _grade(rows[_task_id(file, 0)], "answer_official"))
        for name, file in files.items()
    }


@pytest.mark.parametrize("name", sorted(DIFFERENCES))
def test_each_difference_from_the_official_grade_is_as_documented(
    name: str, differences: dict[str, tuple[float | None, float | None]]
) -> None:
    """Our strict grade differs from the official one as listed; our official grade
    (``answer_official``) does not: it reads and compares as the published scorer does."""
    record, reply, ours, official = DIFFERENCES[name]
    full = {"no_required_eval_acc_keys": None, **record, "model_response": reply}
    assert official_grade(full) == official
    strict, ours_official = differences[name]
    assert strict == (None if ours < 0 else ours)
    assert strict != official
    assert ours_official == official
    doc = (Path(__file__).parents[1] / "docs" / "sop-maze-import.md").read_text()
    assert f"`{name}`" in doc  # listed in the docs by this name


def test_the_published_outputs_folder_imported_itself_scores_both_l3_files(home: Path) -> None:
    """``data_with_model_response/`` imports the same way (its two L3 files become two domains,
    each keeping a digest of its file name): every one of its records then has a counterpart."""
    _import(OUTPUTS)
    result = _score(home, "sopmaze", "--responses", str(OUTPUTS), "--run-id", "self")
    assert result.exit_code == 0, result.output
    rows, summary = _run(home, "self")
    tally = summary["responses"]
    assert (tally["read"], tally["scored"], tally["unknown"], tally["missing"]) == (25, 25, 0, 0)
    l3 = sorted({r["domain"] for r in rows.values() if r["domain"].startswith("sopmaze/l3_")})
    assert len(l3) == 2 and all(
        re.fullmatch(r"sopmaze/l3_flow_line_track_[0-9a-f]{8}", d) for d in l3
    )


# ---- how a reply is read: ours beside the official reading, on a corpus of tricky replies ----
_RIGHT = '{"类别": "咨询", "说明": "查询订单"}'
_TARGET = {"类别": "咨询", "说明": "查询订单"}
_SCHEMA = {"type": "object", "required": ["类别", "说明"],
           "properties": {"类别": _CATEGORY, "说明": {"type": "string"}}}  # fmt: skip
READINGS: dict[str, str] = {
    # name: the reply (the target is _TARGET throughout)
    "plain": '{"类别": "咨询", "说明": "查询订单"}',
    "fenced": '```json\n{"类别": "咨询", "说明": "查询订单"}\n```',
    "fenced_then_prose": '```json\n{"类别": "咨询", "说明": "查询订单"}\n```\n以上为结果。',
    "prose_then_object": '分析：用户在问订单。\n答案：{"类别": "咨询", "说明": "查询订单"}',
    "trailing_text": '{"类别": "咨询", "说明": "查询订单"} 希望有帮助',
    "single_quotes_trailing_comma": "{'类别': '咨询', '说明': '查询订单',}",
    "truncated": '{"类别": "咨询", "说明": "查询订单',
    "comment_inside": '{"类别": "咨询", // 类别\n "说明": "查询订单"}',
    "the_same_object_twice": f"{_RIGHT}\n{_RIGHT}",
    "two_objects_in_prose": f'初判：{_RIGHT}\n复核：{{"类别": "投诉", "说明": "催单"}}',
    "two_fenced_blocks": f'```json\n{_RIGHT}\n```\n```json\n{{"类别": "其他", "说明": "无"}}\n```',
    "two_objects_other_keys": f'{_RIGHT}\n备注：{{"备注": "无"}}',
    "a_list_of_one_object": '[{"类别": "咨询", "说明": "查询订单"}]',
    "wrong_value": '{"类别": "投诉", "说明": "查询订单"}',
    "missing_key": '{"类别": "咨询"}',
    "no_json": "无法判断",
    "empty": "",
    "a_bare_number": "42",
}  # fmt: skip
# Where our strict reading (json-repair's value, or the first object of the list it makes) and
# the official one (that value whole) grade apart: (ours, official). json-repair makes a list of
# several objects with different keys (invalid against an object schema, so 0 officially) but
# keeps only the *last* of several objects that share their keys (a model's second try), for
# both readings alike: "two_objects_in_prose" and "two_fenced_blocks" are graded on it, 0.2 both.
READ_APART = {
    "two_objects_other_keys": (1.0, 0.0),
    "a_list_of_one_object": (1.0, 0.0),
}


def test_replies_are_graded_officially_as_the_published_reading_reads_them(home: Path) -> None:
    """Each reply of the corpus is graded by ``answer_official`` exactly as the published scorer
    grades it (the rule written out above, on the same ``json-repair`` reading); our strict
    grade takes the first object of a list instead, so it differs where the reading is a list
    (several objects with different keys, or a list of one), as :data:`READ_APART` pins."""
    raw, outputs = home / "readings_raw", home / "readings_out"
    raw.mkdir()
    outputs.mkdir()
    names = list(READINGS)
    records = [{"input": f"## SOP\n判断类别（{name}）", "json_schema": _SCHEMA, "target": _TARGET,
                "no_required_eval_acc_keys": None} for name in names]  # fmt: skip
    file_name = f"熟_【已清洗】👋✅ 读法_replies_{len(names)}.json"
    (raw / file_name).write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    published = [{**r, "model_response": READINGS[n]} for r, n in zip(records, names, strict=True)]
    (outputs / file_name).write_text(json.dumps(published, ensure_ascii=False), "utf-8")
    _import(raw)
    result = _score(home, "sopmaze", "--responses", str(outputs), "--run-id", "readings")
    assert result.exit_code == 0, result.output
    rows, summary = _run(home, "readings")
    apart = {}
    for index, (name, record) in enumerate(zip(names, published, strict=True)):
        row = rows[_task_id(raw / file_name, index)]
        official = official_grade(record)
        assert _grade(row, "answer_official") == official, name
        if _grade(row) != official:
            apart[name] = (_grade(row), official)
    assert apart == READ_APART
    graded = [official_grade(r) for r in published]
    assert summary["paper"]["sop_maze"]["official_tally"] == {
        "1.0": graded.count(1.0), "0.2": graded.count(0.2), "0": graded.count(0.0)
    }  # fmt: skip

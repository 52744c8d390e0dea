"""SOP-Maze's official grade beside our strict one, item by item (issue 43, point 1): every
item gets the official grade (unscorable ones included), by the published rule; and a
required key the target lacks and never names is mended, not a reason to leave the item out.

Fixtures in the published raw-data shape (our own content): ``uncompared_key/`` holds an L1
file whose targets lack the required key ``享`` (nested in one record, at the top in the
other), ``findings/DFS_target_invalid_2.json`` a target that breaks its own schema in a
compared key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sopgym.core.dataset import derive_gold
from sopgym.core.tables import Tables
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation import maze_protocol
from sopgym.evaluation.maze_protocol import NO_READING, official_reading
from sopgym.evaluation.scorers.maze_official import official_match
from sopgym.evaluation.scoring import score_episode
from sopgym.importers.sopmaze import build_domain, read_file

FIXTURES = Path(__file__).parent / "fixtures" / "sopmaze"
L1 = FIXTURES / "uncompared_key" / "熟_【已清洗】👋✅ 酒店套餐要素提取专家v1-2.json"
SELF_INVALID = FIXTURES / "findings" / "DFS_target_invalid_2.json"


def _grades(path: Path, answers: list[Any]) -> list[tuple[float | None, float | None]]:
    """(ours, official) for each record of ``path`` answered with ``answers``."""
    domain = build_domain(read_file(path))
    grades = []
    for task, answer in zip(domain.generate(domain.seed, path.parent).tasks, answers, strict=True):
        gold = derive_gold(domain, Tables({}), path.parent, task)
        scores = score_episode(domain, task, Trajectory(task.id, "e", [], True, answer), gold)
        grades.append((scores.scores["answer_schema"]["value"],
                       scores.scores["answer_official"]["value"]))  # fmt: skip
    return grades


def test_a_required_key_the_target_never_names_is_mended_and_scored() -> None:
    """``享`` is required by the schema, absent from the target and compared nowhere (only the
    target's keys are): the item is scorable, the key declared never compared, so a correct
    answer (which must hold ``享`` to be valid) earns 1.0 whatever it puts there."""
    found = read_file(L1)
    assert [r.unscorable for r in found.records] == [None, None]
    assert all("享" in r.free_keys and r.uncompared == ["享"] for r in found.records)
    right: list[dict[str, Any]] = [
        {"酒店名称": "湖畔酒店", "套餐": {"住": "豪华大床房一晚", "食": ["双早"], "享": []},
         "说明": "无"},
        {"酒店名称": "山居民宿", "住": "山景房两晚", "享": "无", "说明": "无"},
    ]  # fmt: skip
    assert _grades(L1, right) == [(1.0, 1.0), (1.0, 1.0)]
    wrong = [{**right[0], "酒店名称": "湖景酒店"}, {**right[1], "住": "山景房一晚"}]
    assert _grades(L1, wrong) == [(0.2, 0.2), (0.2, 0.2)]


def test_the_published_target_is_graded_against_its_own_schema_officially() -> None:
    """The official grade compares with the target as published and validates the answer: an
    answer equal to a target that breaks its schema earns 0 there; ours calls such an item
    unscorable (n/a) and still grades none of it, while the official grade gives every item
    one: 0.2 for a valid answer that differs, 0 for an invalid one."""
    published = read_file(L1)
    targets = [r.target for r in published.records]
    assert _grades(L1, targets) == [(0.0, 0.0), (0.0, 0.0)]  # invalid: 享 is required
    invalid_item = read_file(SELF_INVALID)
    assert invalid_item.records[1].unscorable is not None
    own_target = invalid_item.records[1].target
    valid_other = {"next_step": 4, "documents": ["photo", "form"]}
    assert _grades(SELF_INVALID, [invalid_item.records[0].target, own_target]) == [
        (1.0, 1.0),
        (None, 0.0),  # unscorable for us; officially the self-invalid target earns 0
    ]
    assert _grades(SELF_INVALID, [valid_other, valid_other])[1] == (None, 0.2)


def test_the_official_comparison_differs_from_ours_where_documented() -> None:
    """Only the target's keys at every depth; strings lower-cased with spaces collapsed (no
    number reading, no case folding); lists as sets of their items' JSON text."""
    skipped = frozenset({"理由"})
    # a key the answer adds in a nested object: not compared officially (ours: 0.2)
    assert official_match({"订单": {"类型": "团购", "备注": "加急"}}, {"订单": {"类型": "团购"}},
                          skipped)  # fmt: skip
    assert not official_match({"数": "1200"}, {"数": "1,200"}, skipped)  # ours: equal numbers
    assert not official_match({"城": "HAUPTSTRASSE"}, {"城": "Hauptstraße"}, skipped)
    assert official_match({"名": ["小王", "杭州", "杭州"]}, {"名": ["小王", "小王", "杭州"]},
                          skipped)  # sets of the same length  # fmt: skip
    assert not official_match({"名": ["IPHONE 15"]}, {"名": ["iPhone 15"]}, skipped)
    assert official_match({"X": " A  b "}, {"X": "a B"}, skipped)
    assert official_match({"理由": 1, "a": 1.0}, {"理由": "x", "a": True}, skipped)


def test_the_replys_text_travels_with_the_trajectory_only_when_there_is_one() -> None:
    """``sopgym score`` keeps a text answer's reply on the trajectory (the official grade reads
    it there); an answer given as an object writes no ``reply`` key, so old run folders and
    their literal records are unchanged."""
    with_text = Trajectory("t", "e", [], True, {"a": 1}, reply='{"a": 1} {"b": 2}')
    assert Trajectory.from_json(with_text.to_json()).reply == '{"a": 1} {"b": 2}'
    assert "reply" not in Trajectory("t", "e", [], True, {"a": 1}).to_json()


def test_a_reply_the_official_reading_cannot_read_is_graded_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The published scorer catches any error of its reading and grades the reply 0; so does
    ours, whatever json-repair raises."""

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RecursionError("too deep")

    monkeypatch.setattr(maze_protocol.json_repair, "repair_json", broken)
    assert official_reading('{"a": 1}') is NO_READING
    domain = build_domain(read_file(L1))
    task = domain.generate(domain.seed, L1.parent).tasks[0]
    gold = derive_gold(domain, Tables({}), L1.parent, task)
    reply = '{"酒店名称": "湖畔酒店"}'
    scores = score_episode(domain, task, Trajectory(task.id, "e", [], True, {}, reply=reply), gold)
    assert scores.scores["answer_official"]["value"] == 0.0

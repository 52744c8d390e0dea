"""SOP-Maze scoring: free-text keys are never compared, a task's own schema (imports) wins over
the domain's, the breakdown by scenario / shape / source with the SOP-Maze score, and the
scripted model's mistakes graded 0.2 and 0 exactly as its injection log says."""

from __future__ import annotations

from pathlib import Path

import orjson

from sopgym.agents.prompts import case_message, tool_free_prompt
from sopgym.core.answers import extract_final_answer
from sopgym.core.tasks import Gold
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.breakdown import breakdown, tags
from sopgym.evaluation.scorers import Case, answer_schema, output_fields
from sopgym.evaluation.scorers.base import TASK_SCHEMA
from sopgym.evaluation.scorers.fields import free_text_keys
from sopgym.evaluation.scoring import score_episode
from sopgym.services.model.engine import ScriptedModel
from sopgym.services.model.profiles import parse_profile
from tests.helpers import domain_data
from tests.scoring_helpers import pack, task, trajectory

SCHEMA = {
    "type": "object",
    "properties": {
        "step": {"enum": ["1", "2"]},
        "reply": {"type": "string", "x-free-text": True},
        "detail": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "note": {"x-free-text": True}},
        },
    },
    "required": ["step", "reply"],
}
GOLD = {"step": "1", "reply": "Hello there", "detail": {"code": "A", "note": "x"}}


def _case(answer: dict | None, schema: dict = SCHEMA, decisions: dict | None = None) -> Case:
    gold = Gold("t", [], decisions or {}, GOLD)
    return Case(task("json_answer"), trajectory(outputs=answer), gold, pack(schema))


def test_free_text_keys_are_never_compared_at_any_depth() -> None:
    assert free_text_keys(SCHEMA) == {"reply", "note"}
    same = {"step": "1", "reply": "something else", "detail": {"code": " a ", "note": "y"}}
    assert answer_schema()(_case(same)).value == 1.0
    assert output_fields()(_case(same)).value == 1.0
    wrong = {**same, "detail": {"code": "B", "note": "x"}}
    assert answer_schema()(_case(wrong)).value == 0.2
    assert answer_schema()(_case({"step": "3", "reply": ""})).value == 0.0


def test_a_task_schema_in_the_gold_wins_over_the_domains() -> None:
    own = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
           "properties": {"step": {"enum": ["1"]}}, "required": ["step", "extra"]}  # fmt: skip
    answer = {"step": "1", "reply": "r", "detail": {"code": "A"}}
    assert answer_schema()(_case(answer)).value == 1.0
    assert answer_schema()(_case(answer, decisions={TASK_SCHEMA: own})).value == 0.0
    unknown_draft = {**own, "$schema": "http://example.com/own-meta", "required": ["step"]}
    graded = answer_schema()(_case(answer, decisions={TASK_SCHEMA: unknown_draft}))
    assert graded.value == 0.2  # validated (as 2020-12); its reply is not declared free text


def _row(task_id: str, domain: str, value: float | None, decisions: dict) -> dict:
    scores = {} if value is None else {"answer_schema": {"value": value}}
    gold = Gold(task_id, [], decisions, {})
    return {"task_id": task_id, "domain": domain, "score": {"scores": scores}, "tags": tags(gold)}


def test_the_breakdown_and_the_sop_maze_score() -> None:
    rows = [
        _row("a", "maze/w", 1.0, {"shape": "LRS", "sources": ["route"]}),
        _row("b", "maze/w", 0.2, {"shape": "LRS", "sources": ["route", "conversation"]}),
        _row("c", "maze/w", 1.0, {"shape": "LRS", "sources": []}),
        _row("d", "maze/d", 0.0, {"shape": "HRS", "sources": ["calculation"]}),
        _row("e", "maze/d", None, {"shape": "HRS", "sources": ["calculation"]}),  # no answer
        _row("f", "sopmaze/x", 1.0, {"shape": "HRS", "unscorable": "target invalid"}),
        _row("g", "patient_intake", 1.0, {}),
    ]
    found = breakdown(rows)
    assert found is not None
    assert found["shape"]["LRS"] == {"tasks": 3, "mean": 2.2 / 3}
    assert found["shape"]["HRS"] == {"tasks": 2, "mean": 0.0}
    assert found["sop_maze_score"] == (2.2 / 3 + 0.0) / 2  # each shape weighs the same
    assert found["source"]["route"]["tasks"] == 2 and found["source"]["none"]["tasks"] == 1
    assert found["source"]["calculation"] == {"tasks": 2, "mean": 0.0}
    assert found["scenario"]["maze/w"]["tasks"] == 3 and found["unscorable"] == ["f"]
    assert breakdown([_row("g", "patient_intake", 1.0, {})]) is None


def test_scripted_mistakes_are_graded_as_the_injection_log_says(tmp_path: Path) -> None:
    data = domain_data("maze/insurance_claim")
    log = tmp_path / "injections.jsonl"
    profile = "wrong_final=0.35,invalid_final=0.35,seed=4"
    model = ScriptedModel([data], parse_profile(profile), log)
    grades = {}
    for item in data.tasks[:60]:
        messages = [
            {"role": "system", "content": tool_free_prompt(data.domain.output_schema)},
            {"role": "user", "content": case_message(data.domain.sop(), item.inputs)},
        ]
        reply = model.respond({"model": f"scripted:{profile}", "messages": messages})
        answer = extract_final_answer(reply["choices"][0]["message"]["content"])
        run = Trajectory(item.id, "ep", [], True, answer)
        score = score_episode(data.domain, item, run, data.gold[item.id])
        grades[item.id] = (score.scores["answer_schema"]["value"], score.success)
    logged = {r["task_id"]: r["kind"] for r in map(orjson.loads, log.read_bytes().splitlines())}
    expected = {"wrong_final": (0.2, False), "invalid_final": (0.0, False), None: (1.0, True)}
    assert {expected[logged.get(t)] == g for t, g in grades.items()} == {True}
    assert set(logged.values()) == {"wrong_final", "invalid_final"}

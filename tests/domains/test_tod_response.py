"""tod/response: the rules a written response is scored by, each able to fail."""

from __future__ import annotations

from sopgym.core.trajectory import Trajectory
from sopgym.domains.tod import language
from sopgym.evaluation.scoring import score_episode
from tests.helpers import domain_data

NAME = "tod/response"


def scored(task_id: str, answer: dict) -> dict:
    data = domain_data(NAME)
    task = next(t for t in data.tasks if t.id == task_id)
    score = score_episode(data.domain, task, Trajectory(task_id, "e", [], True, answer),
                          data.gold[task_id])  # fmt: skip
    return {"success": score.success, **{k: v["value"] for k, v in score.scores.items()},
            "broken": score.scores["message_rules"]["metrics"].get("broken")}


def test_every_point_asks_or_closes_and_the_gold_keeps_every_rule() -> None:
    data = domain_data(NAME)
    asks = {g.decisions["asks"] for g in data.gold.values()}
    assert None in asks and {"account_id", "order_id", "zip_code", "has_receipt"} <= asks
    assert len(data.tasks) == 252  # one per conversation of the share


def test_each_rule_can_fail() -> None:
    data = domain_data(NAME)
    ask = next(g for g in data.gold.values() if g.decisions["asks"] == "order_id")
    close = next(g for g in data.gold.values() if g.decisions["closes"])
    assert scored(ask.task_id, ask.outputs)["success"]
    wrong_fact = {**ask.outputs, "message": language.ASK["en"]["zip_code"]}
    assert scored(ask.task_id, wrong_fact)["broken"] == ["asks_the_needed_fact"]
    no_question = {**ask.outputs, "message": "Tell me the order id."}
    assert scored(ask.task_id, no_question)["broken"] == ["is_a_question"]
    claims = {**close.outputs, "message": f"Done: cancel_order. {language.CLOSING_AGENT['en']}"}
    result = scored(close.task_id, claims)
    assert result["broken"] == ["claims_only_declared"] and not result["success"]
    no_close = {**close.outputs, "message": "Okay?"}
    assert scored(close.task_id, no_close)["broken"] == ["closes_when_done"]
    wrong_actions = {**ask.outputs, "actions": [{"name": "no_action",
                                                 "arguments": {"why": "goal_met"}}]}  # fmt: skip
    result = scored(ask.task_id, wrong_actions)
    assert result["declared_actions"] == 0.0 and result["message_rules"] == 1.0

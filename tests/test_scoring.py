"""The scoring entry: normalisation, tool precision/recall, the error taxonomy, gating, and
run metrics, through ``score_episode`` with a pack's default scorers."""

from __future__ import annotations

import pytest

from sopgym.core.normalized import normalize
from sopgym.core.tasks import Gold, ToolCall
from sopgym.core.trajectory import CallRecord
from sopgym.evaluation.scorers import output_fields, schema_valid
from sopgym.evaluation.scorers.calls import tool_match
from sopgym.evaluation.scorers.fields import values_match
from sopgym.evaluation.scoring import TaskScore, aggregate, score_episode
from tests.scoring_helpers import pack, task, trajectory

SCHEMA = {"type": "object",
          "properties": {"decision": {"enum": ["approve", "deny"]},
                         "amount": {"type": "number", "x-tolerance": 0.005}}}  # fmt: skip
GOLD = Gold("t", [ToolCall("a", {"x": 1}), ToolCall("b", {"y": "z"})], {},
            {"decision": "approve", "amount": 12.5})  # fmt: skip
PACK = pack(SCHEMA)


def score(trajectory_or_none, gold: Gold = GOLD, domain=PACK, kind: str = "tool_use"):
    return score_episode(domain, task(kind), trajectory_or_none, gold)


@pytest.mark.parametrize(("predicted", "gold", "match"), [
    (" Approve ", "approve", True), ("12.50", 12.5, True), ("1,200", 1200, True),
    (12.504, 12.5, True), (12.51, 12.5, False), ("true", True, True),
    (["b", "a"], ["a", "b"], True),
    ("approve", "deny", False), (None, "approve", False),
])  # fmt: skip
def test_values_match(predicted: object, gold: object, match: bool) -> None:
    assert values_match(predicted, gold, tolerance=0.005) is match


def test_normalize_is_stable() -> None:
    assert normalize({"A": " X  y "}) == {"a": "x y"}


def test_values_equal_as_given_match_only_where_their_normal_forms_do() -> None:
    """Answers and arguments equal to the gold as given are settled without normalising only
    where normalising would agree: equal strings in a list sort alike, an equal True and 1
    do not ([True, 2] normalises to [2.0, True], [1, 2] to [1.0, 2.0])."""
    assert values_match(["b", " A"], ["b", " A"])
    assert [True, 2] == [1, 2] and normalize([True, 2]) != normalize([1, 2])
    assert values_match([True, 2], [1, 2]) is False
    gold = Gold("t", [ToolCall("a", {"tags": ["b", "a"]}), ToolCall("b", {"v": [1, 2]})], {}, {})
    calls = [CallRecord("a", {"tags": ["b", "a"]}, 200), CallRecord("b", {"v": [True, 2]}, 200)]
    assert score(trajectory(calls, {}), gold).errors["wrong_value"] == 1


def test_perfect_episode() -> None:
    calls = [CallRecord("a", {"x": 1}, 200), CallRecord("b", {"y": "z"}, 200)]
    result = score(trajectory(calls, {"decision": "APPROVE", "amount": "12.50"}))
    assert result.success and result.completed and result.tool_f1 == 1.0 and result.errors == {}
    # the loose field rules accept it; the schema does not ("APPROVE" is no enum value, the
    # amount a string), and for a tool_use task that is reported, not gating
    assert result.scores["schema_valid"]["value"] == 0.0
    assert not result.scores["schema_valid"]["gates"]
    assert set(result.scores) == {
        "output_fields", "final_state", "schema_valid", "tool_calls", "errors", "order",
    }  # fmt: skip
    assert result.scores["final_state"]["value"] is None  # stateless: n/a


def test_error_taxonomy() -> None:
    calls = [
        CallRecord("a", {"x": "1"}, 422, error_code="type_mismatch"),
        CallRecord("a", {}, 422, error_code="missing_argument"),
        CallRecord("a", {"x": 2}, 200),  # accepted, but not the gold argument
        CallRecord("ghost", {}, 404, error_code="unknown_tool", in_catalog=False),
        CallRecord("d", {}, 200, distractor=True),
    ]
    result = score(trajectory(calls, {"decision": "deny", "amount": 12.5}))
    assert result.errors == {"type": 1, "validation": 1, "wrong_value": 1, "hallucinated": 1,
                             "distractor": 1, "wrong_final": 1}  # fmt: skip
    assert not result.success and result.fields == {"decision": False, "amount": True}
    assert result.scores["output_fields"]["value"] == 0.5
    assert "decision" in result.scores["output_fields"]["explanation"]


def test_blank_and_incomplete() -> None:
    blank = score(trajectory([], {"decision": "approve", "amount": 12.5}))
    assert blank.errors == {"blank": 1} and blank.success  # right answer, no tools: still blank
    unfinished = score(trajectory([], None, finished=False))
    assert not unfinished.completed and "wrong_final" not in unfinished.errors
    missing = score(None)
    assert missing.errors == {"incomplete": 1} and not missing.completed
    assert missing.scores == {} and missing.tool_f1 == 0.0 and missing.gold_calls == 2


def test_tool_match() -> None:
    calls = [CallRecord("a", {}, 200), CallRecord("a", {}, 200), CallRecord("c", {}, 200)]
    precision, recall, f1 = tool_match(trajectory(calls, {}), GOLD)
    assert (precision, recall) == (1 / 3, 1 / 2) and f1 == pytest.approx(0.4)
    assert tool_match(trajectory([], {}), Gold("t", [], {}, {})) == (1.0, 1.0, 1.0)


def test_a_pack_that_opts_in_to_schema_gating() -> None:
    answer = {"decision": "APPROVE", "amount": 12.5}  # right by the field rules, not an enum value
    loose = score(trajectory([], answer))
    strict = score(
        trajectory([], answer),
        domain=pack(SCHEMA, scorers=[output_fields(), schema_valid(gates=True)]),
    )
    assert loose.success and not strict.success
    assert strict.errors == {"wrong_final": 1} and set(strict.scores) == {
        "output_fields",
        "schema_valid",
    }
    assert strict.tool_f1 is None and strict.order_violations == 0  # not scored: n/a
    # a json_answer task gates on validity by default
    assert not score(trajectory([], answer), kind="json_answer").success
    assert score(
        trajectory([], {"decision": "approve", "amount": 12.5}), kind="json_answer"
    ).success


def test_run_metrics() -> None:
    good = score(trajectory([], {"decision": "approve", "amount": 12.5}))
    wrong = score(trajectory([], {"decision": "deny", "amount": 1}))
    lost = score(None)
    metrics = aggregate([good, wrong, lost])
    assert (metrics["ecr"], metrics["c_tsr"], metrics["tsr"]) == (2 / 3, 1 / 2, 1 / 3)
    assert metrics["scores"]["output_fields"] == pytest.approx(0.5)  # (1 + 0) / 2 scored tasks
    assert metrics["scores"]["final_state"] is None and metrics["order_violations"] == 0
    # rows written before scorers existed still load and aggregate
    old = good.to_json()
    del old["scores"], old["order_violations"]
    assert aggregate([TaskScore(**old)])["tsr"] == 1.0

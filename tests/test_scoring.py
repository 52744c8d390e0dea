"""Scoring: normalisation, tool precision/recall, the error taxonomy and run metrics."""

from __future__ import annotations

import pytest

from sopgym.core.tasks import Gold, ToolCall
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation.scoring import aggregate, normalize, score_task, tool_match, values_match

SCHEMA = {"properties": {"decision": {"enum": ["approve", "deny"]},
                         "amount": {"type": "number", "x-tolerance": 0.005}}}
GOLD = Gold("t", [ToolCall("a", {"x": 1}), ToolCall("b", {"y": "z"})], {},
            {"decision": "approve", "amount": 12.5})


def trajectory(calls: list[CallRecord], outputs: dict | None, finished: bool = True
               ) -> Trajectory:
    return Trajectory("t", "ep", calls, finished, outputs)


@pytest.mark.parametrize(("predicted", "gold", "match"), [
    (" Approve ", "approve", True), ("12.50", 12.5, True), ("1,200", 1200, True),
    (12.504, 12.5, True), (12.51, 12.5, False), ("true", True, True),
    (["b", "a"], ["a", "b"], True),
    ("approve", "deny", False), (None, "approve", False),
])
def test_values_match(predicted: object, gold: object, match: bool) -> None:
    assert values_match(predicted, gold, tolerance=0.005) is match


def test_normalize_is_stable() -> None:
    assert normalize({"A": " X  y "}) == {"a": "x y"}


def test_perfect_episode() -> None:
    calls = [CallRecord("a", {"x": 1}, 200), CallRecord("b", {"y": "z"}, 200)]
    score = score_task("d", trajectory(calls, {"decision": "APPROVE", "amount": "12.50"}), GOLD,
                       SCHEMA)
    assert score.success and score.completed and score.tool_f1 == 1.0 and score.errors == {}


def test_error_taxonomy() -> None:
    calls = [
        CallRecord("a", {"x": "1"}, 422, error_code="type_mismatch"),
        CallRecord("a", {}, 422, error_code="missing_argument"),
        CallRecord("a", {"x": 2}, 200),  # accepted, but not the gold argument
        CallRecord("ghost", {}, 404, error_code="unknown_tool", in_catalog=False),
        CallRecord("d", {}, 200, distractor=True),
    ]
    score = score_task("d", trajectory(calls, {"decision": "deny", "amount": 12.5}), GOLD, SCHEMA)
    assert score.errors == {"type": 1, "validation": 1, "wrong_value": 1, "hallucinated": 1,
                            "distractor": 1, "wrong_final": 1}
    assert not score.success and score.fields == {"decision": False, "amount": True}


def test_blank_and_incomplete() -> None:
    blank = score_task("d", trajectory([], {"decision": "approve", "amount": 12.5}), GOLD, SCHEMA)
    assert blank.errors == {"blank": 1} and blank.success  # right answer, no tools: still blank
    unfinished = score_task("d", trajectory([], None, finished=False), GOLD, SCHEMA)
    assert not unfinished.completed
    missing = score_task("d", None, GOLD, SCHEMA)
    assert missing.errors == {"incomplete": 1} and not missing.completed


def test_tool_match() -> None:
    calls = [CallRecord("a", {}, 200), CallRecord("a", {}, 200), CallRecord("c", {}, 200)]
    precision, recall, f1 = tool_match(trajectory(calls, {}), GOLD)
    assert (precision, recall) == (1 / 3, 1 / 2) and f1 == pytest.approx(0.4)
    assert tool_match(trajectory([], {}), Gold("t", [], {}, {})) == (1.0, 1.0, 1.0)


def test_run_metrics() -> None:
    good = score_task("d", trajectory([], {"decision": "approve", "amount": 12.5}), GOLD, SCHEMA)
    wrong = score_task("d", trajectory([], {"decision": "deny", "amount": 1}), GOLD, SCHEMA)
    lost = score_task("d", None, GOLD, SCHEMA)
    metrics = aggregate([good, wrong, lost])
    assert (metrics["ecr"], metrics["c_tsr"], metrics["tsr"]) == (2 / 3, 1 / 2, 1 / 3)

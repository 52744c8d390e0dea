"""Each built-in scorer on hand-made episodes, the defaults per task kind, and every registered
domain's gold replayed as an episode: all its scores pass, with no order violation."""

from __future__ import annotations

from typing import Any

import pytest

from sopgym.core.registry import domain_names
from sopgym.core.tasks import Gold, ToolCall
from sopgym.core.trajectory import CallRecord
from sopgym.evaluation.scorers import (
    Case,
    answer_schema,
    default_scorers,
    errors,
    final_state,
    graph,
    order,
    output_fields,
    schema_valid,
    scorers_for,
    tool_calls,
)
from sopgym.evaluation.scorers.answers import state_diff
from sopgym.evaluation.scorers.calls import order_violations
from sopgym.evaluation.scorers.fields import values_match
from sopgym.evaluation.scorers.graph import reachable
from sopgym.evaluation.scoring import score_episode
from tests.helpers import domain_data
from tests.scoring_helpers import pack, task, trajectory

SCHEMA = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["approve", "deny"]},
        "amount": {"type": "number", "x-tolerance": 0.01},
    },
    "required": ["decision", "amount"],
    "additionalProperties": False,
}
DEPENDENCIES = {"check": ["lookup"], "file": ["lookup", "check", "escalate"]}


def case(
    outputs: dict[str, Any] | None = None,
    calls: list[CallRecord] | None = None,
    gold: Gold | None = None,
    final: Any = None,
    finished: bool = True,
) -> Case:
    gold = gold or Gold("t", [ToolCall("lookup", {"id": 1})], {}, {"decision": "approve",
                                                                    "amount": 10.0})  # fmt: skip
    return Case(
        task(), trajectory(calls, outputs, finished, final), gold, pack(SCHEMA, DEPENDENCIES)
    )


def ran(*names: str, code: str | None = None) -> list[CallRecord]:
    return [CallRecord(n, {}, 200 if code is None else 422, code) for n in names]


# ---- output fields ----
def test_output_fields_field_by_field_with_tolerance() -> None:
    near = output_fields()(case({"decision": " Approve", "amount": "10.009"}))
    assert near.value == 1.0 and near.passed and near.gates
    off = output_fields()(case({"decision": "approve", "amount": 10.02}))
    assert off.value == 0.5 and not off.passed and off.metrics["fields"]["amount"] is False
    assert "amount" in off.explanation
    none = output_fields()(case(None, finished=False))
    assert none.value == 0.0 and none.explanation == "no final answer"


# ---- tool calls and errors ----
def test_tool_calls_and_their_not_applicable_case() -> None:
    score = tool_calls()(case({}, ran("lookup", "lookup")))
    assert (score.metrics["precision"], score.metrics["recall"]) == (0.5, 1.0)
    assert score.value == pytest.approx(2 / 3) and not score.gates
    imported = Gold("t", [], {}, {"decision": "approve"}, reference_calls=False)
    assert tool_calls()(case({}, ran("lookup"), gold=imported)).value is None


def test_errors_scorer_counts_the_taxonomy() -> None:
    calls = [*ran("lookup", code="missing_argument"), CallRecord("lookup", {"id": 2}, 200)]
    score = errors()(case({}, calls))
    assert score.metrics == {"validation": 1, "wrong_value": 1} and score.value == 0.0
    assert errors()(case({}, [CallRecord("lookup", {"id": 1}, 200)])).value == 1.0
    assert errors()(case({}, [])).metrics == {"blank": 1}
    failed = errors()(case({}, [CallRecord("lookup", {}, 500, "internal_error")]))
    assert failed.metrics == {"tool_error": 1} and failed.value == 0.0, "a tool failure counts"


# ---- order against the dependency graph ----
def test_order_counts_calls_made_before_their_dependencies() -> None:
    early = order()(case({}, ran("check", "lookup")))
    assert early.metrics["violations"] == 1 and early.value == 0.5
    assert "check before lookup" in early.explanation
    assert order()(case({}, ran("lookup", "check", "file"))).value == 1.0


def test_order_ignores_dependencies_a_branch_skips() -> None:
    # ``file`` depends on ``escalate``, which this branch of the SOP never calls: no violation
    assert order_violations(ran("lookup", "check", "file"), DEPENDENCIES) == []
    # ... but calling it after ``file`` is one
    late = order_violations(ran("lookup", "check", "file", "escalate"), DEPENDENCIES)
    assert late == [("file", ["escalate"])]


def test_order_rejected_calls_satisfy_nothing_refusals_do() -> None:
    malformed = [*ran("lookup", code="missing_argument"), *ran("check"), *ran("lookup")]
    assert order_violations(malformed, DEPENDENCIES) == [("check", ["lookup"])]
    refused = [CallRecord("lookup", {}, 404, "not_found"), *ran("check")]
    assert order_violations(refused, DEPENDENCIES) == []
    outside = [CallRecord("check", {}, 404, "unknown_tool", in_catalog=False), *ran("lookup")]
    assert order_violations(outside, DEPENDENCIES) == []


# ---- the answer against its JSON Schema ----
def test_schema_valid_uses_real_json_schema_validation() -> None:
    good = schema_valid()(case({"decision": "deny", "amount": 3}))
    assert good.value == 1.0 and good.metrics["errors"] == []
    bad = schema_valid(gates=True)(case({"decision": "maybe", "amount": "3", "extra": 1}))
    assert bad.value == 0.0 and bad.gates and not bad.passed
    problems = bad.metrics["errors"]
    assert any(p.startswith("$.decision:") for p in problems)
    assert any(p.startswith("$.amount:") for p in problems)
    assert any("extra" in p for p in problems)
    assert schema_valid()(case(None, finished=False)).value == 0.0


def test_answer_schema_grades_exact_valid_and_invalid() -> None:
    grade = answer_schema()
    assert grade(case({"decision": "approve", "amount": 10.0})).value == 1.0
    assert grade(case({"decision": "deny", "amount": 10.0})).value == 0.2
    assert grade(case({"decision": "APPROVE", "amount": 10.0})).value == 0.0  # not an enum value
    assert grade(case({"decision": "approve"})).value == 0.0  # amount required
    assert grade(case(None, finished=False)).value == 0.0


# ---- final state, strictly ----
STATE = {"orders": [{"id": 1, "status": "shipped", "total": 10}], "open": True}


def test_final_state_is_strict_and_lists_the_differing_paths() -> None:
    gold = Gold("t", [], {}, {}, final_state=STATE)
    assert final_state()(case({}, gold=gold, final=STATE)).value == 1.0
    loose = {"orders": [{"id": 1, "status": "Shipped", "total": 10.0}], "open": 1}
    score = final_state()(case({}, gold=gold, final=loose))
    assert score.value == 0.0 and score.gates
    assert score.metrics["differences"] == ["$.open", "$.orders[0].status", "$.orders[0].total"]
    assert "$.orders[0].status" in score.explanation
    assert final_state()(case({}, gold=gold, final=None)).value == 0.0
    assert final_state()(case({})).value is None  # no gold state: not applicable


def test_final_state_reports_the_paths_a_domain_declares_harmless_and_passes() -> None:
    gold = Gold("t", [], {}, {}, final_state=STATE)
    tolerant = pack(SCHEMA)
    tolerant.harmless_state = ("$.orders[*].status", "$.note")
    noted = {"orders": [{"id": 1, "status": "Shipped", "total": 10}], "open": True, "note": "x"}
    score = final_state()(Case(task(), trajectory(final_state=noted), gold, tolerant))
    assert score.value == 1.0
    assert score.metrics == {"differences": [], "harmless": ["$.note (unexpected)",
                                                             "$.orders[0].status"]}  # fmt: skip
    wrong = {**noted, "open": False}
    score = final_state()(Case(task(), trajectory(final_state=wrong), gold, tolerant))
    assert (score.value, score.metrics["differences"]) == (0.0, ["$.open"])
    # a pattern names a path exactly: a longer name is no match
    longer = {**STATE, "notes": "x"}
    score = final_state()(Case(task(), trajectory(final_state=longer), gold, tolerant))
    assert (score.value, score.metrics["differences"]) == (0.0, ["$.notes (unexpected)"])
    # a domain that declares nothing harmless fails every difference
    assert final_state()(case({}, gold=gold, final=noted)).value == 0.0


def test_state_diff_keys_and_lengths() -> None:
    assert state_diff({"a": 1, "b": [1, 2]}, {"a": 1, "c": 2, "b": [1]}) == [
        "$.b (length 2, expected 1)",
        "$.c (missing)",
    ]
    assert state_diff({"x": True}, {"x": 1}) == ["$.x"]
    assert state_diff({"x": {"y": 1}}, {}) == ["$.x (unexpected)"]
    assert state_diff([1, 2], [1, 3]) == ["$[1]"]


# ---- graphs: edge direction matters ----
GOLD_GRAPH: dict[str, list[Any]] = {
    "nodes": ["lookup", "check", "file"],
    "edges": [["lookup", "check"], ["check", "file"]],
}


def graph_case(answer: dict[str, Any] | None, field: str | None = None) -> Case:
    outputs = GOLD_GRAPH if field is None else {field: GOLD_GRAPH}
    return case(answer, gold=Gold("t", [], {}, outputs))


def test_graph_exact() -> None:
    score = graph()(
        graph_case({"nodes": ["File", "check", "lookup"], "edges": GOLD_GRAPH["edges"]})
    )
    assert score.value == 1.0 and score.explanation == "exact graph"
    assert score.metrics["path_overlap"] == 1.0 and score.metrics["edge_f1"] == 1.0


def test_a_reversed_edge_is_wrong() -> None:
    reversed_one = {"nodes": GOLD_GRAPH["nodes"], "edges": [["check", "lookup"], ["check", "file"]]}
    # the field rules sort nested lists, so they would call this answer right
    assert values_match(reversed_one["edges"], GOLD_GRAPH["edges"])
    score = graph()(graph_case(reversed_one))
    m = score.metrics
    assert (m["edge_precision"], m["edge_recall"], m["edge_f1"]) == (0.5, 0.5, 0.5)
    assert m["node_f1"] == 1.0 and score.value == 0.75 and not score.passed
    assert m["edge_overlap"] == pytest.approx(1 / 3)
    # gold paths: l->c, c->f, l->f; answer paths: c->l, c->f: one shared of four
    assert m["path_overlap"] == pytest.approx(1 / 4)
    assert "missing edges: lookup->check" in score.explanation
    assert "extra edges: check->lookup" in score.explanation


def test_graph_in_a_field_and_malformed_answers() -> None:
    inside = graph(field="graph")(graph_case({"graph": GOLD_GRAPH}, field="graph"))
    assert inside.value == 1.0
    assert graph()(graph_case({"nodes": ["a"], "edges": [["a", "b", "c"]]})).value == 0.0
    assert graph()(graph_case(None)).value == 0.0
    assert graph()(case({"nodes": [], "edges": []})).value is None  # the gold is no graph


def test_reachable_follows_direction() -> None:
    assert reachable({("a", "b"), ("b", "c")}) == {("a", "b"), ("b", "c"), ("a", "c")}


# ---- defaults and a pack's own list ----
def test_defaults_per_task_kind() -> None:
    def names(kind: str) -> dict[str, bool]:
        return {s.name: s.gates for s in default_scorers(kind)}

    calls = {"tool_calls": False, "errors": False, "order": False}
    assert names("tool_use") == names("dialogue") == {
        "output_fields": True, "final_state": True, "schema_valid": False, **calls,
    }  # fmt: skip
    assert names("json_answer") == {
        "output_fields": True, "schema_valid": True, "answer_schema": False, **calls,
    }  # fmt: skip
    assert names("graph") == {"graph": True, "schema_valid": True, **calls}
    with pytest.raises(ValueError, match="unknown task kind"):
        default_scorers("poetry")
    with pytest.raises(ValueError, match="repeat"):
        scorers_for(pack(SCHEMA, scorers=[errors(), errors(gates=True)]), task())


def test_graph_tasks_succeed_only_on_the_exact_directed_graph() -> None:
    domain = pack({"type": "object", "required": ["nodes", "edges"]})
    gold = Gold("t", [], {}, GOLD_GRAPH)
    exact = score_episode(domain, task("graph"), trajectory([], GOLD_GRAPH), gold)
    assert exact.success and exact.scores["graph"]["value"] == 1.0
    flipped = {**GOLD_GRAPH, "edges": [[b, a] for a, b in GOLD_GRAPH["edges"]]}
    wrong = score_episode(domain, task("graph"), trajectory([], flipped), gold)
    assert not wrong.success and wrong.errors == {"wrong_final": 1}


# ---- every registered domain: the gold, replayed, passes every scorer ----
@pytest.mark.parametrize("name", domain_names())
def test_gold_scores_perfectly_with_no_order_violation(name: str) -> None:
    data = domain_data(name)
    for item in data.tasks:
        gold = data.gold[item.id]
        replay = trajectory(
            [CallRecord(c.name, c.arguments, 200) for c in gold.calls],
            gold.outputs,
            final_state=gold.final_state,
        )
        result = score_episode(data.domain, item, replay, gold)
        assert result.success and result.order_violations == 0, (item.id, result.scores)
        failed = {n: s["explanation"] for n, s in result.scores.items() if s["value"] not in
                  (None, 1.0)}  # fmt: skip
        assert not failed, (item.id, failed)  # gold outputs valid against the schema, too

"""The generic baseline policy: a pure function from inputs, specs and results to the next step."""

from __future__ import annotations

from typing import Any

from sopgym.agents.baseline_policy import Answer, Call, Step, coerce, key, next_action
from sopgym.core.tools import ToolSpec


def spec(name: str, properties: dict[str, Any], required: list[str] | None = None) -> dict:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return ToolSpec(name, "", schema).rendered()


TEXT, NUMBER, FLAG = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
TOOLS = [
    # listed before the tool it depends on: the policy must still call it second
    spec("decide", {"order_id": TEXT, "within_window": FLAG}, ["order_id", "within_window"]),
    spec("lookup", {"orderId": TEXT}, ["orderId"]),
    spec("window", {"order_id": TEXT, "days": NUMBER}, ["order_id", "days"]),
]


def run(inputs: dict, results: dict[str, Any], tools: list[dict] = TOOLS) -> list[Call | Answer]:
    """Drive the policy with canned results (a dict result, or an exception for a refusal)."""
    history: list[Step] = []
    actions: list[Call | Answer] = []
    while True:
        action = next_action(inputs, tools, ["refund_decision", "unknowable"], history)
        actions.append(action)
        if isinstance(action, Answer):
            return actions
        result = results[action.name]
        ok = not isinstance(result, Exception)
        history.append(Step(action.name, action.arguments, ok, result if ok else {"error": {}}))


def test_calls_follow_dependencies_then_answer_from_result_fields() -> None:
    actions = run(
        {"order_id": "A-1"},
        {
            "lookup": {"Days": "12", "item": "new"},
            "window": {"within window": "True"},
            "decide": {"Refund Decision": "full"},
        },
    )
    assert actions == [
        Call("lookup", {"orderId": "A-1"}),
        Call("window", {"order_id": "A-1", "days": 12}),  # "12" coerced to the schema's integer
        Call("decide", {"order_id": "A-1", "within_window": True}),
        Answer({"refund_decision": "full"}),  # fields nobody returned are left out
    ]


def test_refusals_give_no_facts_and_no_tool_is_called_twice() -> None:
    actions = run({"order_id": "A-1"}, {"lookup": ValueError("no such order")})
    assert actions == [Call("lookup", {"orderId": "A-1"}), Answer({})]


def test_inputs_win_over_results_and_later_results_over_earlier() -> None:
    tools = [spec("a", {"x": TEXT}), spec("b", {"y": TEXT}), spec("c", {"z": TEXT})]
    history = [
        Step("a", {}, True, {"x": "from-a", "refund_decision": "first", "z": "from-a"}),
        Step("b", {}, True, {"refund_decision": "second"}),
    ]
    action = next_action({"z": "input"}, tools, ["refund_decision"], history)
    assert action == Call("c", {"z": "input"})
    history.append(Step("c", {}, True, {"nested": {"refund_decision": "third"}}))
    assert next_action({"z": "input"}, tools, ["refund_decision"], history) == Answer(
        {"refund_decision": "third"}
    )


def test_schema_without_required_needs_every_property() -> None:
    tools = [spec("t", {"a": TEXT, "b": TEXT})]
    assert next_action({"a": "1"}, tools, [], []) == Answer({})
    assert next_action({"a": "1", "b": "2"}, tools, [], []) == Call("t", {"a": "1", "b": "2"})


def test_reads_every_spec_format() -> None:
    rendered = spec("lookup", {"orderId": TEXT}, ["orderId"])
    for form in (rendered, rendered["openai"], rendered["anthropic"], rendered["bedrock"]):
        assert next_action({"order_id": "A"}, [form], [], []) == Call("lookup", {"orderId": "A"})


def test_step_from_a_chat_transcript() -> None:
    assert Step.from_message("t", {}, '{"x": 1}').ok
    assert not Step.from_message("t", {}, '{"error": {"code": "not_found"}}').ok
    assert not Step.from_message("t", {}, "not json").ok


def test_names_and_coercion() -> None:
    assert key("patientID") == key("patient id") == key("Patient_Id") == "patient_id"
    assert coerce(12, TEXT) == "12" and coerce("no", FLAG) is False
    assert coerce("['a', 'b']", {"type": "array"}) == ["a", "b"]
    assert coerce("x", {"type": ["integer", "null"]}) == "x"  # no lossless conversion: as is
    assert coerce(1.5, NUMBER) == 1.5

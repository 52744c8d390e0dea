"""Reading model replies: lenient JSON, final answers, ReAct turns, plans, model specs and
which failures are worth a retry."""

from __future__ import annotations

import httpx
import pytest

from sopgym.agents.llm import is_retryable
from sopgym.agents.models import ModelUnavailable, parse_model_spec
from sopgym.agents.plan import read_plan
from sopgym.core.answers import (
    ReactAction,
    ReactFinal,
    ReactParseError,
    extract_final_answer,
    parse_react,
)
from sopgym.core.jsontext import LooseJSONError, parse_array, parse_object
from sopgym.services.model.profiles import ProfileError, parse_profile, profile_for_model

FIELDS = ["insurance_status", "overall_risk"]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": [true, null]}',
        '```json\n{"a": 1, "b": [true, null]}\n```',
        '{"a": 1, "b": [true, null]}\nI will now wait for the tool.',
        "{'a': 1, 'b': [True, None]}",
        "{'a': 1, 'b': [true, null],}",
        'Sure: {"a": 1, "b": [true, null]} - done',
    ],
)
def test_parse_object_tolerates_model_habits(text: str) -> None:
    assert parse_object(text) == {"a": 1, "b": [True, None]}


def test_parse_object_keeps_quotes_and_braces_inside_strings() -> None:
    assert parse_object("""{'note': "it's {fine}", "x": 'say "hi"'}""") == {
        "note": "it's {fine}",
        "x": 'say "hi"',
    }


@pytest.mark.parametrize("text", ["", "no json here", "{broken", "[1, 2]"])
def test_parse_object_refuses_non_objects(text: str) -> None:
    with pytest.raises(LooseJSONError):
        parse_object(text)


def test_parse_array_accepts_wrapped_lists() -> None:
    assert parse_array('plan:\n```\n[{"tool": "a"}]\n```') == [{"tool": "a"}]
    assert parse_array('{"steps": [1, 2]}') == [1, 2]


@pytest.mark.parametrize(
    "text",
    [
        '<final_answer>{"insurance_status": "valid", "overall_risk": "low"}</final_answer>',
        'Done.\n<final_answer>\n{"insurance_status": "valid", "overall_risk": "low"}',
        'Final Answer: ```json\n{"insurance_status": "valid", "overall_risk": "low"}\n```',
        'Inputs were {"patient_id": "P1"}; summary: '
        '{"insurance_status": "valid", "overall_risk": "low"} as required.',
        '{"final_answer": {"insurance_status": "valid", "overall_risk": "low"}}',
        "<final_answer>{'insurance_status': 'valid', 'overall_risk': 'low'}</final_answer>",
    ],
)
def test_final_answer_is_found_wherever_it_is(text: str) -> None:
    assert extract_final_answer(text, FIELDS) == {
        "insurance_status": "valid",
        "overall_risk": "low",
    }


def test_no_final_answer_in_plain_prose() -> None:
    assert extract_final_answer("I still need to call a tool.", FIELDS) is None


def test_react_action_with_fenced_single_quoted_input_and_trailing_text() -> None:
    step = parse_react(
        "Thought: validate first\nAction: `validate_insurance`\n"
        "Action Input: ```json\n{'patient_id': 'P1', 'ok': True}\n```\nwaiting for it"
    )
    assert step == ReactAction(
        "validate first", "validate_insurance", {"patient_id": "P1", "ok": True}
    )


def test_react_ignores_an_invented_observation() -> None:
    step = parse_react('Action: a\nAction Input: {"x": 1}\nObservation: {"made": "up"}\nAction: b')
    assert isinstance(step, ReactAction) and (step.tool, step.arguments) == ("a", {"x": 1})


def test_react_final_answer() -> None:
    step = parse_react(
        'Thought: done\nFinal Answer: <final_answer>{"overall_risk": "low"}</final_answer>',
        FIELDS,
    )
    assert isinstance(step, ReactFinal) and step.answer == {"overall_risk": "low"}


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("I think we should validate.", "neither"),
        ("Action: validate_insurance", "Missing 'Action Input:'"),
        ("Action: validate_insurance\nAction Input: {patient_id: P1", "Could not read"),
    ],
)
def test_react_parse_errors_explain_themselves(text: str, hint: str) -> None:
    step = parse_react(text)
    assert isinstance(step, ReactParseError) and hint in step.message


def test_read_plan_normalises_steps() -> None:
    text = 'ok <plan>[{"step": 1, "tool": "a", "goal": "check"}, "then answer"]</plan>'
    assert read_plan(text) == [
        {"tool": "a", "goal": "check"},
        {"tool": None, "goal": "then answer"},
    ]
    assert read_plan("no plan at all") is None


def test_model_specs() -> None:
    assert parse_model_spec("scripted").name == "scripted"
    assert parse_model_spec("scripted:noisy,seed=3").name == "scripted:noisy,seed=3"
    spec = parse_model_spec("openai:gpt-4o-mini", "http://x/v1")
    assert (spec.provider, spec.name, spec.base_url, spec.label) == (
        "openai",
        "gpt-4o-mini",
        "http://x/v1",
        "openai:gpt-4o-mini",
    )
    assert parse_model_spec("bedrock:anthropic.claude-3-5-sonnet-20241022-v2:0").name == (
        "anthropic.claude-3-5-sonnet-20241022-v2:0"
    )
    for bad in ("gpt-4o", "mistral:large", "openai:"):
        with pytest.raises(ModelUnavailable):
            parse_model_spec(bad)


def test_profiles() -> None:
    assert parse_profile("").perfect and parse_profile("perfect").perfect
    noisy = parse_profile("noisy,seed=5,wrong_final=0.5")
    assert noisy.seed == 5 and noisy.rate("wrong_final") == 0.5 and noisy.rate("missing_arg") > 0
    default = parse_profile("perfect")
    assert profile_for_model("gpt-4o", default) is default
    assert profile_for_model("scripted:missing_arg=1", default).rate("missing_arg") == 1.0
    for bad in ("loud", "missing_arg=2", "seed=x", "typo=0.1", "wrong_tool=0.6,bad_type=0.6"):
        with pytest.raises(ProfileError):
            parse_profile(bad)


def _status_error(status: int) -> Exception:
    error = RuntimeError("http")
    error.status_code = status  # type: ignore[attr-defined]
    return error


def test_retry_classification() -> None:
    assert is_retryable(httpx.ConnectError("refused"))
    assert is_retryable(TimeoutError())
    assert is_retryable(_status_error(429)) and is_retryable(_status_error(503))
    assert not is_retryable(_status_error(400)) and not is_retryable(_status_error(401))
    assert not is_retryable(ValueError("bad input"))

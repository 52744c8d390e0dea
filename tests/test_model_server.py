"""The scripted model: it finds the case, follows the gold calls against the results in the
conversation, recovers from tool errors, answers in the requested style, and injects and logs
mistakes reproducibly."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient

from sopgym.agents.plan import read_plan
from sopgym.agents.prompts import case_message, plan_request, system_prompt, tools_catalog_text
from sopgym.core.answers import ReactAction, extract_final_answer, parse_react
from sopgym.core.tasks import ToolCall
from sopgym.services.model.app import create_app
from sopgym.services.model.engine import ScriptedModel
from sopgym.services.model.profiles import parse_profile
from sopgym.services.model.script import MAX_RETRIES
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "patient_intake"


@pytest.fixture(scope="module")
def data():
    return domain_data(DOMAIN)


def _model(data, profile: str = "perfect", log: Path | None = None) -> ScriptedModel:
    return ScriptedModel([data], parse_profile(profile), log)


def _opening(data, task, react: bool = False) -> list[dict]:
    tools = [t.spec.rendered() for t in data.domain.tools]
    catalog = tools_catalog_text(tools) if react else None
    return [
        {"role": "system", "content": system_prompt(data.domain.output_schema, catalog)},
        {"role": "user", "content": case_message(data.domain.sop(), task.inputs)},
    ]


def _tools(data) -> list[dict]:
    return [t.spec.to_openai() for t in data.domain.tools]


def _message(reply: dict) -> dict:
    return reply["choices"][0]["message"]


def _call_of(message: dict) -> ToolCall:
    function = message["tool_calls"][0]["function"]
    return ToolCall(function["name"], orjson.loads(function["arguments"]))


def _answer_call(messages: list[dict], message: dict, result: dict) -> None:
    call_id = message["tool_calls"][0]["id"]
    messages += [
        message,
        {"role": "tool", "tool_call_id": call_id, "content": orjson.dumps(result).decode()},
    ]


def test_native_conversation_follows_the_gold_then_answers(data) -> None:
    model = _model(data)
    for task in data.tasks[:6]:
        gold = data.gold[task.id]
        messages = _opening(data, task)
        for expected in gold.calls:
            message = _message(
                model.respond({"model": "scripted", "messages": messages, "tools": _tools(data)})
            )
            assert _call_of(message) == expected
            _answer_call(messages, message, {"anything": True})
        reply = model.respond({"model": "scripted", "messages": messages, "tools": _tools(data)})
        assert reply["choices"][0]["finish_reason"] == "stop"
        assert extract_final_answer(_message(reply)["content"], list(gold.outputs)) == gold.outputs
        assert reply["usage"]["prompt_tokens"] >= 0 and reply["usage"]["completion_tokens"] > 0


def test_a_failed_correct_call_is_retried_then_given_up(data) -> None:
    model, task = _model(data), data.tasks[0]
    first = data.gold[task.id].calls[0]
    messages = _opening(data, task)
    error = {"error": {"code": "upstream_unavailable", "message": "try again", "field": None}}
    for _ in range(1 + MAX_RETRIES):  # the call, then its retries
        message = _message(model.respond({"messages": messages, "tools": _tools(data)}))
        assert _call_of(message) == first
        _answer_call(messages, message, error)
    message = _message(model.respond({"messages": messages, "tools": _tools(data)}))
    assert _call_of(message) == data.gold[task.id].calls[1]


def test_react_style_and_plan_style(data) -> None:
    model, task = _model(data), data.tasks[1]
    gold = data.gold[task.id]
    messages = _opening(data, task, react=True)
    step = parse_react(_message(model.respond({"messages": messages}))["content"])
    assert isinstance(step, ReactAction) and ToolCall(step.tool, step.arguments) == gold.calls[0]
    messages += [
        {
            "role": "assistant",
            "content": _message(model.respond({"messages": messages}))["content"],
        },
        {"role": "user", "content": 'Observation: {"policy_found": true}'},
    ]
    step = parse_react(_message(model.respond({"messages": messages}))["content"])
    assert isinstance(step, ReactAction) and step.tool == gold.calls[1].name

    planning = [*_opening(data, task), {"role": "user", "content": plan_request()}]
    plan = read_plan(_message(model.respond({"messages": planning}))["content"])
    assert [s["tool"] for s in plan or []] == [c.name for c in gold.calls]


def test_unknown_case_is_said_not_guessed(data) -> None:
    reply = _model(data).respond(
        {"messages": [{"role": "user", "content": '{"patient_id": "nobody"}'}]}
    )
    assert "cannot find a case" in _message(reply)["content"]


def test_injected_mistake_then_recovery_and_log(data, tmp_path: Path) -> None:
    log = tmp_path / "injections.jsonl"
    model, task = _model(data, "missing_arg=1,seed=2", log), data.tasks[2]
    gold = data.gold[task.id]
    messages = _opening(data, task)
    bad = _message(model.respond({"messages": messages, "tools": _tools(data)}))
    call = _call_of(bad)
    assert call.name == gold.calls[0].name and set(call.arguments) < set(gold.calls[0].arguments)
    _answer_call(
        messages, bad, {"error": {"code": "missing_argument", "message": "m", "field": "x"}}
    )
    good = _message(model.respond({"messages": messages, "tools": _tools(data)}))
    assert _call_of(good) == gold.calls[0]
    records = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert [(r["task_id"], r["kind"], r["expected"]) for r in records] == [
        (task.id, "missing_arg", ["validation"])
    ]
    again = _model(data, "missing_arg=1,seed=2")  # same profile, same script
    profile = parse_profile("missing_arg=1,seed=2")
    first = again.books[DOMAIN].script(profile, task)
    assert first == model.books[DOMAIN].script(profile, task)


def test_every_kind_predicts_its_category(data) -> None:
    expected = {
        "missing_arg": "validation",
        "bad_type": "type",
        "wrong_value": "wrong_value",
        "hallucinated_tool": "hallucinated",
    }
    book = _model(data).books[DOMAIN]
    for kind, category in expected.items():
        script = book.script(parse_profile(f"{kind}=1"), data.tasks[0])
        mistakes = [e for e in script.events if e.kind]
        assert mistakes and all(e.expected == [category] for e in mistakes), kind
    skipped = book.script(parse_profile("skip_step=1"), data.tasks[0])
    assert skipped.emitted == skipped.events[:1]  # the first step is never skipped
    blank = book.script(parse_profile("blank=1"), data.tasks[0])
    assert blank.emitted == [] and blank.final_expected[0] == "blank"


def test_http_surface() -> None:
    client = TestClient(create_app([DOMAIN], DATA_ROOT))
    ids = [m["id"] for m in client.get("/v1/models").json()["data"]]
    assert "scripted" in ids and "scripted:noisy" in ids
    refused = client.post(
        "/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "x"}], "stream": True},
    )
    assert refused.status_code == 400 and "stream" in refused.json()["error"]["message"]
    assert client.post("/v1/chat/completions", content=b"{").status_code == 400
    reply = client.post(
        "/v1/chat/completions",
        json={"model": "scripted:loud", "messages": [{"role": "user", "content": "x"}]},
    )
    assert reply.status_code == 400 and "loud" in reply.json()["error"]["message"]

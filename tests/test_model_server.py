"""The scripted model: it finds the case, plays the reference policy over the results in the
conversation (never the stored gold), retries or gives up failed calls, answers in the
requested style, and injects and logs mistakes reproducibly."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient

from sopgym.agents.plan import read_plan
from sopgym.agents.prompts import case_message, plan_request, system_prompt, tools_catalog_text
from sopgym.core.answers import ReactAction, extract_final_answer, parse_react
from sopgym.core.errors import ToolError
from sopgym.core.tasks import Task, ToolCall
from sopgym.services.model.app import create_app
from sopgym.services.model.conversation import MadeCall
from sopgym.services.model.engine import ScriptedModel
from sopgym.services.model.observed import MAX_RETRIES
from sopgym.services.model.profiles import parse_profile
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


def _result(data, task: Task, call: ToolCall) -> dict:
    """What the real tool answers ``call`` (patient_intake is stateless): result or refusal."""
    ctx = data.domain.context(data.tables, data.files_dir, task)
    tool = data.domain.tool_map().get(call.name)
    try:
        if tool is None:
            raise ToolError("unknown_tool", f"no tool named {call.name}")
        return tool(dict(call.arguments), ctx)
    except ToolError as refused:
        return refused.to_body()


def _reply(model: ScriptedModel, messages: list[dict], data) -> dict:
    return _message(
        model.respond({"model": "scripted", "messages": messages, "tools": _tools(data)})
    )


def _final(message: dict, data) -> dict | None:
    return extract_final_answer(message["content"] or "", data.domain.output_fields)


TRANSIENT = {"error": {"code": "upstream_timeout", "message": "try again", "field": None}}


def test_native_conversation_follows_the_policy_over_real_results_then_answers(data) -> None:
    model = _model(data)
    for task in data.tasks[:6]:
        gold = data.gold[task.id]
        messages = _opening(data, task)
        for expected in gold.calls:
            message = _reply(model, messages, data)
            assert _call_of(message) == expected
            _answer_call(messages, message, _result(data, task, expected))
        reply = model.respond({"model": "scripted", "messages": messages, "tools": _tools(data)})
        assert reply["choices"][0]["finish_reason"] == "stop"
        assert _final(_message(reply), data) == gold.outputs
        assert reply["usage"]["prompt_tokens"] >= 0 and reply["usage"]["completion_tokens"] > 0


def test_an_altered_result_leads_to_the_answer_it_implies(data) -> None:
    """A lifestyle score other than the real one changes the next call's argument and the
    answer: the model reasons from what it saw, so it now disagrees with the gold."""
    model, task = _model(data), data.tasks[0]
    gold = data.gold[task.id]
    messages, seen = _opening(data, task), []
    while (message := _reply(model, messages, data)).get("tool_calls"):
        call = _call_of(message)
        seen.append(call)
        result = _result(data, task, call)
        if call.name == "score_lifestyle":
            result = {**result, "total_points": 0 if result["total_points"] >= 4 else 99}
        _answer_call(messages, message, result)
    answer = _final(message, data)
    assert answer is not None and answer["lifestyle_risk"] != gold.outputs["lifestyle_risk"]
    clinical = next(c for c in seen if c.name == "score_clinical_risk")
    assert clinical not in gold.calls  # the altered level went on into the next step


def test_a_transient_failure_is_retried_then_the_task_goes_on(data) -> None:
    model, task = _model(data), data.tasks[0]
    gold = data.gold[task.id]
    messages = _opening(data, task)
    for _ in range(MAX_RETRIES):  # fails, then succeeds on the last retry
        message = _reply(model, messages, data)
        assert _call_of(message) == gold.calls[0]
        _answer_call(messages, message, TRANSIENT)
    for expected in gold.calls:
        message = _reply(model, messages, data)
        assert _call_of(message) == expected
        _answer_call(messages, message, _result(data, task, expected))
    assert _final(_reply(model, messages, data), data) == gold.outputs


@pytest.mark.parametrize(
    ("error", "attempts"),
    [
        (TRANSIENT, 1 + MAX_RETRIES),  # retried, then given up
        ({"error": {"code": "service_unavailable", "message": "down", "field": None}}, 1),
        ({"error": {"code": "not_found", "message": "no such patient", "field": None}}, 1),
        ("<html>Bad Gateway</html>", 1 + MAX_RETRIES),  # unreadable: as a transient failure
    ],
)
def test_a_call_that_keeps_failing_is_given_up_without_an_answer(data, error, attempts) -> None:
    model, task = _model(data), data.tasks[0]
    first = data.gold[task.id].calls[0]
    messages = _opening(data, task)
    for _ in range(attempts):
        message = _reply(model, messages, data)
        assert _call_of(message) == first
        messages += [message, {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"],
                               "content": error if isinstance(error, str)
                               else orjson.dumps(error).decode()}]  # fmt: skip
    message = _reply(model, messages, data)
    assert not message.get("tool_calls") and _final(message, data) is None
    assert "cannot complete the procedure" in message["content"]


def test_a_result_the_policy_cannot_read_is_given_up_not_a_server_error(data) -> None:
    model, task = _model(data), data.tasks[0]
    messages = _opening(data, task)
    message = _reply(model, messages, data)
    _answer_call(messages, message, {"anything": True})  # no field the SOP reads
    message = _reply(model, messages, data)
    assert _final(message, data) is None and "could not be read" in message["content"]


def test_react_style_and_plan_style(data) -> None:
    model, task = _model(data), data.tasks[1]
    gold = data.gold[task.id]
    messages = _opening(data, task, react=True)
    step = parse_react(_message(model.respond({"messages": messages}))["content"])
    assert isinstance(step, ReactAction) and ToolCall(step.tool, step.arguments) == gold.calls[0]
    observed = orjson.dumps(_result(data, task, gold.calls[0])).decode()
    messages += [
        {
            "role": "assistant",
            "content": _message(model.respond({"messages": messages}))["content"],
        },
        {"role": "user", "content": f"Observation: {observed}"},
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
    again = _model(data, "missing_arg=1,seed=2")  # same profile, same moves
    profile = parse_profile("missing_arg=1,seed=2")
    made = [MadeCall(call.name, call.arguments, False, {})]
    first = again.books[DOMAIN].play(profile, task, made)
    assert first == model.books[DOMAIN].play(profile, task, made)


def test_the_injection_log_says_which_trial_each_mistake_was_played_in(
    data, tmp_path: Path
) -> None:
    """A task's trials share its id: each line carries the seed its request sent (the trial's
    own), so a reader can tell trial 0's mistakes from trial 1's."""
    log = tmp_path / "injections.jsonl"
    model, task = _model(data, "missing_arg=1,seed=2", log), data.tasks[2]
    for seed in (0, 7):  # trial 0 of a run seeded 0 sends none; another trial its own
        body: dict = {"messages": _opening(data, task), "tools": _tools(data)}
        if seed:
            body["seed"] = seed
        model.respond(body)
    records = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert [(r["task_id"], r["kind"], r["trial_seed"]) for r in records] == [
        (task.id, "missing_arg", 0), (task.id, "missing_arg", 7)]  # fmt: skip


def _played(data, book, profile: str, task: Task):
    """The moves of ``profile`` on ``task`` through a whole conversation with real results."""
    made: list[MadeCall] = []
    while (move := book.play(parse_profile(profile), task, made)).call is not None:
        result = _result(data, task, move.call)
        made.append(MadeCall(move.call.name, move.call.arguments, "error" not in result, result))
    return move, made


def test_every_kind_predicts_its_category(data) -> None:
    expected = {
        "missing_arg": "validation",
        "bad_type": "type",
        "wrong_value": "wrong_value",
        "hallucinated_tool": "hallucinated",
    }
    book, task = _model(data).books[DOMAIN], data.tasks[0]
    gold = data.gold[task.id]
    for kind, category in expected.items():
        move, _ = _played(data, book, f"{kind}=1", task)
        assert move.mistakes and all(m.expected == [category] for m in move.mistakes), kind
        assert move.final == gold.outputs  # each mistake is followed by the right call
    skipped, made = _played(data, book, "skip_step=1", task)
    assert [c.name for c in made] == [gold.calls[0].name]  # the first step is never skipped
    assert [m.step for m in skipped.mistakes] == list(range(1, len(gold.calls)))
    blank, made = _played(data, book, "blank=1", task)
    assert made == [] and blank.final_mistake and blank.final_mistake["expected"][0] == "blank"


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

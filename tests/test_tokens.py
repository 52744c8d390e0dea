"""Token-level trajectories (docs/tokens.md): the scripted model answers vLLM's token fields
(``logprobs``, ``return_token_ids``, ``return_tokens_as_token_ids``) when asked and only then;
``record_tokens`` sends them and keeps each turn's ids and logprobs in its usage record; a run
with it writes ``tokens.jsonl`` (0600) and rows without the arrays; env-serve answers an
action's turn in the step's info; a provider with no token ids is refused before a run."""

from __future__ import annotations

import copy
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import HumanMessage, SystemMessage

import sopgym
from sopgym import RunConfig, UsageError
from sopgym.agents.base import AgentContext
from sopgym.agents.llm import LLM, invoke_model
from sopgym.agents.prompts import case_message, system_prompt
from sopgym.core.errors import ToolError
from sopgym.env import SopgymEnv, make_env
from sopgym.orchestration.api import validate
from sopgym.orchestration.stack import Stack, embedded_stack
from sopgym.runs.records import WorkerReport
from sopgym.services.model.app import create_app
from tests.helpers import DATA_ROOT, domain_data
from tests.test_model_client import ScriptedEndpoint, endpoint  # noqa: F401 - its fixture

DOMAIN = "patient_intake"
ASK = {"logprobs": True, "return_token_ids": True, "return_tokens_as_token_ids": True}
END_OF_TURN = 2  # the stand-in tokenizer's <|im_end|> (services/model/tokens.py)


def opening(task_index: int = 0) -> list[dict[str, Any]]:
    data = domain_data(DOMAIN)
    return [
        {"role": "system", "content": system_prompt(data.domain.output_schema, None)},
        {"role": "user", "content": case_message(data.domain.sop(), data.tasks[task_index].inputs)},
    ]


def tools() -> list[dict[str, Any]]:
    return [t.spec.to_openai() for t in domain_data(DOMAIN).domain.tools]


@pytest.fixture(scope="module")
def scripted() -> Iterator[TestClient]:
    with TestClient(create_app([DOMAIN], DATA_ROOT)) as client:
        yield client


def ask(client: TestClient, **fields: Any) -> dict[str, Any]:
    body = {"model": "scripted", "messages": opening(), "tools": tools(), **fields}
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def without_volatile(reply: dict[str, Any]) -> dict[str, Any]:
    """A reply less what differs per call anyway (its id, time and tool-call ids)."""
    kept = copy.deepcopy(reply)
    for key in ("id", "created"):
        kept.pop(key)
    for call in kept["choices"][0]["message"].get("tool_calls") or []:
        call.pop("id")
    return kept


def test_the_scripted_model_returns_token_ids_and_logprobs_only_when_asked(
    scripted: TestClient,
) -> None:
    from sopgym.services.model.tokens import GENERATION_PROMPT, SPECIAL_TOKENS, token_id, tokenize

    assert SPECIAL_TOKENS["<|im_end|>"] == END_OF_TURN
    plain = ask(scripted)
    assert "prompt_token_ids" not in plain and plain["choices"][0]["logprobs"] is None
    assert "token_ids" not in plain["choices"][0]
    asked = ask(scripted, **ASK)
    choice = asked["choices"][0]
    assert without_volatile(ask(scripted)) == without_volatile(plain)  # not asked: unchanged
    assert choice["message"]["tool_calls"]  # the same decision, now with its tokens
    prompt, completion = asked["prompt_token_ids"], choice["token_ids"]
    # the boundary: the prompt ends with the generation prompt, the completion with the EOS
    assert prompt[-len(tokenize(GENERATION_PROMPT)) :] == [
        token_id(p) for p in tokenize(GENERATION_PROMPT)
    ]
    assert completion[-1] == END_OF_TURN and END_OF_TURN not in completion[:-1]
    entries = choice["logprobs"]["content"]
    assert [e["token"] for e in entries] == [f"token_id:{i}" for i in completion]
    assert all(-2.5 < e["logprob"] <= 0 and e["top_logprobs"] == [] for e in entries)
    assert asked["usage"]["prompt_tokens"] == len(prompt)
    assert asked["usage"]["completion_tokens"] == len(completion)
    again = ask(scripted, **ASK)  # deterministic: the same ids and logprobs
    assert again["prompt_token_ids"] == prompt and again["choices"][0]["logprobs"] == {
        "content": entries
    }
    texts = ask(scripted, logprobs=True)["choices"][0]  # logprobs alone: tokens as text
    assert "token_ids" not in texts and texts["logprobs"]["content"][-1]["token"] == "<|im_end|>"


def test_a_token_field_that_is_not_a_boolean_is_the_requests_400(scripted: TestClient) -> None:
    body = {"model": "scripted", "messages": opening(), "return_token_ids": "yes"}
    refused = scripted.post("/v1/chat/completions", json=body)
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "return_token_ids"


VLLM_REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "prompt_token_ids": [1, 882, 198, 2, 1, 77091, 198],
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Done."},
            "logprobs": {
                "content": [
                    {"token": "token_id:17", "logprob": -0.25, "bytes": [], "top_logprobs": []},
                    {"token": "token_id:2", "logprob": -0.5, "bytes": [], "top_logprobs": []},
                ]
            },
            "token_ids": [17, 2],
        }
    ],
    "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
}


@pytest.mark.parametrize("endpoint", [[(200, VLLM_REPLY), (200, VLLM_REPLY)]], indirect=True)
def test_record_tokens_asks_for_vllms_fields_and_records_the_turn(
    endpoint: ScriptedEndpoint,  # noqa: F811 - the fixture imported above
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    messages = [SystemMessage("Follow the SOP."), HumanMessage("Register patient P-1.")]
    plain = LLM.from_spec("openai:m", endpoint.base_url, request_timeout=10.0)
    context = AgentContext()
    invoke_model(plain, messages, context)
    assert not ASK.keys() & endpoint.received[-1][2].keys()  # off: nothing asked
    assert "tokens" not in context.usage[0]
    recording = LLM.from_spec("openai:m", endpoint.base_url, request_timeout=10.0,
                              record_tokens=True)  # fmt: skip
    context = AgentContext()
    invoke_model(recording, messages, context)
    sent = endpoint.received[-1][2]
    assert {k: sent[k] for k in ASK} == ASK
    assert context.usage[0]["tokens"] == {
        "prompt_token_ids": [1, 882, 198, 2, 1, 77091, 198],
        "completion_token_ids": [17, 2],
        "completion_logprobs": [-0.25, -0.5],
        "extends_previous": None,
    }


def test_a_turn_extends_the_previous_only_when_its_prompt_begins_with_it() -> None:
    from sopgym.runs.records import take_token_turns, token_turn

    first = token_turn([1, 5], [7, 2], [-0.1, -0.2], None)
    assert first["extends_previous"] is None
    assert token_turn([1, 5, 7, 2, 9], [3], [-0.3], first)["extends_previous"] is True
    assert token_turn([1, 5, 8, 2, 9], [3], [-0.3], first)["extends_previous"] is False
    assert token_turn(None, [3], None, first) == {
        "prompt_token_ids": None, "completion_token_ids": [3], "completion_logprobs": None,
        "extends_previous": None,
    }  # fmt: skip
    report = WorkerReport(task_id="t", llm_calls=[{"purpose": "step", "tokens": first},
                                                  {"purpose": "step"}])  # fmt: skip
    turns = take_token_turns(report)
    assert report.llm_calls == [{"purpose": "step"}, {"purpose": "step"}]
    assert turns == [{"task_id": "t", "trial": 0, "episode_id": None, "turn": 0,
                      "purpose": "step", "model": None, **first}]  # fmt: skip


def test_a_model_without_token_ids_is_refused_before_the_run() -> None:
    config = RunConfig(domains=[DOMAIN], agent="fc", model="openai:gpt-4o-mini",
                       agent_options={"record_tokens": 1})  # fmt: skip
    with pytest.raises(UsageError, match="--record-tokens needs an OpenAI-compatible"):
        validate(config)
    validate(RunConfig(domains=[DOMAIN], agent="fc", agent_options={"record_tokens": 1}))


@pytest.mark.slow
def test_a_run_with_record_tokens_writes_each_turn_and_rows_stay_as_they_were(
    tmp_path: Path,
) -> None:
    def run(run_id: str, **options: int) -> list[dict[str, Any]]:
        config = RunConfig(domains=[DOMAIN], agent="fc", model="scripted", limit=1, workers=1,
                           agent_options=options)  # fmt: skip
        sopgym.run(config, runs_dir=tmp_path, run_id=run_id)
        lines = (tmp_path / run_id / "results.jsonl").read_bytes().splitlines()
        return [orjson.loads(line) for line in lines]

    plain = run("plain")
    assert not (tmp_path / "plain" / "tokens.jsonl").exists()
    recorded = run("tokens", record_tokens=1)
    path = tmp_path / "tokens" / "tokens.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    turns = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    row = recorded[0]
    assert [t["turn"] for t in turns] == list(range(len(row["llm_calls"]))) and len(turns) > 1
    assert all(t["episode_id"] == row["episode_id"] and t["task_id"] == row["task_id"]
               for t in turns)  # fmt: skip
    for turn, call in zip(turns, row["llm_calls"], strict=True):
        assert turn["completion_token_ids"][-1] == END_OF_TURN
        assert len(turn["completion_logprobs"]) == len(turn["completion_token_ids"])
        assert call["input_tokens"] == len(turn["prompt_token_ids"])
    assert all(isinstance(t["extends_previous"], bool) for t in turns[1:])
    # the rows keep no token arrays: the same keys, the same verdict, as without the flag
    assert [sorted(c) for c in row["llm_calls"]] == [sorted(c) for c in plain[0]["llm_calls"]]
    assert row["score"] == plain[0]["score"] and row.keys() == plain[0].keys()


# ---- env-serve ----
@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with embedded_stack([DOMAIN], tmp_path_factory.mktemp("env") / "logs", DATA_ROOT) as running:
        yield running


def gold_actions(task_id: str) -> list[dict[str, Any]]:
    gold = domain_data(DOMAIN).gold[task_id]
    calls = [{"type": "tool", "name": c.name, "arguments": c.arguments} for c in gold.calls]
    return [*calls, {"type": "finish", "outputs": gold.outputs}]


def test_env_serve_answers_each_actions_tokens_in_the_step(stack: Stack) -> None:
    from sopgym.env.server import EnvPool
    from sopgym.env.server import create_app as env_app

    pool = EnvPool(make_env(stack.gateway_url, DOMAIN, DATA_ROOT).client, [DOMAIN], DATA_ROOT,
                   record_tokens=True)  # fmt: skip
    with TestClient(env_app(pool)) as client:
        opened = client.post("/reset", json={"domain": DOMAIN}).json()
        actions = gold_actions(opened["observation"]["task_id"])
        prompt: list[int] = [1, 10]
        for index, action in enumerate(actions):
            completion = [100 + index, END_OF_TURN]
            tokens = {"prompt_token_ids": prompt, "completion_token_ids": completion,
                      "completion_logprobs": [-0.5, -0.01]}  # fmt: skip
            sent = {"env_id": opened["env_id"], "action": {**action, "tokens": tokens}}
            step = client.post("/step", json=sent).json()
            assert step["info"]["tokens"] == {"turn": index, **tokens,
                                              "extends_previous": index > 0 or None}  # fmt: skip
            prompt = prompt + completion + [1, 20]
        assert step["done"] and len(step["info"]["token_turns"]) == len(actions)
        opened = client.post("/reset", json={"env_id": opened["env_id"]}).json()
        bad = {**actions[0], "tokens": {"completion_token_ids": [1, 2], "completion_logprobs": [0]}}
        refused = client.post("/step", json={"env_id": opened["env_id"], "action": bad})
        assert refused.status_code == 422
        assert refused.json()["error"]["field"] == "action.tokens.completion_logprobs"
        assert client.get(f"/state/{opened['env_id']}").json()["step_count"] == 0  # not run
    pool.client.close()


def test_without_record_tokens_an_actions_tokens_change_nothing(stack: Stack) -> None:
    env: SopgymEnv = make_env(stack.gateway_url, DOMAIN, DATA_ROOT)
    try:
        observation, _ = env.reset(seed=3)
        action = gold_actions(observation["task_id"])[0]
        tokens = {"prompt_token_ids": "not even ids"}
        _, reward, _, _, info = env.step({**action, "tokens": tokens})
        assert info == {"status": 200} and reward == 0.0
        with pytest.raises(ToolError):
            env.record_tokens = True
            env.step({**action, "tokens": tokens})
    finally:
        env.close()
        env.client.close()

"""The scripted model server's Anthropic Messages and Bedrock Converse doors, in-process: the
protocol shapes (tool_use / tool_result blocks, toolUse / toolResult, stop reasons, usage), a
tool call's round trip through each, and refusals in each API's own error shape. The provider
clients themselves run against a live server in tests/test_agents_providers.py (slow)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sopgym.agents.prompts import case_message, system_prompt
from sopgym.evaluation.llm_usage import PriceTableError, figures, read_prices
from sopgym.services.model.app import create_app
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "patient_intake"


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app([DOMAIN], DATA_ROOT))


@pytest.fixture(scope="module")
def case() -> tuple[str, str, list[dict]]:
    data = domain_data(DOMAIN)
    task = data.tasks[0]
    system = system_prompt(data.domain.output_schema)
    tools = [t.spec.rendered() for t in data.domain.tools]
    return system, case_message(data.domain.sop(), task.inputs), tools


def test_anthropic_messages_round_trip_a_tool_call(client: TestClient, case: tuple) -> None:
    system, opening, tools = case
    specs = [{"name": t["name"], "description": t["description"],
              "input_schema": t["input_schema"]} for t in tools]  # fmt: skip
    body = {"model": "claude-x", "max_tokens": 512, "system": system, "tools": specs,
            "messages": [{"role": "user", "content": opening}]}  # fmt: skip
    first = client.post("/v1/messages", json=body).json()
    assert first["type"] == "message" and first["stop_reason"] == "tool_use"
    use = next(b for b in first["content"] if b["type"] == "tool_use")
    assert use["id"].startswith("toolu_") and isinstance(use["input"], dict)
    assert first["usage"]["input_tokens"] > 0 and first["usage"]["output_tokens"] > 0
    result = {"type": "tool_result", "tool_use_id": use["id"], "content": '{"result": {}}'}
    body["messages"] += [
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [result]},
    ]
    second = client.post("/v1/messages", json=body).json()
    assert second["type"] == "message"  # the next step: the script read the result back
    assert second["content"] != first["content"]


def test_bedrock_converse_round_trip_a_tool_call(client: TestClient, case: tuple) -> None:
    system, opening, tools = case
    specs = [{"toolSpec": {"name": t["name"], "description": t["description"],
                           "inputSchema": {"json": t["input_schema"]}}} for t in tools]  # fmt: skip
    body: dict[str, Any] = {"system": [{"text": system}], "toolConfig": {"tools": specs},
            "messages": [{"role": "user", "content": [{"text": opening}]}],
            "inferenceConfig": {"maxTokens": 512, "temperature": 0}}  # fmt: skip
    first = client.post("/model/some.model-v1%3A0/converse", json=body).json()
    assert first["stopReason"] == "tool_use" and first["metrics"]["latencyMs"] >= 1
    use = next(b["toolUse"] for b in first["output"]["message"]["content"] if "toolUse" in b)
    usage = first["usage"]
    assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"] > 0
    result = {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"json": {"result": {}}}],
                             "status": "success"}}  # fmt: skip
    body["messages"] += [
        first["output"]["message"],
        {"role": "user", "content": [result]},
    ]
    assert client.post("/model/some.model-v1%3A0/converse", json=body).status_code == 200


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, "max_tokens"),
        ({"model": "m", "max_tokens": 5, "messages": []}, "messages"),
        ({"model": "m", "max_tokens": 5, "messages": [{"role": "tool", "content": "x"}]}, "role"),
        (
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{}]}]},
            "unsupported content block",
        ),
    ],
)
def test_anthropic_refusals_in_its_error_shape(client: TestClient, body: dict, says: str) -> None:
    reply = client.post("/v1/messages", json=body)
    assert reply.status_code == 400
    error = reply.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert says in error["error"]["message"]


def test_bedrock_refusals_carry_the_error_type_header(client: TestClient) -> None:
    reply = client.post("/model/m/converse", json={"messages": "no"})
    assert reply.status_code == 400 and reply.headers["x-amzn-ErrorType"] == "ValidationException"
    assert "messages" in reply.json()["message"]
    assert client.post("/model/m/converse", content=b"{").status_code == 400


def test_llm_figures_and_the_cost_estimate(tmp_path: Path) -> None:
    calls = [
        {"model": "openai:m", "input_tokens": 1000, "output_tokens": 100, "latency_s": 1.0},
        {"model": "openai:m", "input_tokens": 3000, "output_tokens": 300, "latency_s": 3.0},
        {"model": "openai:m", "latency_s": 2.0, "error": "APITimeoutError: slow"},
    ]
    out = figures(calls, {"openai:m": {"input": 1.0, "output": 10.0}})
    assert (out["calls"], out["errors"], out["input_tokens"], out["output_tokens"]) == (
        3, 1, 4000, 400)  # fmt: skip
    assert out["latency_p50_s"] == 2.0 and out["latency_p95_s"] == 3.0
    # 400 tokens over the 4 s of answered calls
    assert out["output_tokens_per_s_of_latency"] == 100.0
    assert out["cost_usd"] == pytest.approx(0.008)
    assert figures(calls, {"other": {"input": 1, "output": 1}})["cost_usd"] is None  # unpriced
    assert figures(calls)["cost_usd"] is None
    bad = tmp_path / "prices.json"
    bad.write_text('{"openai:m": {"input": -1}}')
    with pytest.raises(PriceTableError, match="non-negative"):
        read_prices(bad)

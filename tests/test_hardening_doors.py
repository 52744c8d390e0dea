"""Hardening (issue 36, point 5): malformed requests to env-serve and to the scripted model's
provider doors are 4xx in each door's own error shape, never a 500 with a traceback."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from sopgym.client import GatewayClient
from sopgym.env.server import EnvPool, create_app
from sopgym.services.model.app import create_app as create_model_app
from tests.helpers import DATA_ROOT

DOMAIN = "patient_intake"


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.fixture(scope="module")
def env_client() -> TestClient:
    # the refusals happen before any gateway call: a client to a closed port suffices
    pool = EnvPool(GatewayClient("http://127.0.0.1:9"), [DOMAIN], DATA_ROOT)
    return TestClient(create_app(pool), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def model_client() -> TestClient:
    return TestClient(create_model_app([DOMAIN], DATA_ROOT), raise_server_exceptions=False)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"domain": [DOMAIN]}, "domain"),
        ({"domain": {"x": 1}}, "domain"),
        ({"task_id": ["t1"]}, "task_id"),
        ({"task_id": {"x": 1}}, "task_id"),
        ({"env_id": ["e"]}, "env_id"),
    ],
)
def test_env_reset_with_a_list_where_a_string_goes_is_a_400(
    env_client: TestClient, body: dict, field: str
) -> None:
    reply = env_client.post("/reset", json=body)
    assert 400 <= reply.status_code < 500, reply.text
    assert reply.json()["error"]["field"] == field


BEDROCK_TURN = [{"role": "user", "content": [{"text": "hi"}]}]


@pytest.mark.parametrize(
    "body",
    [
        {"messages": BEDROCK_TURN, "toolConfig": {"tools": [{"toolSpec": {"name": "t",
                                                                           "inputSchema": "x"}}]}},
        {"messages": BEDROCK_TURN, "toolConfig": {"tools": [{"toolSpec": "x"}]}},
        {"messages": BEDROCK_TURN, "toolConfig": {"tools": [{"toolSpec": {"name": "t",
                                                                           "inputSchema": []}}]}},
        {"messages": BEDROCK_TURN, "toolConfig": ["x"]},
        {"messages": BEDROCK_TURN, "inferenceConfig": {"maxTokens": "many"}},
        {"messages": [{"role": "user", "content": [
            {"toolResult": {"toolUseId": "t1", "content": 5}}]}]},
        {"messages": [{"role": "user", "content": [
            {"toolResult": {"toolUseId": "t1", "content": {"text": "x"}}}]}]},
        {"messages": [{"role": "user", "content": [
            {"toolResult": {"toolUseId": "t1", "content": "text"}}]}]},
        {"messages": [{"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "t1", "name": "n", "input": _nested(300)}}]},
            *BEDROCK_TURN]},
    ],
)  # fmt: skip
def test_bedrock_malformed_requests_are_validation_errors(
    model_client: TestClient, body: dict
) -> None:
    reply = model_client.post("/model/m/converse", json=body)
    assert reply.status_code == 400, reply.text
    assert reply.headers["x-amzn-ErrorType"] == "ValidationException"
    assert reply.json()["message"]


def test_anthropic_tool_input_nested_300_deep_is_an_invalid_request(
    model_client: TestClient,
) -> None:
    body = {"model": "m", "max_tokens": 5, "messages": [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "n", "input": _nested(300)}]},
        {"role": "user", "content": "go on"}]}  # fmt: skip
    reply = model_client.post("/v1/messages", json=body)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["type"] == "invalid_request_error"

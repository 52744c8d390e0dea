"""Contract tests of every tool of every domain, over the tool service's HTTP API.

Each tool gets a valid call (from the gold, or the schema's ``examples`` for distractors)
and one call per error code its schema can produce.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sopgym.core.registry import domain_names, load_domain
from sopgym.services.tools.app import create_app
from tests.helpers import DATA_ROOT, domain_data

_CLIENTS: dict[str, TestClient] = {}


def client(name: str) -> TestClient:
    if name not in _CLIENTS:
        domain_data(name)
        _CLIENTS[name] = TestClient(create_app(load_domain(name), DATA_ROOT))
    return _CLIENTS[name]


def example(name: str, tool: str) -> dict[str, Any]:
    for gold in domain_data(name).gold.values():
        for call in gold.calls:
            if call.name == tool:
                return copy.deepcopy(call.arguments)
    spec = load_domain(name).tool_map()[tool].spec
    examples = spec.input_schema.get("examples")
    assert examples, f"{name}.{tool}: no gold call uses it and its schema has no examples"
    return copy.deepcopy(examples[0])


CASES = [(d, t.name) for d in domain_names() for t in load_domain(d).all_tools()]


def call(name: str, tool: str, body: Any) -> tuple[int, dict]:
    response = client(name).post(f"/v1/tools/{tool}", json=body)
    return response.status_code, response.json()


@pytest.mark.parametrize(("name", "tool"), CASES)
def test_valid_call(name: str, tool: str) -> None:
    status, body = call(name, tool, example(name, tool))
    assert status == 200, body
    assert isinstance(body["result"], dict)


@pytest.mark.parametrize(("name", "tool"), CASES)
def test_missing_and_unexpected_arguments(name: str, tool: str) -> None:
    args = example(name, tool)
    schema = load_domain(name).tool_map()[tool].spec.input_schema
    for required in schema.get("required", []):
        partial = {k: v for k, v in args.items() if k != required}
        status, body = call(name, tool, partial)
        assert (status, body["error"]["code"], body["error"]["field"]) == (
            422, "missing_argument", required)
    status, body = call(name, tool, {**args, "zz_unexpected": 1})
    assert (status, body["error"]["code"], body["error"]["field"]) == (
        422, "unexpected_argument", "zz_unexpected")


_WRONG_TYPE = {"string": 12345, "integer": "12", "number": "1.5", "boolean": "yes",
               "array": "not-a-list", "object": "not-an-object"}


@pytest.mark.parametrize(("name", "tool"), CASES)
def test_type_mismatch(name: str, tool: str) -> None:
    args = example(name, tool)
    properties = load_domain(name).tool_map()[tool].spec.input_schema.get("properties", {})
    typed = [(k, p["type"]) for k, p in properties.items() if isinstance(p.get("type"), str)]
    assert typed, "every tool should type its arguments"
    key, kind = typed[0]
    status, body = call(name, tool, {**args, key: _WRONG_TYPE[kind]})
    assert (status, body["error"]["code"], body["error"]["field"]) == (422, "type_mismatch", key)


@pytest.mark.parametrize(("name", "tool"), CASES)
def test_invalid_value(name: str, tool: str) -> None:
    args = example(name, tool)
    properties = load_domain(name).tool_map()[tool].spec.input_schema.get("properties", {})
    for key, prop in properties.items():
        if "enum" in prop:
            bad: Any = "__not_an_allowed_value__"
        elif "pattern" in prop:
            bad = "!!"
        elif "minimum" in prop:
            bad = prop["minimum"] - 1
        else:
            continue
        status, body = call(name, tool, {**args, key: bad})
        assert (status, body["error"]["code"], body["error"]["field"]) == (
            422, "invalid_value", key), body
        return
    pytest.skip("no constrained argument")


@pytest.mark.parametrize("name", domain_names())
def test_service_level_errors(name: str) -> None:
    if not load_domain(name).tools:
        pytest.skip("a tool-free domain is served by the gateway, not by a tool service")
    status, body = call(name, "no_such_tool", {})
    assert (status, body["error"]["code"]) == (404, "unknown_tool")
    tool = load_domain(name).tools[0].name
    response = client(name).post(f"/v1/tools/{tool}", content=b"{not json")
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_json")
    response = client(name).post(f"/v1/tools/{tool}", content=b"[1, 2]")
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_request")
    assert client(name).get("/readyz").status_code == 200
    listed = client(name).get("/v1/tools").json()
    assert {t["name"] for t in listed["tools"]} == {t.name for t in load_domain(name).tools}
    assert all({"openai", "anthropic", "bedrock"} <= set(t) for t in listed["tools"])

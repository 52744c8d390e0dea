"""Contract tests of every tool of every domain, over the tool service's HTTP API.

Each tool gets a valid call (from the gold, or the schema's ``examples`` for distractors)
and one call per error code its schema can produce. A stateful domain's tools act on an
episode: each call gets a fresh one, registered for the task the example comes from and
brought to the state its gold call saw.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sopgym.core.registry import domain_names, load_domain
from sopgym.core.tasks import Gold
from sopgym.services.tools.app import create_app
from tests.helpers import DATA_ROOT, domain_data

_CLIENTS: dict[str, TestClient] = {}


def client(name: str) -> TestClient:
    if name not in _CLIENTS:
        domain_data(name)
        _CLIENTS[name] = TestClient(create_app(load_domain(name), DATA_ROOT))
    return _CLIENTS[name]


def gold_use(name: str, tool: str) -> tuple[Gold, int] | None:
    """A gold call of ``tool`` with the fewest calls before it (the cheapest episode to
    replay up to it): its gold and the call's index."""
    uses = [(index, gold) for gold in domain_data(name).gold.values()
            for index, call in enumerate(gold.calls) if call.name == tool]  # fmt: skip
    if not uses:
        return None
    index, gold = min(uses, key=lambda use: use[0])
    return gold, index


def example(name: str, tool: str) -> dict[str, Any]:
    use = gold_use(name, tool)
    if use is not None:
        gold, index = use
        return copy.deepcopy(gold.calls[index].arguments)
    spec = load_domain(name).tool_map()[tool].spec
    examples = spec.input_schema.get("examples")
    assert examples, f"{name}.{tool}: no gold call uses it and its schema has no examples"
    return copy.deepcopy(examples[0])


def _cases() -> list[tuple[str, str]]:
    """Every tool of every domain; a tool object several packs share (the banking family's
    financial distractors) is tested once, through the first pack that has it."""
    seen: set[int] = set()
    cases = []
    for name in domain_names():
        for item in load_domain(name).all_tools():
            if id(item) not in seen:
                seen.add(id(item))
                cases.append((name, item.name))
    return cases


CASES = _cases()


_EPISODES = itertools.count()
EPISODE = "x-sopgym-episode"


def call(name: str, tool: str, body: Any) -> tuple[int, dict]:
    episode = episode_before(name, tool) if load_domain(name).stateful else None
    headers = {EPISODE: episode} if episode else {}
    response = client(name).post(f"/v1/tools/{tool}", json=body, headers=headers)
    if episode:
        assert client(name).delete(f"/v1/episodes/{episode}").status_code == 200
    return response.status_code, response.json()


def episode_before(name: str, tool: str) -> str:
    """A fresh episode at the service, in the state the tool's first gold call saw (for a
    distractor: the first task's initial state)."""
    data = domain_data(name)
    gold, index = gold_use(name, tool) or (data.gold[data.tasks[0].id], 0)
    episode = f"contract-{next(_EPISODES)}"
    opened = client(name).post("/v1/episodes", json={"episode_id": episode,
                                                      "task_id": gold.task_id})  # fmt: skip
    assert opened.status_code == 201, opened.text
    for before in gold.calls[:index]:
        replayed = client(name).post(f"/v1/tools/{before.name}", json=before.arguments,
                                     headers={EPISODE: episode})  # fmt: skip
        assert replayed.status_code == 200, replayed.text
    return episode


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

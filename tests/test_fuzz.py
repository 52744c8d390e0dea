"""Schemathesis against a real tool service and the gateway in front of it, each held to its
own OpenAPI document: no 5xx, no undocumented status, bodies of the documented shape. A
bounded number of cases here; ``bench/fuzz.py`` runs thousands per service."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from sopgym.core.access import SECRET_HEADER
from sopgym.orchestration.fuzz import episode_preparer, fuzz
from sopgym.orchestration.stack import Stack, embedded_stack
from tests.helpers import DATA_ROOT, domain_data, task_id

DOMAIN = "customer_service"  # tools and distractors with patterns, enums, integers
CASES = 300


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    domain_data(DOMAIN)
    with embedded_stack([DOMAIN], tmp_path_factory.mktemp("logs"), DATA_ROOT) as running:
        yield running


def test_the_documents_describe_every_tool_and_route(stack: Stack) -> None:
    tools = httpx.get(f"{stack.services[DOMAIN]}/openapi.json").json()
    for tool in domain_data(DOMAIN).domain.all_tools():
        operation = tools["paths"][f"/v1/tools/{tool.name}"]["post"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert body == tool.spec.input_schema, tool.name
    gateway = httpx.get(f"{stack.gateway_url}/openapi.json").json()
    assert gateway["openapi"] == tools["openapi"] == "3.1.0"
    assert "/v1/episodes/{episode_id}/tools/{tool_name}" in gateway["paths"]


def test_fuzzing_the_tool_service_finds_no_server_error(stack: Stack) -> None:
    secret = {SECRET_HEADER.decode(): stack.service_secret}
    counts = fuzz(f"{stack.services[DOMAIN]}/openapi.json", CASES, headers=secret,
                  per_operation=8)  # fmt: skip
    assert counts.cases >= CASES and counts.server_errors == 0, counts.to_json()
    assert counts.failures == []
    assert counts.statuses[200] > 0 and counts.statuses[422] > 0, "valid and invalid reached"


def test_fuzzing_the_gateway_finds_no_server_error(stack: Stack) -> None:
    prepare = episode_preparer(stack.gateway_url, DOMAIN, task_id(DOMAIN, 0))
    counts = fuzz(f"{stack.gateway_url}/openapi.json", CASES, prepare, per_operation=8)
    assert counts.cases >= CASES and counts.server_errors == 0, counts.to_json()
    assert counts.failures == []
    assert counts.statuses[200] > 0 and counts.statuses[409] > 0, "episodes were worked"

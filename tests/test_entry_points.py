"""The services' own entry points (``services/*/main.py``, ``gateway/main.py``): what the
commands and the images start, callable from Python, refusing a mistake before anything
listens (the command-line side is in test_task_kinds.py and test_deploy_processes.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from sopgym.core.exceptions import UsageError
from sopgym.gateway.main import GatewaySettings, parse_services, serve_gateway
from sopgym.services.model.main import serve_model
from sopgym.services.tools.main import serve_tools, tool_service_app
from sopgym.services.user.main import serve_users


def test_parse_services_takes_replicas_and_names_a_malformed_item() -> None:
    given = ["ledger=http://a:1/,http://b:2", "crm=http://c:3"]
    assert parse_services(given) == {"ledger": ["http://a:1", "http://b:2"], "crm": ["http://c:3"]}
    for bad in ("ledger", "ledger=a:1", "ledger=http://a:1,b:2"):
        with pytest.raises(UsageError, match="DOMAIN=URL"):
            parse_services([bad])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (GatewaySettings(services={}), "at least one --service or --local-domain"),
        (GatewaySettings(services={}, local_domains=["nowhere"]), "unknown domain 'nowhere'"),
        (GatewaySettings({"ledger": ["http://127.0.0.1:1"]}, user_sim="sim:1"), "--user-sim"),
        (GatewaySettings({"ledger": ["http://127.0.0.1:1"]}, faults="nonsense"), "fault"),
    ],
)
def test_the_gateway_refuses_its_settings_before_discovery(
    settings: GatewaySettings, message: str
) -> None:
    """Each refusal comes before the gateway waits for a (here unreachable) tool service."""
    with pytest.raises(UsageError, match=message):
        serve_gateway(settings)


def test_one_or_several_domains_tools_are_served_as_the_command_serves_them() -> None:
    alone = TestClient(tool_service_app(["ledger"]))
    tools = alone.get("/v1/tools").json()
    assert tools and alone.get("/readyz").json()["domain"] == "ledger"
    grouped = TestClient(tool_service_app(["ledger", "crm", "ledger"]))
    assert grouped.get("/domains/ledger/v1/tools").json() == tools
    assert grouped.get("/domains/crm/readyz").json()["domain"] == "crm"


@pytest.mark.parametrize(
    "start",
    [
        lambda: serve_tools([]),
        lambda: serve_tools(["ledger", "nowhere"]),
        lambda: serve_model(["nowhere"]),
        lambda: serve_model(profile="no-such-profile"),
        lambda: serve_users(["nowhere"]),
        lambda: serve_users(["ledger"]),  # no simulated user
    ],
    ids=["no_domain", "unknown_domain", "model_domain", "model_profile", "user_domain",
         "not_dialogue"],
)
def test_a_server_refuses_a_mistake_before_it_listens(start: Callable[[], None]) -> None:
    with pytest.raises(UsageError):
        start()

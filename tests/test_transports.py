"""The transport registry (sopgym.client.transports) and the one retry policy every client uses."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from sopgym.client import GatewayClient, connect
from sopgym.client.over_mcp import McpGatewayClient
from sopgym.client.retry import RetryPolicy
from sopgym.client.transports import (
    TRANSPORTS,
    GatewayClientProtocol,
    UnknownTransport,
    transport,
)
from sopgym.core.errors import DOWN_CODE
from sopgym.core.exceptions import UsageError


@dataclass
class FakeStack:
    gateway_url: str = "http://127.0.0.1:1"
    grpc_target: str | None = "127.0.0.1:2"


def test_every_registered_transport_names_an_importable_client() -> None:
    import importlib

    for entry in TRANSPORTS.values():
        module, _, name = entry.client.partition(":")
        factory = getattr(importlib.import_module(module), name)
        for method in ("open", "record", "tasks", "close"):  # the protocol's methods
            assert callable(getattr(factory, method)), (entry.name, method)


def test_the_registry_says_which_door_and_address_each_transport_uses() -> None:
    stack = FakeStack()
    assert transport("http").address(stack) == stack.gateway_url
    assert transport("mcp").address(stack) == stack.gateway_url  # MCP is mounted on HTTP
    assert transport("grpc").address(stack) == stack.grpc_target
    assert [t.name for t in TRANSPORTS.values() if t.needs_grpc_door] == ["grpc"]
    with pytest.raises(UsageError, match="no gRPC door"):
        transport("grpc").address(FakeStack(grpc_target=None))


def test_an_unknown_transport_is_the_users_mistake_said_plainly() -> None:
    known = r"'pigeon' \(known: grpc, http, mcp; or module:attr\)"
    with pytest.raises(UnknownTransport, match=known):
        connect("http://127.0.0.1:1", "pigeon")
    with pytest.raises(UnknownTransport, match=r"'htp' \(did you mean http\? known: "):
        connect("http://127.0.0.1:1", "htp")
    assert issubclass(UnknownTransport, ValueError)  # callers' `except ValueError` still hold


def test_connect_builds_each_transports_client() -> None:
    http = connect("http://127.0.0.1:1", "http", retries=0)
    mcp = connect("http://127.0.0.1:1", "mcp", retries=0)
    try:
        assert type(http) is GatewayClient and isinstance(mcp, McpGatewayClient)
        clients: list[GatewayClientProtocol] = [http, mcp]  # both satisfy the protocol
        assert all(c.base_url == "http://127.0.0.1:1" for c in clients)
    finally:
        http.close()
        mcp.close()


def test_the_cli_takes_the_registrys_transports_and_refuses_others_in_one_line() -> None:
    from click.testing import CliRunner

    from sopgym.cli import main
    from sopgym.cli.validation import PluginName

    for command in ("run", "agent-worker"):
        option = next(p for p in main.commands[command].params if p.name == "transport")
        assert isinstance(option.type, PluginName) and option.type.plugins.registered is TRANSPORTS
    refused = CliRunner().invoke(main, ["run", "--transport", "grcp"])
    assert refused.exit_code == 2
    assert "unknown transport 'grcp' (did you mean grpc? known: grpc, http, mcp" in refused.output


def test_retry_policy_backs_off_and_gives_up_on_a_down_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    policy = RetryPolicy(retries=3, backoff=0.1)
    assert list(policy.attempts()) == [0, 1, 2, 3]
    assert slept == pytest.approx([0.1, 0.2, 0.4])  # no sleep before the first try
    assert not policy.gives_up(0, "rate_limited")
    assert policy.gives_up(0, DOWN_CODE)  # a service that is down is not transient
    assert policy.gives_up(3, "rate_limited")  # the budget spent

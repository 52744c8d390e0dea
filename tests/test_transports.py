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
    with pytest.raises(UnknownTransport, match=r"'pigeon' \(known: http, grpc, mcp\)"):
        connect("http://127.0.0.1:1", "pigeon")
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


def test_the_cli_offers_the_registry_as_its_transport_choices() -> None:
    import click

    from sopgym.cli import main

    run = main.commands["run"]
    option = next(p for p in run.params if p.name == "transport")
    assert isinstance(option.type, click.Choice)
    assert list(option.type.choices) == list(TRANSPORTS)


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

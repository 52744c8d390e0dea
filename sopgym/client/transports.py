"""The transports an agent worker can reach the gateway by: one registry that the CLI's
``--transport`` choices, the stack, the runner, the load test and the replicas read, instead of
comparing names (``transport == "grpc"``) in each.

Each :class:`Transport` names its client (imported on first use: gRPC pulls in grpcio), the
gateway door that serves it (``http``: the HTTP port, which also mounts MCP; ``grpc``: the gRPC
port, started only when a run asks for it) and the stack address it dials. Adding a transport
is a client module plus one entry here. httpx's ``BaseTransport`` is the model:
:class:`GatewayClientProtocol` is what every client offers, whatever carries its bytes.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sopgym.core.exceptions import UsageError
from sopgym.types import JSON

if TYPE_CHECKING:
    from sopgym.client import Episode


class GatewayClientProtocol(Protocol):
    """What every transport's gateway client offers (:class:`~sopgym.client.GatewayClient`,
    :class:`~sopgym.client.over_grpc.GrpcGatewayClient`, ...). Every transport's episodes are
    :class:`~sopgym.client.Episode` s (a subclass overrides the calls' transport part)."""

    base_url: str

    def open(
        self,
        task_id: str,
        domain: str,
        *,
        distractors: int | None = None,
        sop_variant: str = "clean",
        meta: JSON | None = None,
    ) -> Episode: ...

    def record(self, episode_id: str, token: str, replica: str | None = None) -> JSON: ...

    def tasks(self, domain: str) -> list[JSON]: ...

    def close(self) -> None: ...


class HasGatewayAddresses(Protocol):
    """A stack, embedded or replicated: where its gateway's doors listen."""

    gateway_url: str
    grpc_target: str | None


class UnknownTransport(UsageError, ValueError):
    """A transport name no entry of :data:`TRANSPORTS` answers to."""


@dataclass(frozen=True)
class Transport:
    name: str
    client: str  # "module:Class" of its gateway client
    door: str  # the gateway door that serves it: "http" (MCP is mounted there) or "grpc"
    replicable: bool = True  # the replicated stack's proxy balances this door

    def connect(self, address: str, **options: Any) -> GatewayClientProtocol:
        """A client for the gateway at ``address`` (a base URL, or ``host:port`` for gRPC)."""
        module, _, name = self.client.partition(":")
        factory = getattr(importlib.import_module(module), name)
        client: GatewayClientProtocol = factory(address, **options)
        return client

    @property
    def needs_grpc_door(self) -> bool:
        return self.door == "grpc"

    def address(self, stack: HasGatewayAddresses) -> str:
        """The address of ``stack``'s gateway this transport dials."""
        if self.door == "grpc":
            if stack.grpc_target is None:
                raise UsageError(f"the stack serves no gRPC door for transport {self.name!r}")
            return stack.grpc_target
        return stack.gateway_url


TRANSPORTS: dict[str, Transport] = {
    "http": Transport("http", "sopgym.client:GatewayClient", door="http"),
    "grpc": Transport("grpc", "sopgym.client.over_grpc:GrpcGatewayClient", door="grpc"),
    "mcp": Transport("mcp", "sopgym.client.over_mcp:McpGatewayClient", door="http",
                     replicable=False),
}


def transport(name: str) -> Transport:
    """The registered transport ``name``; an unknown one is the user's mistake, said plainly."""
    try:
        return TRANSPORTS[name]
    except KeyError:
        known = ", ".join(TRANSPORTS)
        raise UnknownTransport(f"unknown transport {name!r} (known: {known})") from None

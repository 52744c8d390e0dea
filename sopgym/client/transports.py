"""The transports an agent worker can reach the gateway by: one registry that the CLI's
``--transport`` choices, the stack, the runner, the load test and the replicas read, instead of
comparing names (``transport == "grpc"``) in each.

Each :class:`Transport` names its client (imported on first use: gRPC pulls in grpcio), the
gateway door that serves it (``http``: the HTTP port, which also mounts MCP; ``grpc``: the gRPC
port, started only when a run asks for it) and the stack address it dials. Transports are one
kind of the plug-in registry (:mod:`sopgym.core.plugins`): ours are registered here; a package
adds its own under the entry-point group ``sopgym.transports``, and ``--transport
module:attr`` names a :class:`Transport` (or a client class, served by the HTTP door) anywhere.
httpx's ``BaseTransport`` is the model:
:class:`GatewayClientProtocol` is what every client offers, whatever carries its bytes.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sopgym.core.exceptions import UsageError
from sopgym.core.plugins import NotAPlugin, Plugins
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


def _transport(spec: str, loaded: Any) -> Transport:
    """A transport of a loaded object: a :class:`Transport`, or a gateway client class (its
    door the HTTP one, where MCP is mounted too)."""
    if isinstance(loaded, Transport):
        return loaded
    if inspect.isclass(loaded) and callable(getattr(loaded, "open", None)):
        return Transport(spec, f"{loaded.__module__}:{loaded.__qualname__}", door="http")
    raise NotAPlugin("not a Transport nor a gateway client class (one with open())")


TRANSPORT_PLUGINS: Plugins[Transport] = Plugins(
    "transport", "sopgym.transports", _transport, UnknownTransport
)
for _ours in (
    Transport("http", "sopgym.client:GatewayClient", door="http"),
    Transport("grpc", "sopgym.client.over_grpc:GrpcGatewayClient", door="grpc"),
    Transport("mcp", "sopgym.client.over_mcp:McpGatewayClient", door="http", replicable=False),
):
    TRANSPORT_PLUGINS.register(_ours.name, _ours)
TRANSPORTS: dict[str, Transport] = TRANSPORT_PLUGINS.registered  # ours, by name


def transport(name: str) -> Transport:
    """The transport ``name`` names (registered, installed or ``module:attr``); an unknown
    one is the user's mistake, said plainly."""
    return TRANSPORT_PLUGINS.resolve(name)

"""The gateway's entry point: what ``sopgym gateway`` (and the gateway image) starts.

:class:`GatewaySettings` holds everything a gateway process is told (the command's options and
their environment variables map onto it one to one); :func:`serve_gateway` discovers the tool
services, adds the tool-free domains it serves itself and runs the gateway's HTTP server (and
gRPC, when asked) until stopped. A Python caller starts the same gateway without the command.

Refusals are :class:`~sopgym.core.exceptions.UsageError` (a malformed ``--service``, an
unknown local domain or user-simulator URL), raised before anything listens; a tool service that
never lists its tools is :class:`~sopgym.gateway.catalog.DiscoveryError` and a port that cannot
be bound :class:`~sopgym.gateway.server.ServerError` (both infrastructure errors); a local
domain that has tools is a ``ValueError`` (it needs its tool service).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sopgym.core.exceptions import UsageError


@dataclass(frozen=True)
class GatewaySettings:
    """One gateway process's settings (``sopgym gateway --help`` explains each)."""

    services: dict[str, list[str]]  # domain -> its tool service's replicas' base URLs
    local_domains: Sequence[str] = ()  # tool-free domains: names, families or globs
    host: str = "127.0.0.1"
    port: int = 8000
    grpc_port: int | None = None
    data_root: Path | None = None
    distractors: int = 0
    seed: int = 0
    user_sim: str | None = None  # the user simulator's base URL (dialogue episodes)
    faults: str | None = None  # a fault spec (docs/reliability.md)
    discover_wait: float = 30.0  # seconds, all services together
    keep_episodes: int = 100_000
    keep_mib: int = 256
    advertise_url: str | None = None  # this replica's own base URLs (replicated gateways)
    advertise_grpc: str | None = None


def parse_services(items: Sequence[str]) -> dict[str, list[str]]:
    """``DOMAIN=URL[,URL...]`` items (one a domain; several URLs are its replicas) as a
    mapping, or :class:`UsageError` naming the item that is not of that form."""
    urls: dict[str, list[str]] = {}
    for item in items:
        name, sep, given = item.partition("=")
        replicas = [url.rstrip("/") for url in given.split(",")]
        if not sep or not all(url.startswith("http") for url in replicas):
            raise UsageError(f"--service takes DOMAIN=URL[,URL...], got {item!r}")
        urls[name] = replicas
    return urls


def serve_gateway(
    settings: GatewaySettings, on_wait: Callable[[str, str, str], None] | None = None
) -> None:
    """Run the gateway of ``settings`` until stopped; ``on_wait(domain, url, why)`` hears of
    each tool service not answering yet during discovery."""
    from sopgym.core.access import ADMIN_TOKEN_ENV, handed_secret, service_secret
    from sopgym.core.registry import select_domains
    from sopgym.gateway.app import Gateway
    from sopgym.gateway.catalog import discover
    from sopgym.gateway.faults import parse_faults
    from sopgym.gateway.local import with_local_domains
    from sopgym.gateway.server import serve, tune_gc
    from sopgym.observability.tracing import setup_tracing

    if not settings.services and not settings.local_domains:
        raise UsageError("give at least one --service or --local-domain")
    local = select_domains(settings.local_domains) if settings.local_domains else []
    if settings.user_sim is not None and not settings.user_sim.startswith("http"):
        raise UsageError(f"--user-sim takes the simulator's base URL, got {settings.user_sim!r}")
    plan = parse_faults(settings.faults) if settings.faults else None
    setup_tracing("sopgym-gateway")
    urls: dict[str, str | list[str]] = dict(settings.services)
    discovered = discover(urls, settings.discover_wait, on_wait=on_wait)
    catalog = with_local_domains(discovered, local, settings.data_root)
    advertised = (("http", settings.advertise_url), ("grpc", settings.advertise_grpc))
    app = Gateway(
        catalog,
        settings.distractors,
        handed_secret(ADMIN_TOKEN_ENV),
        settings.grpc_port,
        settings.host,
        user_sim=settings.user_sim,
        seed=settings.seed,
        faults=plan,
        service_secret=service_secret(),  # sent to the tool services on every request
        keep_episodes=settings.keep_episodes,
        keep_bytes=settings.keep_mib * 2**20,
        replica={k: v for k, v in advertised if v} or None,
    )
    tune_gc()
    serve(app, settings.host, settings.port)

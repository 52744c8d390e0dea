"""The commands the stack and the containers start for the tool services and the gateway:
``serve-tools`` and ``gateway``. Each parses its options and calls its service's own entry
point (``services/tools/main.py``, ``gateway/main.py``), which a Python caller can use too."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from sopgym.cli.common import entry_point_errors
from sopgym.cli.validation import (
    DATA_ROOT,
    HOST,
    PORT,
    SECONDS,
    fault_spec,
    port_option,
)
from sopgym.core.tools import DEFAULT_TOOL_TIMEOUT_S
from sopgym.services.tools.episodes import DEFAULT_IDLE_TIMEOUT_S
from sopgym.terminal import console


@click.command("serve-tools")
@click.argument("domains", nargs=-1, required=True)
@HOST
@port_option(8100)
@DATA_ROOT
@click.option(
    "--episode-idle-timeout",
    "idle_timeout",
    default=DEFAULT_IDLE_TIMEOUT_S,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds after its last use that an episode the gateway never closed is freed.",
)
@click.option(
    "--tool-timeout",
    default=DEFAULT_TOOL_TIMEOUT_S,
    show_default=True,
    envvar="SOPGYM_TOOL_TIMEOUT",
    type=SECONDS,
    help="Seconds a tool may take on one call before it is answered 504 tool_timeout "
    "($SOPGYM_TOOL_TIMEOUT; keep it under the gateway's 30 s upstream limit).",
)
def serve_tools(
    domains: tuple[str, ...],
    host: str,
    port: int,
    data_root: Path | None,
    idle_timeout: float,
    tool_timeout: float,
) -> None:
    """Serve one domain's tools over HTTP, or several domains' in one process, each under
    /domains/<name with / as __>."""
    from sopgym.services.tools.main import serve_tools as serve

    with entry_point_errors():
        serve(domains, host, port, data_root, idle_timeout, tool_timeout)


@click.command()
@HOST
@port_option(8000)
@click.option(
    "--service",
    "services",
    multiple=True,
    envvar="SOPGYM_GATEWAY_SERVICES",
    help="DOMAIN=URL of a tool service (DOMAIN=URL,URL,...: its replicas, each episode pinned "
    "to one); repeat for each domain ($SOPGYM_GATEWAY_SERVICES: space-separated).",
)
@click.option(
    "--advertise-url",
    default=None,
    envvar="SOPGYM_GATEWAY_ADVERTISE_URL",
    help="This replica's own base URL, returned at episode open so the episode's later "
    "requests reach this replica (replicated gateways; $SOPGYM_GATEWAY_ADVERTISE_URL).",
)
@click.option(
    "--advertise-grpc",
    default=None,
    envvar="SOPGYM_GATEWAY_ADVERTISE_GRPC",
    help="As --advertise-url, for gRPC: this replica's host:port ($SOPGYM_GATEWAY_ADVERTISE_GRPC).",
)
@click.option(
    "--local-domain",
    "local_domains",
    multiple=True,
    envvar="SOPGYM_GATEWAY_LOCAL_DOMAINS",
    help="Tool-free domains (answer-only, one-shot) the gateway serves itself: a name, a "
    "family or a glob; repeatable ($SOPGYM_GATEWAY_LOCAL_DOMAINS: space-separated).",
)
@DATA_ROOT
@click.option(
    "--distractors",
    default=0,
    show_default=True,
    type=click.IntRange(0),
    help="Extra, unneeded tools in each episode's catalog when its opener names no count.",
)
@click.option("--seed", default=0, show_default=True, help="Salts each task's distractor draw.")
@click.option("--grpc-port", type=PORT, default=None, help="Also serve the gRPC API on this port.")
@click.option(
    "--user-sim",
    default=None,
    envvar="SOPGYM_USER_SIM",
    help="Base URL of the user simulator that dialogue episodes talk to ($SOPGYM_USER_SIM).",
)
@click.option(
    "--faults",
    default=None,
    callback=fault_spec,
    help="Inject latency and failures into tool calls (docs/reliability.md), drawn from --seed.",
)
@click.option(
    "--discover-wait",
    default=30.0,
    show_default=True,
    envvar="SOPGYM_GATEWAY_DISCOVER_WAIT",
    type=click.FloatRange(0),
    help="Seconds to wait, all services together, for the tool services to list their tools "
    "at start-up ($SOPGYM_GATEWAY_DISCOVER_WAIT; compose and k8s start them together).",
)
@click.option(
    "--keep-episodes",
    default=100_000,
    show_default=True,
    envvar="SOPGYM_GATEWAY_KEEP_EPISODES",
    type=click.IntRange(1),
    help="Episodes whose records the gateway holds (open and finished; the oldest go first).",
)
@click.option(
    "--keep-mib",
    default=256,
    show_default=True,
    envvar="SOPGYM_GATEWAY_KEEP_MIB",
    type=click.IntRange(1),
    help="MiB the finished episodes' (compressed) records may hold; the oldest go first.",
)
def gateway(
    host: str,
    port: int,
    services: tuple[str, ...],
    local_domains: tuple[str, ...],
    data_root: Path | None,
    distractors: int,
    seed: int,
    grpc_port: int | None,
    user_sim: str | None,
    faults: str | None,
    discover_wait: float,
    keep_episodes: int,
    keep_mib: int,
    advertise_url: str | None,
    advertise_grpc: str | None,
) -> None:
    """Serve the gateway in front of the given tool services and tool-free domains (HTTP,
    and gRPC if asked)."""
    from sopgym.gateway.main import GatewaySettings, parse_services, serve_gateway

    def waiting(domain: str, url: str, why: str) -> None:
        console.print(f"waiting for tool service {domain} at {url} ({escape(why)})")

    with entry_point_errors():
        settings = GatewaySettings(
            parse_services(services), local_domains, host, port, grpc_port, data_root,
            distractors, seed, user_sim, faults, discover_wait, keep_episodes, keep_mib,
            advertise_url, advertise_grpc,
        )  # fmt: skip
        serve_gateway(settings, on_wait=waiting)

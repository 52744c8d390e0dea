"""The tool service's entry point: what ``sopgym serve-tools`` (and the tools image) starts.

One domain's tools, or several domains' in one process (each under ``/domains/<name with /
as __>``), behind the shared uvicorn settings of :mod:`sopgym.serving`. A Python caller starts
the same server with :func:`serve_tools`; the command only parses options into its arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sopgym.core.tools import DEFAULT_TOOL_TIMEOUT_S
from sopgym.services.tools.episodes import DEFAULT_IDLE_TIMEOUT_S


def tool_service_app(
    domains: Sequence[str],
    data_root: Path | None = None,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT_S,
) -> Any:
    """The ASGI app serving ``domains``' tools (one app, or a group of them), with server
    spans when this process traces (set tracing up first).
    :class:`~sopgym.core.errors.UnknownDomainError` (a usage error) for a name no pack has."""
    from sopgym.core.access import service_secret
    from sopgym.core.registry import load_domain
    from sopgym.observability.asgi import traced
    from sopgym.services.tools.app import create_app
    from sopgym.services.tools.group import ToolServiceGroup

    packs = {name: load_domain(name) for name in dict.fromkeys(domains)}
    secret = service_secret()  # set: only the gateway may call
    apps = {
        name: traced(
            create_app(pack, data_root, idle_timeout, secret, tool_timeout), "sopgym.tools"
        )
        for name, pack in packs.items()
    }
    return next(iter(apps.values())) if len(apps) == 1 else ToolServiceGroup(apps)


def serve_tools(
    domains: Sequence[str],
    host: str = "127.0.0.1",
    port: int = 8100,
    data_root: Path | None = None,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT_S,
) -> None:
    """Serve ``domains``' tools on ``host:port`` until stopped (traced as ``sopgym-tools``).
    A name no pack has is refused (a usage error) before tracing or the server starts."""
    from sopgym.core.access import drop_privileges
    from sopgym.core.exceptions import UsageError
    from sopgym.core.imported import PREFIXES as IMPORTED_PREFIXES
    from sopgym.core.registry import load_domain
    from sopgym.observability.tracing import setup_tracing
    from sopgym.serving import serve

    names = list(dict.fromkeys(domains))
    if not names:
        raise UsageError("name at least one domain to serve")
    for name in names:
        load_domain(name)
    if any(name.startswith(IMPORTED_PREFIXES) for name in names):
        # its benchmark's tools.py is foreign code running here: even as root it must not
        # trace or read the gateway's memory (the admin token) or anyone else's
        drop_privileges()
    setup_tracing("sopgym-tools", {"sopgym.domain": names[0]} if len(names) == 1 else {})
    serve(tool_service_app(names, data_root, idle_timeout, tool_timeout), host, port)

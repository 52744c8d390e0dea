"""Several domains' tool services in one process: each its own app over its own data.

A tool service process holds the interpreter, the web stack and pandas (about 110 MB) before
any domain's data; one process per domain multiplied that by the domain count. A group shares
that base and keeps each domain apart all the same: every domain is a whole
:class:`~sopgym.services.tools.app.ToolService` (its own tools, dataset, episode registry and
read-only context), mounted under ``/domains/<slug>`` (:func:`mount_path`), where it answers
exactly as a one-domain service answers at ``/``. The gateway takes such a mount as the
domain's service URL, so nothing past this router knows the domains share a process.

An imported domain is never in a group: its benchmark's ``tools.py`` is foreign code running
in its service's process, where it could patch another domain's tools or read its state.
"""

from __future__ import annotations

from sopgym.asgi import ASGIApp, Receive, Scope, Send, respond
from sopgym.core.errors import ToolError
from sopgym.core.exceptions import UsageError
from sopgym.core.imported import PREFIXES as IMPORTED_PREFIXES
from sopgym.core.jsonio import dumps

MOUNT_PREFIX = "/domains/"


def mount_path(domain: str) -> str:
    """Where a group serves ``domain``: ``/domains/<name with / as __>``, one path segment."""
    return MOUNT_PREFIX + domain.replace("/", "__")


class ToolServiceGroup:
    """Routes ``/domains/<slug>/...`` to that domain's app, with the path below the mount (as
    the app sees it served alone); ``/healthz`` and ``/readyz`` answer for the process."""

    def __init__(self, apps: dict[str, ASGIApp]) -> None:
        foreign = [name for name in apps if name.startswith(IMPORTED_PREFIXES)]
        if foreign and len(apps) > 1:
            raise UsageError(
                f"{foreign[0]} runs its benchmark's own tools.py: it is served alone, "
                "in a tool service of its own, never beside another domain"
            )
        self.apps = {mount_path(domain)[len(MOUNT_PREFIX) :]: app for domain, app in apps.items()}
        self.domains = sorted(apps)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # the apps hold nothing to start or stop
            await _lifespan(receive, send)
            return
        path: str = scope.get("path", "")
        if path.startswith(MOUNT_PREFIX):
            slug, slash, rest = path[len(MOUNT_PREFIX) :].partition("/")
            app = self.apps.get(slug)
            if app is not None:
                scope["path"] = slash + rest or "/"  # the request as the app alone sees it
                await app(scope, receive, send)
                return
        if scope["type"] != "http":
            return
        if path in ("/healthz", "/readyz"):
            status = "ok" if path == "/healthz" else "ready"
            await respond(send, 200, dumps({"status": status, "domains": self.domains}))
            return
        served = ", ".join(mount_path(d) for d in self.domains)
        refusal = ToolError("not_found", f"no domain at {path}; this service has {served}")
        await respond(send, refusal.status, dumps(refusal.to_body()))


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return

"""The shared secret that proves a request to a tool service came from the gateway.

Agents reach tools only through the gateway, which checks each episode's bearer token and
records every call; a tool service reachable on the network would otherwise take a call from
anyone, with any ``x-sopgym-episode`` header, acting on an episode's state behind the
gateway's back. So the stack that starts both (the embedded stack, compose) hands them one
secret by environment; the gateway sends it on every request it makes to a service, and a
service given a secret refuses any tool call or episode request without it.
"""

from __future__ import annotations

import hmac
import secrets

from sopgym.core.errors import ToolError

SERVICE_SECRET_ENV = "SOPGYM_SERVICE_SECRET"
SECRET_HEADER = b"x-sopgym-gateway-secret"


def new_secret() -> str:
    """A fresh secret, for one run's stack."""
    return secrets.token_urlsafe(32)


def secret_line(secret: str | None) -> bytes:
    """The ready-encoded header line the gateway adds to its requests (empty without one)."""
    return SECRET_HEADER + b": " + secret.encode() + b"\r\n" if secret else b""


def check_secret(expected: str | None, given: bytes | None) -> None:
    """Refuse a request whose secret is missing (401) or wrong (403), in constant time; a
    service started without a secret (tests, direct use) takes every request."""
    if not expected:
        return
    if given is None:
        raise ToolError("unauthorized", "tool services answer only the gateway: missing secret")
    if not hmac.compare_digest(given, expected.encode()):
        raise ToolError("forbidden", "tool services answer only the gateway: wrong secret")

"""The few ASGI pieces shared by sopgym's hand-routed hot paths (gateway, tool services).

Both sit on every tool call's path, where a framework's routing, request objects and
dependency machinery cost more than the work itself; these helpers are all they need.
"""

from __future__ import annotations

from sopgym.core.exceptions import InfrastructureError, MalformedRequest
from sopgym.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ASGIApp", "Message", "Receive", "Scope", "Send"]

JSON_TYPE = (b"content-type", b"application/json")
# Tool arguments and episode requests are small JSON; a cap keeps one request from taking a
# server's memory (uvicorn, under the tool services, buffers a body of any size).
MAX_API_BODY = 16 * 1024 * 1024


class BodyTooLarge(MalformedRequest, ValueError):
    """A request body passed the limit :func:`read_body` was given."""


class ClientDisconnected(InfrastructureError, ConnectionError):
    """The client left before its request body was complete: what came is a prefix, and
    acting on it (a protobuf prefix parses; so may a JSON one) would act on a request never
    made. There is no one left to answer either."""


async def read_body(receive: Receive, limit: int | None = None) -> bytes:
    """The whole request body; past ``limit`` bytes, :class:`BodyTooLarge` instead of reading
    on; :class:`ClientDisconnected` if the client leaves first."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected("the client left before its request body was complete")
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise BodyTooLarge(f"request body over {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of a request header (``name`` lower-case, as ASGI gives them)."""
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


async def respond(
    send: Send, status: int, payload: bytes, content_type: tuple[bytes, bytes] = JSON_TYPE
) -> None:
    """Send a whole response; with its length declared, the server need not chunk it, and
    the client knows where it ends without reading a terminating chunk."""
    headers = [content_type, (b"content-length", b"%d" % len(payload))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})

"""The core vocabulary's types, in one place: JSON values and the ASGI callables.

The ASGI types use the same ``MutableMapping`` shapes as Starlette, so a FastAPI app and our
hand-routed apps are interchangeable where an ``ASGIApp`` is expected.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TypeAlias

JSON: TypeAlias = dict[str, Any]
"""A JSON object as parsed (orjson, json): string keys, any JSON values."""

Scope: TypeAlias = MutableMapping[str, Any]
Message: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Message]]
Send: TypeAlias = Callable[[Message], Awaitable[None]]
ASGIApp: TypeAlias = Callable[[Scope, Receive, Send], Awaitable[None]]

"""The input schema every TOD pack shares: which conversation, in which language, with its
instruction in which format; each pack adds its own properties."""

from __future__ import annotations

from sopgym.types import JSON

from .formats import FORMATS
from .intents import LANGUAGES


def dialogue_input(**properties: JSON) -> JSON:
    """A TOD pack's input schema: the shared properties, then ``properties``; every one is
    required and no other is allowed."""
    merged: dict[str, JSON] = {
        "conversation_id": {"type": "string", "pattern": "^tod-[0-9]{4}$"},
        "language": {"enum": list(LANGUAGES)},
        "format": {"enum": list(FORMATS)},
        **properties,
    }
    return {
        "type": "object",
        "properties": merged,
        "required": list(merged),
        "additionalProperties": False,
    }

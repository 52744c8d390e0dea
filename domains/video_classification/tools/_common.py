"""Schema fragments and lookups shared by the video moderation tools."""

from __future__ import annotations

import hashlib
from typing import Any

from sopgym.core.tools import JSON, ToolContext, not_found

# Policy categories in the SOP's tie-break order (earlier wins a tie).
CATEGORIES = ["violence", "self_harm", "nudity", "hate_speech", "dangerous_acts", "misinformation"]
QUEUES = [*CATEGORIES, "general"]
QUEUE_CODES = {
    "violence": "VIO",
    "self_harm": "SHM",
    "nudity": "NUD",
    "hate_speech": "HAT",
    "dangerous_acts": "DNG",
    "misinformation": "MIS",
    "general": "GEN",
}
WARNINGS = ["graphic_content", "mature_content", "sensitive_topic", "disputed_claims"]
ACTIONS = ["keep", "age_restrict", "remove"]
LANGUAGES = ["en", "es", "pt", "de", "fr", "hi", "id"]  # spoken languages of the catalog

VIDEO_ID: JSON = {
    "type": "string",
    "pattern": "^UV[0-9]{8}$",
    "description": "Platform id of the uploaded video, e.g. UV20418837.",
}
UPLOADER_ID: JSON = {"type": "string", "pattern": "^U-[0-9]{6}$"}
ESCALATION_ID: JSON = {"type": "string", "pattern": "^ESC-UV[0-9]{8}-[A-Z]{3}$"}
FINGERPRINT: JSON = {"type": "string", "pattern": "^[0-9a-f]{16}$"}

STRING: JSON = {"type": "string"}
INTEGER: JSON = {"type": "integer"}
NUMBER: JSON = {"type": "number"}
BOOLEAN: JSON = {"type": "boolean"}


def nullable(schema: JSON) -> JSON:
    """The same schema, also admitting null (a fact the source system does not have)."""
    return {**schema, "type": [schema["type"], "null"]}


def arguments(
    properties: JSON, optional: tuple[str, ...] = (), example: JSON | None = None
) -> JSON:
    """A strict argument schema: every property required unless listed as optional."""
    schema: JSON = {
        "type": "object",
        "properties": properties,
        "required": [name for name in properties if name not in optional],
        "additionalProperties": False,
    }
    if example is not None:
        schema["examples"] = [example]
    return schema


def result(properties: JSON) -> JSON:
    """An output schema whose properties are all always present."""
    return {"type": "object", "properties": properties, "required": list(properties)}


def video(ctx: ToolContext, video_id: str) -> dict[str, Any]:
    row = ctx.tables.row("videos", "video_id", video_id)
    if row is None:
        raise not_found("video", "video_id", video_id)
    return row


def uploader(ctx: ToolContext, uploader_id: str) -> dict[str, Any]:
    row = ctx.tables.row("uploaders", "uploader_id", uploader_id)
    if row is None:
        raise not_found("uploader", "uploader_id", uploader_id)
    return row


def receipt(prefix: str, *parts: object) -> str:
    """A deterministic record id for an action, so repeated calls answer identically."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()
    return f"{prefix}-{digest[:10].upper()}"

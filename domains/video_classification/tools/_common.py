"""Schema fragments and lookups shared by the video moderation tools."""

from __future__ import annotations

import hashlib

from sopgym.core.tools import JSON

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


def receipt(prefix: str, *parts: object) -> str:
    """A deterministic record id for an action, so repeated calls answer identically."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()
    return f"{prefix}-{digest[:10].upper()}"

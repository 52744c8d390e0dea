"""Video moderation: triage a flagged user video, escalate it to a human moderator, apply the
moderator's findings as tags and a content warning, and keep, age-restrict or remove it."""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.domains.video_classification.generator import generate
from sopgym.domains.video_classification.policy import solve
from sopgym.domains.video_classification.tools import DISTRACTORS, TOOLS
from sopgym.domains.video_classification.tools._common import WARNINGS

DOMAIN = DomainPack(
    name="video_classification",
    title="Video classification and flagging for content moderation (media)",
    folder=Path(__file__).parent,
    paper_profiles=("sopbench",),  # SOP-Bench-style: its paper re-reads every episode
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={
        "videos": "video_id",
        "known_content": "fingerprint",
        "moderator_reviews": "video_id",
        "uploaders": "uploader_id",
    },
    input_schema={
        "type": "object",
        "properties": {
            "video_id": {"type": "string", "pattern": "^UV[0-9]{8}$"},
            "uploader_id": {"type": "string", "pattern": "^U-[0-9]{6}$"},
            "title": {"type": "string", "minLength": 1},
            "upload_date": {"type": "string", "format": "date"},
            "flag_source": {"enum": ["user_report", "proactive_scan", "trusted_flagger"]},
        },
        "required": ["video_id", "uploader_id", "title", "upload_date", "flag_source"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "review_route": {"enum": ["auto_clear", "known_content", "human_review"]},
            "escalation_priority": {"enum": ["none", "standard", "urgent"]},
            "moderation_tags": {
                "type": "string",
                "pattern": "^(none|[a-z_]+(,[a-z_]+)*)$",
                "description": "distinct categories, alphabetical, comma-separated; none if empty",
            },
            "content_warning": {"enum": ["none", *WARNINGS]},
            "moderation_decision": {"enum": ["keep", "age_restrict", "remove"]},
        },
        "required": [
            "review_route",
            "escalation_priority",
            "moderation_tags",
            "content_warning",
            "moderation_decision",
        ],
        "additionalProperties": False,
    },
    dependencies={
        "match_known_content": ["get_review_metadata"],
        "escalate_to_moderator": ["match_known_content"],
        "get_moderator_feedback": ["escalate_to_moderator"],
        "get_uploader_history": ["get_moderator_feedback"],
        "apply_moderation_tags": ["match_known_content"],
        "set_content_warning": ["get_moderator_feedback"],
        "record_moderation_decision": ["match_known_content"],
    },
)

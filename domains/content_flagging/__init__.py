"""Content flagging: bot, trust and severity scoring, then a decision-matrix moderation action."""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.domains.content_flagging.generator import generate
from sopgym.domains.content_flagging.policy import solve
from sopgym.domains.content_flagging.tools import DISTRACTORS, TOOLS
from sopgym.domains.content_flagging.tools._common import (
    CONTENT_ID,
    COUNT,
    DEVICE_FINGERPRINT,
    FLAG_ID,
    IP_ADDRESS,
    USER_ID,
)
from sopgym.domains.content_flagging.tools.compute_bot_probability import CAPTCHA_POINTS
from sopgym.domains.content_flagging.tools.compute_content_severity import CATEGORY_BASE

DOMAIN = DomainPack(
    name="content_flagging",
    title="Content flagging and moderation decision (trust & safety)",
    folder=Path(__file__).parent,
    paper_profiles=("sopbench",),  # SOP-Bench-style: its paper re-reads every episode
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={
        "users": "user_id",
        "devices": "device_fingerprint",
        "ip_ranges": "network_prefix",
        "contents": "content_id",
        "flags": "flag_id",
    },
    input_schema={
        "type": "object",
        "properties": {
            "flag_id": FLAG_ID,
            "content_id": CONTENT_ID,
            "user_id": USER_ID,
            "flag_source": {"enum": ["classifier", "user_report"]},
            "device_fingerprint": DEVICE_FINGERPRINT,
            "ip_address": IP_ADDRESS,
            "captcha_outcome": {"enum": list(CAPTCHA_POINTS)},
            "posts_last_hour": COUNT,
            "avg_action_interval_seconds": {"type": "number", "minimum": 0},
            "account_age_days": COUNT,
            "identity_verified": {"type": "boolean"},
            "prior_violations": COUNT,
            "successful_appeals": COUNT,
            "violation_category": {"enum": list(CATEGORY_BASE)},
            "classifier_confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "report_count": COUNT,
            "audience_reach": COUNT,
        },
        "required": [
            "flag_id",
            "content_id",
            "user_id",
            "flag_source",
            "device_fingerprint",
            "ip_address",
            "posts_last_hour",
            "avg_action_interval_seconds",
            "account_age_days",
            "identity_verified",
            "prior_violations",
            "successful_appeals",
            "violation_category",
            "report_count",
            "audience_reach",
        ],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "bot_risk": {"enum": ["human", "suspicious", "likely_bot"]},
            "trust_tier": {"enum": ["high", "medium", "low"]},
            "severity_tier": {"enum": ["minor", "moderate", "severe", "critical"]},
            "moderation_action": {"enum": ["allow", "warn", "remove", "ban"]},
            "account_outcome": {"enum": ["no_change", "strike_added", "suspended", "banned"]},
        },
        "required": [
            "bot_risk",
            "trust_tier",
            "severity_tier",
            "moderation_action",
            "account_outcome",
        ],
        "additionalProperties": False,
    },
    dependencies={
        "compute_user_trust_score": ["compute_bot_probability"],
        "compute_content_severity": ["compute_user_trust_score"],
        "record_moderation_action": [
            "compute_bot_probability",
            "compute_user_trust_score",
            "compute_content_severity",
        ],
    },
)

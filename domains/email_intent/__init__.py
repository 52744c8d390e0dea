"""Seller e-mail intent: classify a seller's e-mail, validate it against catalogue data, act."""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.domains.email_intent.generator import generate
from sopgym.domains.email_intent.policy import solve
from sopgym.domains.email_intent.tools import DISTRACTORS, TOOLS
from sopgym.domains.email_intent.tools._common import SELLER_ID

RESOLUTION_ACTIONS = [
    "apply_price_update",
    "apply_description_update",
    "reactivate_listing",
    "request_restock",
    "send_status_update",
    "reject_request",
    "escalate_to_specialist",
    "request_information",
    "forward_to_seller_support",
]

DOMAIN = DomainPack(
    name="email_intent",
    title="Seller e-mail intent and resolution (retail seller management)",
    folder=Path(__file__).parent,
    paper_profiles=("sopbench",),  # SOP-Bench-style: its paper re-reads every episode
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={
        "sellers": "seller_id",
        "listings": "product_id",
        "pricing": "product_id",
        "inventory": "product_id",
    },
    input_schema={
        "type": "object",
        "properties": {
            "email_id": {"type": "string", "pattern": "^EM-[0-9]{6}$"},
            "seller_id": SELLER_ID,
            "received_at": {"type": "string", "format": "date"},
            "subject": {"type": "string", "minLength": 1},
            "body": {"type": "string", "minLength": 1},
        },
        "required": ["email_id", "seller_id", "received_at", "subject", "body"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "email_intent": {
                "enum": ["pricing", "description_change", "listing_status", "general"]
            },
            "product_check": {
                "enum": [
                    "verified",
                    "not_found",
                    "seller_mismatch",
                    "missing_reference",
                    "multiple_references",
                    "not_required",
                ]
            },
            "resolution_action": {"enum": RESOLUTION_ACTIONS},
            "priority": {"enum": ["high", "normal"]},
        },
        "required": ["email_intent", "product_check", "resolution_action", "priority"],
        "additionalProperties": False,
    },
    dependencies={
        "get_product_listing": ["extract_email_features"],
        "check_pricing_rules": ["extract_email_features", "get_product_listing"],
        "get_inventory_status": ["extract_email_features", "get_product_listing"],
    },
)

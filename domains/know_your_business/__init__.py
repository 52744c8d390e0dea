"""Know your business: verify a company before onboarding; approve, escalate or wait."""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.domains.know_your_business.generator import REGULATED, UNREGULATED, generate
from sopgym.domains.know_your_business.policy import CHECKS, solve
from sopgym.domains.know_your_business.tools import DISTRACTORS, TOOLS
from sopgym.domains.know_your_business.tools._common import (
    APPLICATION_ID,
    COUNTRY_CODE,
    REGISTRATION_NUMBER,
    TAX_ID,
)

_TEXT = {"type": "string", "minLength": 1}
_AFTER_REGISTRY = [
    "verify_tax_identity",
    "check_business_licenses",
    "get_ownership_structure",
]

DOMAIN = DomainPack(
    name="know_your_business",
    title="Know your business: business entity verification (finance)",
    folder=Path(__file__).parent,
    paper_profiles=("sopbench",),  # SOP-Bench-style: its paper re-reads every episode
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={
        "applications": "application_id",
        "business_registry": "registration_number",
        "tax_records": "tax_id",
        "licenses": "license_number",
        "ownership": "holding_id",
        "sanctions_list": "entry_id",
        "jurisdictions": "country_code",
    },
    input_schema={
        "type": "object",
        "properties": {
            "application_id": APPLICATION_ID,
            "business_name": _TEXT,
            "business_type": {"enum": REGULATED + UNREGULATED},
            "registration_number": REGISTRATION_NUMBER,
            "jurisdiction": COUNTRY_CODE,
            "tax_id": TAX_ID,
            "registered_address": _TEXT,
            "application_date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        },
        "required": ["application_id", "business_name", "business_type", "application_date"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "registration_check": {
                "enum": ["verified", "details_mismatch", "inactive", "not_found", "not_checked"]
            },
            "tax_check": {"enum": ["verified", "name_mismatch", "invalid", "not_checked"]},
            "license_check": {
                "enum": [
                    "verified",
                    "not_required",
                    "missing",
                    "expired_or_suspended",
                    "not_checked",
                ]
            },
            "ownership_check": {"enum": ["transparent", "complex", "not_checked"]},
            "sanctions_check": {
                "enum": ["clear", "potential_match", "confirmed_match", "not_checked"]
            },
            "jurisdiction_risk": {"enum": ["low", "medium", "high", "not_checked"]},
            "kyb_decision": {"enum": ["approve", "escalate", "awaiting_information"]},
            "case_reference": {"type": "string", "pattern": "^CASE-[0-9A-F]{10}$"},
        },
        "required": [*CHECKS, "kyb_decision", "case_reference"],
        "additionalProperties": False,
    },
    dependencies={
        **{name: ["lookup_business_registry"] for name in _AFTER_REGISTRY},
        "screen_sanctions": ["lookup_business_registry", "get_ownership_structure"],
        "get_jurisdiction_risk": ["lookup_business_registry", "get_ownership_structure"],
        "record_kyb_decision": [
            "lookup_business_registry",
            *_AFTER_REGISTRY,
            "screen_sanctions",
            "get_jurisdiction_risk",
            "request_missing_information",
        ],
    },
)

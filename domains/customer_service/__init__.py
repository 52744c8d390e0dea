"""Customer service: offline diagnosis and resolution of a reported connectivity issue."""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.domains.customer_service.generator import generate
from sopgym.domains.customer_service.policy import solve
from sopgym.domains.customer_service.tools import DISTRACTORS, TOOLS
from sopgym.domains.customer_service.tools._common import (
    ACCOUNT_ID,
    ISSUE_CATEGORIES,
    SESSION_TOKEN,
    TIMESTAMP,
)


def _enum(*values: str) -> dict:
    return {"enum": list(values)}


DOMAIN = DomainPack(
    name="customer_service",
    title="Offline diagnosis and resolution of service issues (telecom support)",
    folder=Path(__file__).parent,
    paper_profiles=("sopbench",),  # SOP-Bench-style: its paper re-reads every episode
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={
        "sessions": "session_token",
        "accounts": "account_id",
        "billing": "billing_account_id",
        "nodes": "serving_node",
        "outages": "outage_id",
        "devices": "account_id",
        "line_tests": "device_id",
        "firmware": "model",
    },
    input_schema={
        "type": "object",
        "properties": {
            "account_id": ACCOUNT_ID,
            "session_token": SESSION_TOKEN,
            "reported_at": TIMESTAMP,
            "issue_description": {"type": "string", "minLength": 1},
            "contact_channel": _enum("web_form", "email", "chat", "app"),
        },
        "required": [
            "account_id",
            "session_token",
            "reported_at",
            "issue_description",
            "contact_channel",
        ],
    },
    output_schema={
        "type": "object",
        "properties": {
            "auth_status": _enum("verified", "failed"),
            "account_eligibility": _enum(
                "eligible", "restricted", "suspended", "closed", "not_checked"
            ),
            "issue_category": {"enum": ISSUE_CATEGORIES},
            "outage_status": _enum("outage_linked", "no_outage", "not_checked"),
            "diagnostic_result": _enum("pass", "degraded", "fail", "device_unreachable", "not_run"),
            "primary_fault": _enum(
                "none", "packet_loss", "latency", "jitter", "bandwidth", "not_applicable"
            ),
            "troubleshooting_action": _enum(
                "none", "firmware_upgrade", "line_reprofile", "remote_reboot", "speed_profile_sync"
            ),
            "escalation_level": _enum("none", "billing", "tier2", "field_technician"),
            "resolution_code": _enum(
                "authentication_failed",
                "account_action_required",
                "outage_pending",
                "no_fault_found",
                "resolved_remotely",
                "escalated",
            ),
            "ticket_priority": _enum("P1", "P2", "P3", "P4", "none"),
            "priority_score": {"type": "integer", "minimum": 0, "maximum": 8},
            "bandwidth_ratio": {"type": ["number", "null"], "x-tolerance": 0.01},
        },
        "required": [
            "auth_status",
            "account_eligibility",
            "issue_category",
            "outage_status",
            "diagnostic_result",
            "primary_fault",
            "troubleshooting_action",
            "escalation_level",
            "resolution_code",
            "ticket_priority",
            "priority_score",
            "bandwidth_ratio",
        ],
        "additionalProperties": False,
    },
    dependencies={
        "get_account": ["validate_session"],
        "check_billing_standing": ["get_account"],
        "analyze_issue_text": ["validate_session", "get_account"],
        "check_service_outages": ["get_account"],
        "get_device_status": ["check_service_outages"],
        "run_line_test": ["get_device_status"],
        "get_firmware_catalog": ["get_device_status", "run_line_test"],
        "execute_remote_action": ["run_line_test", "get_firmware_catalog"],
        "create_support_ticket": ["validate_session", "get_account"],
    },
)

"""Callable tools that look useful for a support case but that the SOP never asks for.

They overlap with SOP tools (a quick ping instead of the line test, a legacy region map
instead of the node's outage list) or are out of scope for an offline workflow.
"""

import hashlib

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.customer_service.tools._common import ACCOUNT_ID, DEVICE_ID


@tool(
    name="ping_device",
    description="Send a single ICMP echo to a device and report whether it answered.",
    input_schema=arguments_schema(
        {"device_id": DEVICE_ID}, examples=[{"device_id": "DV-0000000000"}]
    ),
)
def ping_device(args: JSON, ctx: ToolContext) -> JSON:
    digest = int(hashlib.sha256(args["device_id"].encode()).hexdigest()[:4], 16)
    return {"answered": digest % 5 != 0, "round_trip_ms": 12 + digest % 40, "samples": 1}


@tool(
    name="lookup_region_outage_map",
    description="Legacy region-wide outage map used by the public status page (coarse).",
    input_schema=arguments_schema(
        {"region": {"type": "string", "pattern": "^[A-Z]{2}$"}}, examples=[{"region": "NE"}]
    ),
)
def lookup_region_outage_map(args: JSON, ctx: ToolContext) -> JSON:
    return {
        "region": args["region"],
        "status_page_level": "normal",
        "note": "status-page summary only; not node specific and refreshed hourly",
    }


@tool(
    name="estimate_plan_speed",
    description="Advertised typical speeds for a plan name from the marketing catalog.",
    input_schema=arguments_schema(
        {"plan_name": {"type": "string", "pattern": "^[A-Za-z]+ [0-9]+$"}},
        examples=[{"plan_name": "Fiber 500"}],
    ),
)
def estimate_plan_speed(args: JSON, ctx: ToolContext) -> JSON:
    digits = "".join(ch for ch in args["plan_name"] if ch.isdigit())
    advertised = int(digits) if digits else 100
    return {"advertised_mbps": advertised, "typical_evening_mbps": round(advertised * 0.8)}


@tool(
    name="send_customer_notification",
    description="Send an SMS or e-mail update to the account holder.",
    input_schema=arguments_schema(
        {
            "account_id": ACCOUNT_ID,
            "channel": {"type": "string", "enum": ["sms", "email"]},
        },
        examples=[{"account_id": "AC-3100000", "channel": "email"}],
    ),
)
def send_customer_notification(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "accounts", "account_id", args["account_id"])
    return {"queued": True, "channel": args["channel"]}


DISTRACTORS = [
    ping_device,
    lookup_region_outage_map,
    estimate_plan_speed,
    send_customer_notification,
]

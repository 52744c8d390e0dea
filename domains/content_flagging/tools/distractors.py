"""Callable tools that look relevant to moderation but that the flagging SOP never needs."""

import hashlib

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.content_flagging.tools._common import CONTENT_ID, COUNT, IP_ADDRESS, USER_ID


@tool(
    name="lookup_ip_geolocation",
    description="Resolve an IPv4 address to a country and network class (geo-IP database).",
    input_schema=arguments_schema(
        {"ip_address": IP_ADDRESS}, examples=[{"ip_address": "81.2.69.160"}]
    ),
)
def lookup_ip_geolocation(args: JSON, ctx: ToolContext) -> JSON:
    prefix = ".".join(args["ip_address"].split(".")[:2])
    network = ctx.tables.row("ip_ranges", "network_prefix", prefix)
    if network is None:
        return {"country": "unknown", "network_class": "unknown"}
    return {"country": network["country"], "network_class": network["network_type"]}


@tool(
    name="get_user_profile",
    description="Public profile of an account: handle and sign-up date.",
    input_schema=arguments_schema({"user_id": USER_ID}, examples=[{"user_id": "U1000000"}]),
)
def get_user_profile(args: JSON, ctx: ToolContext) -> JSON:
    user = require_row(ctx, "users", "user_id", args["user_id"])
    return {"handle": user["handle"], "joined_on": user["joined_on"]}


@tool(
    name="compute_spam_likelihood_legacy",
    description=(
        "Legacy spam heuristic (v1) from the report count alone; retained for old dashboards."
    ),
    input_schema=arguments_schema(
        {"content_id": CONTENT_ID, "report_count": COUNT},
        examples=[{"content_id": "C20000000", "report_count": 4}],
    ),
)
def compute_spam_likelihood_legacy(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "contents", "content_id", args["content_id"])
    return {"spam_likelihood_v1": round(min(args["report_count"], 20) / 20, 2)}


@tool(
    name="send_user_notification",
    description="Queue an e-mail notification to an account holder using a message template.",
    input_schema=arguments_schema(
        {
            "user_id": USER_ID,
            "template": {
                "type": "string",
                "enum": ["community_guidelines", "content_notice", "account_notice"],
            },
        },
        examples=[{"user_id": "U1000000", "template": "community_guidelines"}],
    ),
)
def send_user_notification(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "users", "user_id", args["user_id"])
    digest = hashlib.sha256(f"{args['user_id']}|{args['template']}".encode()).hexdigest()
    return {"queued": True, "message_id": f"MSG-{digest[:8].upper()}"}


DISTRACTORS = [
    lookup_ip_geolocation,
    get_user_profile,
    compute_spam_likelihood_legacy,
    send_user_notification,
]

"""Open the support ticket that records the diagnosis (step 10); routes it to a queue."""

import hashlib

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.customer_service.tools._common import ACCOUNT_ID, ISSUE_CATEGORIES

RESOLUTIONS = [
    "account_action_required",
    "outage_pending",
    "no_fault_found",
    "resolved_remotely",
    "escalated",
]
ESCALATIONS = ["none", "billing", "tier2", "field_technician"]
PRIORITIES = ["P1", "P2", "P3", "P4"]
_QUEUES = {
    "none": "self-service-closed",
    "billing": "billing-desk",
    "tier2": "tier2-network",
    "field_technician": "field-dispatch",
}
_RESPONSE_HOURS = {"P1": 4, "P2": 8, "P3": 24, "P4": 72}


@tool(
    name="create_support_ticket",
    description=(
        "Open a support ticket for an authenticated account recording the issue category, the "
        "resolution, the escalation target and the ticket priority. Returns the ticket id, the "
        "queue it was routed to and the response target in hours."
    ),
    input_schema=arguments_schema(
        {
            "account_id": ACCOUNT_ID,
            "issue_category": {"type": "string", "enum": ISSUE_CATEGORIES},
            "resolution_code": {"type": "string", "enum": RESOLUTIONS},
            "escalation_level": {"type": "string", "enum": ESCALATIONS},
            "ticket_priority": {"type": "string", "enum": PRIORITIES},
        }
    ),
    output_schema=result_schema(
        {
            "ticket_id": {"type": "string"},
            "queue": {"type": "string"},
            "response_target_hours": {"type": "integer"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "accounts", "account_id", args["account_id"])
    key = "|".join(str(args[k]) for k in sorted(args))
    return {
        "ticket_id": f"TCK-{hashlib.sha256(key.encode()).hexdigest()[:10].upper()}",
        "queue": _QUEUES[args["escalation_level"]],
        "response_target_hours": _RESPONSE_HOURS[args["ticket_priority"]],
    }

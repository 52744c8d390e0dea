"""Last step of the SOP: record the outcome and route the case to the matching queue."""

import hashlib

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.know_your_business.tools._common import APPLICATION_ID, OUTCOMES

QUEUES = {
    "approve": "onboarding",
    "escalate": "compliance_review",
    "awaiting_information": "pending_applicant",
}


@tool(
    name="record_kyb_decision",
    description=(
        "Record the outcome of a business verification (approve, escalate or "
        "awaiting_information) and route the application. Returns the case id and the queue."
    ),
    input_schema=arguments_schema(
        {
            "application_id": APPLICATION_ID,
            "outcome": {"type": "string", "enum": OUTCOMES},
        }
    ),
    output_schema=result_schema(
        {
            "case_id": {"type": "string", "pattern": "^CASE-[0-9A-F]{10}$"},
            "queue": {"enum": list(QUEUES.values())},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    application_id, outcome = args["application_id"], args["outcome"]
    require_row(ctx, "applications", "application_id", application_id)
    digest = hashlib.sha256(f"{application_id}|{outcome}".encode()).hexdigest()
    return {"case_id": f"CASE-{digest[:10].upper()}", "queue": QUEUES[outcome]}

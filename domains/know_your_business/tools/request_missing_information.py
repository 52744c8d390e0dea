"""Ask the applicant for what the SOP cannot verify without them; returns the request."""

import hashlib
from datetime import date, timedelta

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.know_your_business.tools._common import APPLICATION_ID

MISSING_ITEMS = ["registration_number", "jurisdiction", "tax_id", "license"]
RESPONSE_DAYS = 14


@tool(
    name="request_missing_information",
    description=(
        "Send the applicant a request for missing information (registration number, "
        "jurisdiction, tax id or a required licence). Returns the request id and the date by "
        "which the applicant must respond."
    ),
    input_schema=arguments_schema(
        {
            "application_id": APPLICATION_ID,
            "missing_items": {
                "type": "array",
                "items": {"type": "string", "enum": MISSING_ITEMS},
                "minItems": 1,
                "uniqueItems": True,
            },
        }
    ),
    output_schema=result_schema(
        {
            "request_id": {"type": "string"},
            "items_requested": {"type": "array", "items": {"type": "string"}},
            "respond_by": {"type": "string", "format": "date"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    application = require_row(ctx, "applications", "application_id", args["application_id"])
    items = sorted(args["missing_items"], key=MISSING_ITEMS.index)
    key = f"{args['application_id']}|{','.join(items)}"
    due = date.fromisoformat(application["application_date"]) + timedelta(days=RESPONSE_DAYS)
    return {
        "request_id": f"RFI-{hashlib.sha256(key.encode()).hexdigest()[:8].upper()}",
        "items_requested": items,
        "respond_by": due.isoformat(),
    }

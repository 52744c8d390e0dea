"""Uploader standing: active strikes decide whether an age restriction becomes a removal."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.video_classification.tools._common import BOOLEAN, INTEGER, UPLOADER_ID


@tool(
    name="get_uploader_history",
    description=(
        "Fetch an uploader's enforcement history: account age, active community-guideline "
        "strikes (unexpired), total prior removals and whether the account is verified."
    ),
    input_schema=arguments_schema({"uploader_id": UPLOADER_ID}),
    output_schema=result_schema(
        {
            "account_age_days": INTEGER,
            "active_strikes": INTEGER,
            "prior_removals": INTEGER,
            "verified": BOOLEAN,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "uploaders", "uploader_id", args["uploader_id"])
    return {
        "account_age_days": row["account_age_days"],
        "active_strikes": row["active_strikes"],
        "prior_removals": row["prior_removals"],
        "verified": row["verified"],
    }

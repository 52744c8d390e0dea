"""Account profile: status, plan, serving node and the billing account to check (step 2)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.customer_service.tools._common import ACCOUNT_ID

_FIELDS = (
    "account_id",
    "account_state",
    "customer_tier",
    "service_type",
    "plan_name",
    "plan_download_mbps",
    "serving_node",
    "billing_account_id",
    "state_reason",
)


@tool(
    name="get_account",
    description=(
        "Retrieve a subscriber account: its state (active, suspended, closed), customer tier, "
        "service type, subscribed plan and download speed, the serving network node and the "
        "linked billing account."
    ),
    input_schema=arguments_schema({"account_id": ACCOUNT_ID}),
    output_schema=result_schema(
        {
            "account_id": {"type": "string"},
            "account_state": {"enum": ["active", "suspended", "closed"]},
            "customer_tier": {"enum": ["residential", "business"]},
            "service_type": {"enum": ["fiber", "cable", "dsl"]},
            "plan_name": {"type": "string"},
            "plan_download_mbps": {"type": "integer"},
            "serving_node": {"type": "string"},
            "billing_account_id": {"type": "string"},
            "state_reason": {"type": ["string", "null"]},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    account = require_row(ctx, "accounts", "account_id", args["account_id"])
    return {key: account[key] for key in _FIELDS}

"""Billing standing of an active account: arrears and any payment arrangement (step 2)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.customer_service.tools._common import BILLING_ACCOUNT_ID

_FIELDS = (
    "billing_account_id",
    "balance_due",
    "days_past_due",
    "payment_arrangement",
    "autopay_enabled",
    "last_payment_date",
)


@tool(
    name="check_billing_standing",
    description=(
        "Retrieve a billing account's standing: outstanding balance, how many days the oldest "
        "unpaid invoice is past due, whether an agreed payment arrangement is in place, autopay "
        "and the date of the last payment."
    ),
    input_schema=arguments_schema({"billing_account_id": BILLING_ACCOUNT_ID}),
    output_schema=result_schema(
        {
            "billing_account_id": {"type": "string"},
            "balance_due": {"type": "number"},
            "days_past_due": {"type": "integer", "minimum": 0},
            "payment_arrangement": {"type": "boolean"},
            "autopay_enabled": {"type": "boolean"},
            "last_payment_date": {"type": "string"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    billing = require_row(
        ctx, "billing", "billing_account_id", args["billing_account_id"], "billing account"
    )
    return {key: billing[key] for key in _FIELDS}

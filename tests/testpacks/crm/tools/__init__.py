"""CRM tools in SOP order, and a distractor."""

from sopgym.core.tools import ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.types import JSON

ACCOUNT_ID = {"type": "string", "pattern": "^ACC-[0-9]{4}$"}


@tool(
    name="get_account",
    description="The relationship record of a customer account: segment and tenure.",
    input_schema=arguments_schema({"account_id": ACCOUNT_ID}),
    output_schema=result_schema({
        "account_id": {"type": "string"},
        "segment": {"enum": ["retail", "business", "wealth"]},
        "tenure_years": {"type": "integer"},
    }),
)
def get_account(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "accounts", "account_id", args["account_id"], "account")
    return {k: row[k] for k in ("account_id", "segment", "tenure_years")}


@tool(
    name="count_products",
    description="How many products (cards, loans, deposits) the customer holds with us.",
    input_schema=arguments_schema({"account_id": ACCOUNT_ID}),
    output_schema=result_schema({"product_count": {"type": "integer"}}),
)
def count_products(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "accounts", "account_id", args["account_id"], "account")
    return {"product_count": row["products"]}


@tool(
    name="get_branch_hours",
    description="Opening hours of a branch.",
    input_schema=arguments_schema(
        {"branch_id": {"type": "string", "pattern": "^BR-[0-9]{2}$"}},
        examples=[{"branch_id": "BR-01"}],
    ),
    output_schema=result_schema({"opens": {"type": "string"}, "closes": {"type": "string"}}),
)
def get_branch_hours(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "branches", "branch_id", args["branch_id"], "branch")
    return {"opens": row["opens"], "closes": row["closes"]}


TOOLS = [get_account, count_products]
DISTRACTORS = [get_branch_hours]

__all__ = ["ACCOUNT_ID", "DISTRACTORS", "TOOLS"]

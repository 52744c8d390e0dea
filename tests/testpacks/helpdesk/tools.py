"""The helpdesk's two tools: look an order up, refund it."""

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool

ORDER_ID = {"type": "string", "pattern": "^O-[0-9]{5}$"}


@tool(
    name="get_order",
    description="Look up an order: the email address it was placed with, the item, the amount "
    "paid and how many days ago it was delivered.",
    input_schema=arguments_schema({"order_id": ORDER_ID}),
    output_schema=result_schema(
        {
            "order_id": {"type": "string"},
            "email": {"type": "string"},
            "item": {"type": "string"},
            "amount": {"type": "number"},
            "delivered_days_ago": {"type": "integer"},
        }
    ),
)
def get_order(args: JSON, ctx: ToolContext) -> JSON:
    order = require_row(ctx, "orders", "order_id", args["order_id"])
    return {k: order[k] for k in ("order_id", "email", "item", "amount", "delivered_days_ago")}


@tool(
    name="issue_refund",
    description="Refund an order in full. The amount must be the amount paid for the order.",
    input_schema=arguments_schema({"order_id": ORDER_ID, "amount": {"type": "number"}}),
    output_schema=result_schema({"refund_id": {"type": "string"}, "amount": {"type": "number"}}),
)
def issue_refund(args: JSON, ctx: ToolContext) -> JSON:
    order = require_row(ctx, "orders", "order_id", args["order_id"])
    if args["amount"] != order["amount"]:
        raise ToolError("invalid_value", "amount differs from the amount paid", "amount")
    return {"refund_id": "R" + order["order_id"][1:], "amount": order["amount"]}


TOOLS = [get_order, issue_refund]

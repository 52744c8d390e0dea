"""Inventory-system lookup: the stock behind a listing (fulfillable, inbound, reserved)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.email_intent.tools._common import PRODUCT_ID, SELLER_ID, owned_record

STOCK_FIELDS = ("fulfillable_units", "inbound_units", "reserved_units", "last_restock_date")


@tool(
    name="get_inventory_status",
    description=(
        "Step 3b of seller e-mail handling (listing-status requests). Return the inventory "
        "behind a product: units ready to ship (fulfillable), units in transit to the "
        "warehouse (inbound), units reserved for open orders and the last restock date. "
        "Only for the listing's own seller."
    ),
    input_schema=arguments_schema({"seller_id": SELLER_ID, "product_id": PRODUCT_ID}),
    output_schema=result_schema(
        {
            "fulfillable_units": {"type": "integer", "minimum": 0},
            "inbound_units": {"type": "integer", "minimum": 0},
            "reserved_units": {"type": "integer", "minimum": 0},
            "last_restock_date": {"type": "string"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    stock = owned_record(ctx, "inventory", args["seller_id"], args["product_id"])
    return {k: stock[k] for k in STOCK_FIELDS}
